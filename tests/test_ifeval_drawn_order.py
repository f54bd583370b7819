"""IFEval answers whose characters are drawn otherwise than they are written: the
information separators ``\\x1c``-``\\x1f`` (drawn as nothing, though Python's ``isspace``
counts them as space, so they parted a word for the checkers) and bidirectional
overrides (``\\u202e`` draws what follows right to left, so the checkers read ``evol``
where a reader sees "love"). Each is scored by lm-eval's real checkers through
``check_ifeval``, beside a plain answer that follows the instruction (1)."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.ifeval import check_ifeval
from recipe_arena.rewards.text import is_blank, shown_text
from tests.hostile_tally import record

LOVE = {"forbidden_words": ["love"]}
ABC = "abcdefghijklmnopqrstuvwxyz"

HOSTILE = [
    # (instruction, kwargs, hostile answer, plain answer that follows the instruction)
    ("keywords:forbidden_words", LOVE, "I lo\x1fve the sea.", "I like the sea."),
    ("keywords:forbidden_words", LOVE, "I lo\x1cve the sea.", "I like the sea."),
    ("keywords:forbidden_words", LOVE, "I lo\x1eve the sea.", "I like the sea."),
    (
        "length_constraints:number_words",
        {"num_words": 20, "relation": "at least"},
        "\x1f".join(ABC),  # drawn as one word of 26 letters, counted as 26 words
        " ".join(ABC[:20]),
    ),
    ("keywords:forbidden_words", LOVE, "I \u202eevol\u202c the sea.", "I like the sea."),
    ("keywords:forbidden_words", LOVE, "I \u202eaes eht evol\u202c", "I like the sea."),
    ("keywords:forbidden_words", LOVE, "I \u2067\u202eevol\u2069 it.", "I like it."),
    ("keywords:existence", {"keywords": ["happy"]}, "I am \u202ehappy\u202c.", "I am happy."),
    (
        "startend:end_checker",
        {"end_phrase": "The end."},
        "The sea is big. \u202eThe end.",  # drawn ".dne ehT"
        "The sea is big. The end.",
    ),
]


@pytest.mark.parametrize(("iid", "kwargs", "hostile", "plain"), HOSTILE)
def test_what_is_drawn_is_what_is_checked(
    iid: str, kwargs: dict[str, object], hostile: str, plain: str
) -> None:
    """The hostile answer fails the instruction it seems to follow (before, each scored
    1: ``lo\\x1fve`` was two words to ``\\b``, the override's span was read as written);
    the plain answer still passes."""
    gt = {"instruction_id_list": [iid], "kwargs": [kwargs]}
    score = check_ifeval(gt, hostile)[0]
    record("ifeval: separators and overrides", 1, int(score == 0.0))
    assert score == 0.0, (iid, hostile)
    assert check_ifeval(gt, plain)[0] == 1.0, (iid, plain)


def test_an_override_that_draws_the_instruction_followed_passes() -> None:
    """Written right to left under an override, what is drawn is read: ``\\u202e.dne
    ehT`` is drawn "The end.", ``\\u202e<<aes>>`` is drawn ``<<sea>>`` (a title; the
    brackets drawn mirrored; ``\u202e>>aes<<`` is drawn ``>>sea<<``, no title), and "evol" written under a left-to-right override inside a
    right-to-left one is drawn "evol", no forbidden word."""
    end = {"instruction_id_list": ["startend:end_checker"], "kwargs": [{"end_phrase": "The end."}]}
    assert check_ifeval(end, "The sea is big. \u202e.dne ehT")[0] == 1.0
    title = {"instruction_id_list": ["detectable_format:title"], "kwargs": [{}]}
    assert check_ifeval(title, "\u202e<<aes>>\u202c The sea is big.")[0] == 1.0
    assert check_ifeval(title, "\u202e>>aes<<\u202c The sea is big.")[0] == 0.0  # >>sea<<
    love = {"instruction_id_list": ["keywords:forbidden_words"], "kwargs": [LOVE]}
    assert check_ifeval(love, "I \u202e\u202devol\u202c\u202c it.")[0] == 1.0
    assert shown_text("a\u202ebc\ndef") == "acb\ndef"  # an override ends with its paragraph


def test_separators_alone_are_empty_and_white_space_still_parts_words() -> None:
    """An answer of information separators shows nothing (empty, as before); tab, line
    feed and the next-line character are white space and still part words."""
    assert is_blank("\x1c\x1d\x1e\x1f")
    assert shown_text("a\tb\nc\x85d\x1fe") == "a\tb\nc\x85de"
    words = {"num_words": 4, "relation": "at least"}
    gt = {"instruction_id_list": ["length_constraints:number_words"], "kwargs": [words]}
    assert check_ifeval(gt, "a\tb\nc\x85d")[0] == 1.0
