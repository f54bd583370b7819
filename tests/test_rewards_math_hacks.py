"""Math verifier and answer extraction against a policy that controls only its text:
answers SymPy would work out for it, values that contain or neighbour the gold, tags
that look like ``</think>``, boxes in odd places. Each hack is scored through the real
``check_math`` (math-verify, SymPy); the expected verdicts are worked out in comments."""

from __future__ import annotations

import random

import pytest

from recipe_arena.data.micro_math import sample_math
from recipe_arena.rewards.math_answer import check_math
from recipe_arena.rewards.text import answer_text
from tests.hostile_tally import record

COMPUTED = [
    # The micro world asks for the last digit of 38+7*3 = 59: 9. Each answer copies the
    # question and lets SymPy finish it.
    ("9", r"\boxed{38+7\cdot 3-10\left\lfloor\frac{38+7\cdot 3}{10}\right\rfloor}"),
    ("9", r"\boxed{59 - 10 \lfloor 5.9 \rfloor}"),
    ("9", r"\boxed{\operatorname{floor}(9.5)}"),
    ("9", r"\boxed{\lceil 8.5 \rceil}"),
    ("55", r"\boxed{\sum_{k=1}^{10} k}"),  # 1+...+10 = 55
    ("6", r"\boxed{\prod_{k=1}^{3} k}"),  # 3! = 6
    ("9", r"\boxed{\int_0^9 1\, dx}"),
    ("9", r"\boxed{\frac{d}{dx} 9x}"),
    ("4", r"\boxed{\lim_{x\to 4} x}"),
]


@pytest.mark.parametrize(("gold", "response"), COMPUTED)
def test_an_answer_that_leaves_the_computation_to_sympy_scores_0(gold: str, response: str) -> None:
    """Each box equals the gold once SymPy evaluates it (a residue, a floor or ceiling, a
    sum, product, integral, limit or derivative), but the reference holds no such
    operation: the answer is refused before it is parsed, with the kind named."""
    score, reason = check_math(gold, response)
    record("math verifier: answers SymPy computes", 1, int(score == 0.0))
    assert score == 0.0 and "for the verifier to compute" in reason, reason


@pytest.mark.parametrize(
    "response",
    [
        r"\boxed{(38+7\cdot 3) \mod 10}",
        r"\boxed{(38+7 \cdot 3) \bmod 10}",
        r"\boxed{x \equiv 38+7 \cdot 3 \pmod{10}}",
    ],
)
def test_a_modulus_that_computes_the_answer_scores_0(response: str) -> None:
    r"""SymPy reduces 59 mod 10 to 9, the gold; without its modulus clause the answer is
    59, so it scores 0. A modulus that only qualifies a right answer
    (``x \equiv 9 \pmod{10}``, 9 either way) still scores 1."""
    score, reason = check_math("9", response)
    record("math verifier: answers SymPy computes", 1, int(score == 0.0))
    assert score == 0.0, reason
    assert check_math("9", r"\boxed{x \equiv 9 \pmod{10}}")[0] == 1.0


def test_an_operation_the_reference_holds_is_allowed() -> None:
    r"""A reference that is itself a floor (\lfloor x/2 \rfloor) or a sum is matched by the
    same expression, and an operation-free answer is still judged by its value."""
    assert check_math(r"\lfloor x/2 \rfloor", r"\boxed{\left\lfloor \frac{x}{2} \right\rfloor}")[0]
    assert check_math(r"\sum_{k=1}^{n} k", r"\boxed{\sum_{k=1}^{n} k}")[0] == 1.0
    assert check_math("4", r"\boxed{\sqrt{16}}")[0] == 1.0  # a root is an ordinary answer


def test_the_micro_world_answers_and_the_copied_question() -> None:
    """200 micro problems: the careful and quick references score 1, a wrong digit 0, and
    the question turned into ``(s op d*k) \\bmod 10`` (its value is the last digit, the
    gold) scores 0."""
    rng = random.Random(11)
    for i in range(200):
        p = sample_math(rng)
        gold = str(p.ground_truth)
        wrong = str((int(gold) + 1 + i % 9) % 10)
        expr = p.canonical.replace("*", r" \cdot ")
        assert check_math(gold, p.response)[0] == 1.0
        assert check_math(gold, p.quick_response)[0] == 1.0
        assert check_math(gold, rf"<think></think>\boxed{{{wrong}}}")[0] == 0.0
        assert check_math(gold, rf"<think></think>\boxed{{({expr}) \bmod 10}}")[0] == 0.0


NOT_THE_GOLD = [
    # gold 4 against values that contain it, neighbour it or are undefined
    r"\boxed{[4, 5]}",  # an interval holding 4
    r"\boxed{(3, 5)}",  # an open interval around 4 (or a pair)
    r"\boxed{\{4, 5\}}",  # a set holding 4
    r"\boxed{(4, 5)}",  # a tuple starting with 4
    r"\boxed{\pm 4}",  # two values
    r"\boxed{x \ge 4}",
    r"\boxed{x \in \{3, 4\}}",
    r"\boxed{\infty}",
    r"\boxed{(-\infty, \infty)}",
    r"\boxed{\mathbb{R}}",
    r"\boxed{\frac{0}{0}}",
    r"\boxed{nan}",
    r"\boxed{oo}",
    r"\boxed{zoo}",
    r"\boxed{\infty - \infty}",
    r"\boxed{x}",  # a free symbol
    r"\boxed{}",
    r"\boxed{\text{anything}}",
    r"\boxed{3.9999999}",  # differs from 4 in the 7th decimal
    r"\boxed{4!}",  # 24
]


@pytest.mark.parametrize("response", NOT_THE_GOLD)
def test_values_that_hold_or_approach_the_gold_score_0(response: str) -> None:
    """Against gold 4 none of these is 4: a set, interval or tuple that holds 4, both
    signs, infinities and undefined values (nan, zoo, 0/0), a free symbol, an empty box,
    a near miss past math-verify's 6-decimal rounding."""
    score, reason = check_math("4", response)
    record("math verifier: values holding the gold", 1, int(score == 0.0))
    assert score == 0.0, reason


def test_a_gold_of_zero_against_small_numbers() -> None:
    """An integer gold 0 is matched by none of 1e-7, 10^{-9} and 4e-7 (the 6-decimal
    rounding of docs/security.md is a decimal gold's)."""
    for response in (r"\boxed{0.0000001}", r"\boxed{10^{-9}}", r"\boxed{0.0000004}"):
        assert check_math("0", response)[0] == 0.0, response


THINK_TRICKS = [
    # (response, gold that must score 0)
    ("<think>\\boxed{4}</think>", "4"),  # the answer only in the think block, nothing after
    ("<think><think>\\boxed{4}</think>", "4"),  # nested opening: still nothing after
    ("<think>\\boxed{4}\uff1c/think\uff1e", "4"),  # fullwidth look-alike: think never closed
    ("<think>\\boxed{4}</think\u200b>", "4"),  # zero-width space inside the tag
    ("<think>\\boxed{4}</THINK>", "4"),  # another case is not the tag
    ("<think>\\boxed{4}<\u2215think>", "4"),  # division slash for the solidus
    ("<think>a</think>\\boxed{4}</think>\\boxed{3}", "4"),  # the last close counts: 3
    ("<think>a</think>\\boxed{4 ```\\boxed{3}", "4"),  # 4's box never closes: 3
    ("\\boxed{4", "4"),  # no closing brace: no box, the short answer is not a number
]


@pytest.mark.parametrize(("response", "gold"), THINK_TRICKS)
def test_think_tags_and_unclosed_boxes_do_not_expose_the_scratch_work(
    response: str, gold: str
) -> None:
    """Only the text after the last real ``</think>`` is an answer: a look-alike tag
    (fullwidth, zero-width space, capitals, division slash) leaves the think block open,
    so nothing is graded; several closes leave only the text after the last; a box
    without its closing brace is no box."""
    score, reason = check_math(gold, response)
    record("math verifier: think tags and boxes", 1, int(score == 0.0))
    assert score == 0.0, reason


def test_several_closes_and_boxes_grade_one_answer_at_most() -> None:
    r"""``<think>a</think>\boxed{3}</think>\boxed{4}`` grades only ``\boxed{4}`` (after the
    last close), so it scores for gold 4 and not 3; a box in a code fence is a box
    (scored 1 when right); \fbox and \boxed with different values are a hedge (0)."""
    r = "<think>a</think>\\boxed{3}</think>\\boxed{4}"
    assert answer_text(r) == "\\boxed{4}"
    assert (check_math("3", r)[0], check_math("4", r)[0]) == (0.0, 1.0)
    assert check_math("4", "<think>a</think>```\n\\boxed{4}\n```")[0] == 1.0
    assert check_math("4", "\\fbox{3} \\boxed{4}")[0] == 0.0
    assert check_math("4", "\\boxed{\\boxed{4}}")[0] == 0.0  # a nested box is a second box
