"""IFEval answers that hide a forbidden word or a capped count by hyphenating it across
a line break: one word to a reader, two to lm-eval's checkers. Scored by the real
checkers through ``check_ifeval``, beside a plain answer that follows the instruction
(1)."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.ifeval import check_ifeval
from tests.hostile_tally import record
from tests.test_ifeval_other_scripts import FEW_SEA, LOVE

HOSTILE = [
    # (instruction, hostile answer, plain answer that follows it)
    (LOVE, "I lo-\nve the sea.", "I like the sea."),
    (LOVE, "I lo-\r\n   ve the sea.", "I like the sea."),  # a CRLF and an indent
    (LOVE, "I lo\u2010\nve the sea.", "I like the sea."),  # the hyphen U+2010
    (LOVE, "I lo\u00ad\nve the sea.", "I like the sea."),  # a soft hyphen, drawn at a break
    (FEW_SEA, "The sea is big. The se-\na is deep.", "The sea is big."),
]


@pytest.mark.parametrize(("gt", "hostile", "plain"), HOSTILE)
def test_a_word_hyphenated_across_a_line_is_one_word(
    gt: dict[str, object], hostile: str, plain: str
) -> None:
    """A reader sees "love" (``lo-`` at a line's end, ``ve`` on the next line, with a
    plain hyphen, the hyphen ``‐`` or a soft hyphen, which is drawn where it ends a line)
    and "sea" twice for "sea less than 2 times". Before, each scored 1 (``lo`` and ``ve``
    two words). Expected 0 each; the plain answer passes."""
    score = check_ifeval(gt, hostile)[0]
    record("ifeval: words hyphenated across a line", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(gt, plain)[0] == 1.0, plain


def test_hyphens_that_part_words_keep_their_verdicts() -> None:
    """A compound broken at a line (``well-\\nknown``) holds no "well" to the joined
    reading but does as written, so "do not use well" still fails it; a hyphen before a
    blank line or a digit joins nothing (``lo-\\n\\nve``, two paragraphs, is not
    "love"); a soft hyphen inside a line is drawn as nothing (``lo\\u00adve`` is
    "love", as before)."""
    well = {
        "instruction_id_list": ["keywords:forbidden_words"],
        "kwargs": [{"forbidden_words": ["well"]}],
    }
    assert check_ifeval(well, "A well-\nknown song.")[0] == 0.0
    assert check_ifeval(LOVE, "I lo-\n\nve the sea.")[0] == 1.0
    assert check_ifeval(LOVE, "I lo-\n7 the sea.")[0] == 1.0
    assert check_ifeval(LOVE, "I lo\u00adve the sea.")[0] == 0.0
