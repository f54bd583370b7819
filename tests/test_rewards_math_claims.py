"""Math answers that say the value is *not* the gold, or only bound it, and digits a
reader sees otherwise than the parser: ``\\boxed{\\neq 9}``, ``\\boxed{x \\not= 9}``,
``\\boxed{\\le 9}``, a 9 struck out with a combining mark, a zero-width space between two
digits. Each scored 1 for the number the parser picked out of it. Scored through the
real ``check_math`` (math-verify, SymPy) and, for the micro world's rows, through the
scorer's worker pool as training scores them; the expected values are worked out in the
comments."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.math_answer import check_math
from tests.hostile_tally import record
from tests.test_rewards_math_copies import boxed_gold_forms_fail

NEGATED = [
    # each says "not 9" (or "not equal to 9"); the parser read the 9 beside the relation
    r"\boxed{\neq 9}",
    r"\boxed{\ne 9}",
    r"\boxed{\not= 9}",
    r"\boxed{x \not= 9}",  # \not= is a relation the parser does not know
    r"\boxed{\not 9}",
    r"\boxed{\neg 9}",
    r"\boxed{\not\equiv 9}",
    r"\boxed{x \nsim 9}",
    r"\boxed{\notin 9}",
    "\\boxed{\u2260 9}",  # the sign itself
    "\\boxed{x \u2209 9}",
    "\\boxed{x =\u0338 9}",  # = with the combining "not" overlay: \u2260 decomposed
]
BOUNDED = [
    # each says only that the value lies above or below 9
    r"\boxed{\le 9}",
    r"\boxed{\geq 9}",
    r"\boxed{\lt 9}",
    r"\boxed{\leqslant 9}",
    r"\boxed{x \ll 9}",  # \ll: a relation the parser does not know
    r"\boxed{x \gg 9}",
    r"\boxed{x \nless 9}",
    r"\boxed{9 \lesssim x}",
    "\\boxed{\u2264 9}",
    "\\boxed{x\u226a9}",
]


@pytest.mark.parametrize("response", NEGATED + BOUNDED)
def test_an_answer_that_negates_or_bounds_the_gold_scores_0(response: str) -> None:
    """Against gold 9 each scored 1: the parser, given a relation with one side missing
    or one it does not know, keeps the number beside it. A reference without such a
    relation is matched by no answer holding one now."""
    score, reason = check_math("9", response)
    record("math verifier: answers negating or bounding the gold", 1, int(score == 0.0))
    assert score == 0.0 and "the reference does not" in reason, reason


@pytest.mark.parametrize(
    ("gold", "answer"),
    [
        (r"x \neq 3", r"\boxed{x \ne 3}"),  # the reference is itself a negation
        (r"x \le 3", r"\boxed{x \leq 3}"),
        (r"x \ge 3", r"\boxed{x \geq 3}"),
        ("x<3", r"\boxed{x \lt 3}"),  # the reference's relation in ASCII
        ("x != 3", r"\boxed{x \ne 3}"),
        ("9", r"\boxed{x = 9}"),
        ("9", r"\boxed{\approx 9}"),
        ("9", r"\boxed{\left< 9 \right>}"),  # angle brackets are no relation
        ("9", r"\boxed{9 \text{ (no other digit)}}"),  # \text{no} is not \not
    ],
)
def test_relations_the_reference_holds_still_score_1(gold: str, answer: str) -> None:
    """A negation or order relation the reference holds too, equality, approximation and
    angle brackets keep their 1."""
    score, reason = check_math(gold, answer)
    assert score == 1.0, reason


MARKED = [
    # (answer, what the parser read and scored 1 for)
    ("\\boxed{9\u0336}", "9"),  # 9 struck through (combining long stroke overlay)
    ("\\boxed{9\u20e3}", "9"),  # keycap: an enclosing mark
    ("\\boxed{9\u0301}", "9"),  # an accent on the digit
    ("\\boxed{1\u200b9}", "1"),  # a zero-width space: shows 19
    ("\\boxed{9\u00ad3}", "9"),  # a soft hyphen: shows 93
    ("\\boxed{3\u0338}", "3"),  # 3 crossed out: the combining "not" overlay
    ("\\boxed{1\u2060\u200b9}", "1"),  # a word joiner and a zero-width space: shows 19
    ("\\boxed{9\ufe0f}", "9"),  # a variation selector
    ("The final answer is 1\u200b9.", "1"),
    ("\\boxed{3\u00b2}", "3"),  # shows 3 squared, 9: the superscript was dropped
    ("\\boxed{10\u2076}", "10"),  # shows a million
]


@pytest.mark.parametrize(("response", "misread"), MARKED)
def test_a_digit_with_a_mark_or_an_invisible_character_after_it_scores_0(
    response: str, misread: str
) -> None:
    """A combining mark drawn on a digit, a power in superscript digits after one or an
    invisible format character between two: a reader sees a struck-out 9, 3 squared or
    19 where the parser read 9, 3 or 1, and it scored 1 for that. It scores 0 now, the character named by code point."""
    score, reason = check_math(misread, response)
    record("math verifier: digits read otherwise than shown", 1, int(score == 0.0))
    assert score == 0.0 and "on or after a digit" in reason, reason
    assert reason.isascii()


def test_characters_that_hide_no_digit_keep_their_verdict() -> None:
    """A format character after a last digit or between words hides no digit, and a
    superscript one changes no value: the verdict is the parser's as before (1 for
    these, against gold 9)."""
    assert check_math("9", "\\boxed{9\u200b}")[0] == 1.0
    assert check_math("9", "\\boxed{9\u00b9}")[0] == 1.0
    assert check_math("9", "\\boxed{9 \\text{ap\u200dples}}")[0] == 1.0


def test_the_micro_worlds_negated_answers_score_0_through_the_pool() -> None:
    """200 micro problems through the scorer's worker pool: each reference scores 1, its
    digit negated or bounded (``\\neq d``, ``\\le d``, ``x \\not= d``) or struck out
    scores 0."""
    boxed_gold_forms_fail(
        5,
        [r"\neq {}", r"\le {}", r"x \not= {}", "{}\u0336"],
        "math verifier: answers negating or bounding the gold",
    )
