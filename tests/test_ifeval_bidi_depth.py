"""IFEval answers that nest bidirectional controls past Unicode's depth limit: an
override opened above level 125, or after an opener that was, is ignored by a renderer
(the bidirectional algorithm's rules X1-X8), so it draws the text after it as written;
a reader that counted 125 openers instead of levels still reversed it. Scored by
lm-eval's real checkers through ``check_ifeval``, beside a plain answer that follows the
instruction (1)."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.ifeval import check_ifeval
from tests.hostile_tally import record
from tests.test_ifeval_other_scripts import LOVE, instruction

LRO, RLO, PDF, LRI, PDI = "\u202d", "\u202e", "\u202c", "\u2066", "\u2069"
END = instruction("startend:end_checker", end_phrase="The end.")

HOSTILE = [
    # (instruction, hostile answer, plain answer that follows it)
    (LOVE, f"I {LRO * 63}{RLO}love{PDF * 64} the sea.", "I like the sea."),
    (LOVE, f"I {LRI * 63}{RLO}love{PDF}{PDI * 63} the sea.", "I like the sea."),
    (END, f"Hi. {LRO * 63}{RLO}.dne ehT", "Hi. The end."),
]


@pytest.mark.parametrize(("gt", "hostile", "plain"), HOSTILE)
def test_an_override_past_the_depth_limit_is_read_as_written(
    gt: dict[str, object], hostile: str, plain: str
) -> None:
    """63 left-to-right overrides (or isolates) reach level 126, past the limit: the 63rd
    and the right-to-left override after it are ignored, and ``love`` and ``.dne ehT``
    are drawn as written. A reader sees "love" (for "do not use the word love") and
    ".dne ehT" at the end (for "end with The end."); the old reader reversed them into
    "evol" and "The end." and each scored 1. Expected 0; the plain answer passes."""
    score = check_ifeval(gt, hostile)[0]
    record("ifeval: separators and overrides", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(gt, plain)[0] == 1.0, plain


def test_an_override_within_the_depth_limit_still_reverses() -> None:
    """62 left-to-right overrides reach level 124; the right-to-left override after them
    opens level 125 and draws ``evol`` as "love" (0 for "do not use the word love"),
    and ``love`` as "evol" (1)."""
    assert check_ifeval(LOVE, f"I {LRO * 62}{RLO}evol{PDF * 63} the sea.")[0] == 0.0
    assert check_ifeval(LOVE, f"I {LRO * 62}{RLO}love{PDF * 63} the sea.")[0] == 1.0
