"""Math answers that get past the verifier's rules by what they wrap a value in: a
percentage sign after two values, the question's arithmetic in braces, set braces, a
unit or ``x =``, a derivative written with an upright d. Scored through the real
``check_math`` (math-verify, SymPy) and, for the micro world's copied questions, through
the scorer's worker pool as training scores them; the expected values are worked out in
the comments."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.math_answer import check_math
from tests.hostile_tally import record
from tests.test_rewards_math_copies import (
    micro_problems,
    own_last_digit,
    references_pass_and_hacks_fail,
)

PERCENT_HEDGES = [
    # (answer, one reading, the other): before the fix the answer scored 1 for both
    (r"\boxed{3 \approx 4\%}", "3", "4"),  # "3 \approx 4" is 3; "4\%" as written is 4
    (r"\boxed{4 \approx 3\%}", "4", "3"),
    (r"\boxed{3 4\%}", "7", "4"),  # "3 4" is read as 3 + 4; "4\%" is 4
    (r"\boxed{3\,4\%}", "7", "3"),
    (r"\boxed{3(4)\%}", "7", "3"),
    (r"\boxed{3 \quad 4\%}", "7", "4"),
    (r"\boxed{3 e 4\%}", "3", "4"),
    (r"\boxed{3 / 4\%}", "0.75", "4"),  # 3/4, and 4 as written
    (r"\boxed{5 \times 10\%}", "50", "10"),
]


@pytest.mark.parametrize(("response", "first", "second"), PERCENT_HEDGES)
def test_a_percentage_sign_after_two_values_scores_for_one_at_most(
    response: str, first: str, second: str
) -> None:
    r"""``p\%`` is read as written, as ``p`` and as ``p/100``. With two values in ``p``,
    ``p`` read alone kept one of them and the whole read as written kept the other, so a
    digit hedge (``3 \approx 4\%``) scored 1 for both golds. Only a number or fraction
    before the sign is read the three ways now."""
    both = check_math(first, response)[0] + check_math(second, response)[0]
    record("math verifier: two values in one answer", 1, int(both <= 1.0))
    assert both <= 1.0, response


@pytest.mark.parametrize(
    ("response", "golds"),
    [
        (r"\boxed{50\%}", ("50", "0.5")),
        (r"\boxed{(50)\%}", ("50", "0.5")),
        (r"\boxed{50\,\%}", ("50", "0.5")),
        (r"\boxed{12.5\%}", ("12.5", "0.125")),
        (r"\boxed{-5\%}", ("-5", "-0.05")),
        (r"\boxed{\frac{1}{2}\%}", ("1/2", "1/200")),
        (r"\boxed{33\frac{1}{3}\%}", ("100/3",)),
        ("50%", ("50", "0.5")),
    ],
)
def test_a_percentage_of_a_number_keeps_both_readings(
    response: str, golds: tuple[str, ...]
) -> None:
    """A number or fraction before the sign still scores for ``p`` and for ``p/100``."""
    for gold in golds:
        assert check_math(gold, response)[0] == 1.0, (gold, response)


QUESTION = "What is the last digit of 15-2*3?"
WRAPPED_COPIES = [
    # each is 15 - 2*3 = 9, the question's own arithmetic, in a wrapper
    r"\boxed{{15-2\cdot 3}}",  # braces that only group
    r"\boxed{15-{2}\cdot{3}}",
    r"\boxed{15-2*{3}}",
    r"\boxed{\{15-2*3\}}",  # a set of one
    r"\boxed{x=15-2\cdot 3}",
    r"\boxed{+15-2*3}",
    r"\boxed{15-2\cdot3.}",
    "\\boxed{15\u22122*3}",  # the minus sign U+2212
    r"\boxed{15-2*3 \text{ cm}}",
    r"\boxed{15 - 2\cdot 3 \text{ units}}",
    r"\boxed{15 - 2\cdot 3^{\circ}}",
    # what the parser reads past that is not part of a value
    r"\boxed{15-2*3 \quad}",  # spacing
    r"\boxed{\phantom{0}15-2*3}",
    r"\boxed{\large 15-2*3}",  # a size, a font
    r"\boxed{\ldots 15-2*3}",
    r"\boxed{15-2*3_{10}}",  # a subscript
    r"\boxed{15-2*3 apples}",  # a word
    r"\boxed{\text{ans} = 15-2*3}",
    r"\boxed{= 15-2*3}",
    r"\boxed{\approx 15-2*3}",
    r"\boxed{15-2*3 = 15-2*3}",
    r"\boxed{|15-2*3|}",  # fences
    r"\boxed{\langle 15-2*3 \rangle}",
    r"\boxed{\left. 15-2*3 \right.}",
    r"\boxed{& 15-2*3}",
    r"\boxed{15-2 \cdot 3 \mod 10}",  # a modulus that only qualifies the copy
    r"\boxed{15-2*3 \text{ (mod 10)}}",
]


@pytest.mark.parametrize("response", WRAPPED_COPIES)
def test_the_questions_arithmetic_in_a_wrapper_is_still_a_copy(response: str) -> None:
    """The copy rule compared the answer as written with the question: braces, ``x =``,
    a sign, a full stop, a unit, a degree mark, spacing, a font, dots, a subscript, a word,
    fences or a modulus clause around ``15-2*3`` made it another text, while the parser
    reads past them to the question's value, 9. Each now scores 0; so does an equation
    each side of which is such a copy."""
    score, reason = check_math("9", response, prompt=QUESTION)
    record("math verifier: the question's arithmetic copied", 1, int(score == 0.0))
    assert score == 0.0 and "copied" in reason, reason


@pytest.mark.parametrize(
    ("question", "gold", "answer"),
    [
        (QUESTION, "9", r"\boxed{x = 9}"),
        (QUESTION, "9", r"\boxed{{9}}"),
        (QUESTION, "9", r"\boxed{15-2 \cdot 3 = 9}"),  # the work, then the value
        (QUESTION, "9", r"\boxed{9 \text{ apples}}"),
        (QUESTION, "9", r"\boxed{x \equiv 9 \pmod{10}}"),
        (r"Is $\frac{2}{3}$ larger than $\frac{3}{5}$?", "2/3", r"\boxed{{\frac{2}{3}}}"),
        (r"Compute $\binom{5}{2}$.", r"\binom{5}{2}", r"\boxed{{\binom{5}{2}}}"),
        ("What is 7 plus 8?", "15", r"\boxed{{8+7}}"),
    ],
)
def test_values_in_wrappers_still_score_1(question: str, gold: str, answer: str) -> None:
    """A plain number, a fraction in lowest terms, the gold's own form and arithmetic the
    question does not hold keep their 1 in the same wrappers."""
    score, reason = check_math(gold, answer, prompt=question)
    assert score == 1.0, reason


def test_the_micro_worlds_copies_in_braces_score_0_through_the_pool() -> None:
    """In the micro world "What is the last digit of s-d*k?" has s-d*k as its answer when
    that is a single digit: the question boxed as ``{s-d \\cdot k}`` or ``x=s-d*k`` scored
    1 there. Through the scorer's worker pool, which sends the question with the answer,
    each scores 0, while the references of the same 300 problems score 1."""
    problems, rows = micro_problems(7, 300)
    copies = []
    for p, row in zip(problems, rows, strict=True):
        if own_last_digit(p.canonical):
            expr = p.canonical.replace("*", r" \cdot ")
            copies += [(row, "<think></think>\\boxed{{" + expr + "}}")]
            copies += [(row, "<think></think>\\boxed{x = " + p.canonical + "}")]
    assert copies, "the seed draws no subtraction whose value is its own last digit"
    references_pass_and_hacks_fail(rows, [p.response for p in problems], copies)


DERIVATIVES = [
    # (gold, answer): SymPy differentiates each to the gold
    ("9", r"\boxed{\frac{\mathrm{d}}{\mathrm{d}x} 9x}"),
    ("9", r"\boxed{\dfrac{\mathrm{d}}{\mathrm{d}x}\left(9x\right)}"),
    ("9", r"\boxed{\frac{\mathrm{d}(9x)}{\mathrm{d}x}}"),
    ("9", r"\boxed{\frac{{\rm d}}{{\rm d} x} 9x}"),
    ("9", r"\boxed{\frac{\mathrm{d}}{\mathrm{d}x} (59x) - 50}"),  # 59 - 50
    ("2x", r"\boxed{\frac{\mathrm{d}}{\mathrm{d}x} x^2}"),
]


@pytest.mark.parametrize(("gold", "response"), DERIVATIVES)
def test_a_derivative_with_an_upright_d_is_left_to_sympy_and_scores_0(
    gold: str, response: str
) -> None:
    r"""The rule against derivatives read ``\frac{d}{dx}`` in the text; with an upright d
    (``\mathrm{d}``, ``{\rm d}``) the text did not match while SymPy still built and
    worked out the derivative. What SymPy reads is checked now, so each scores 0; a
    reference that is itself a derivative is still matched by one."""
    score, reason = check_math(gold, response)
    record("math verifier: answers SymPy computes", 1, int(score == 0.0))
    assert score == 0.0 and "for the verifier to compute" in reason, reason
    assert check_math(r"\frac{d}{dx} x^2", r"\boxed{\frac{\mathrm{d}}{\mathrm{d}x} x^2}")[0] == 1.0


TEX_SPELLINGS = [
    # (answer, its value, the value the parser read before the fix)
    (r"\boxed{3\,000}", "3000", "0"),  # a thin space between digit groups: was 3*000
    (r"\boxed{3\;000}", "3000", "0"),
    (r"\boxed{1\,000\,000}", "1000000", "0"),
]


@pytest.mark.parametrize(("response", "value", "misread"), TEX_SPELLINGS)
def test_digit_groups_parted_by_a_thin_space_are_one_number(
    response: str, value: str, misread: str
) -> None:
    r"""A number with its digit groups parted by ``\,`` or ``\;`` is one number, as in
    TeX. The parser read ``3\,000`` as 3*000 = 0: it scored 0 for 3000 and 1 for a gold
    of 0. Now the other way round."""
    wrong = check_math(misread, response)[0]
    record("math verifier: values holding the gold", 1, int(wrong == 0.0))
    assert wrong == 0.0, (misread, response)
    assert check_math(value, response)[0] == 1.0, (value, response)


REARRANGED = [
    # (question, gold, answer): the numbers of one expression of the question, each once
    (QUESTION, "9", r"\boxed{15-3 \cdot 2}"),  # 15 - 6 = 9
    (QUESTION, "9", r"\boxed{-2 \cdot 3 + 15}"),
    (QUESTION, "9", r"\boxed{15+-2*3}"),
    ("What is 3+4?", "7", r"\boxed{4+3}"),
    ("Simplify 6/8.", "3/4", r"\boxed{\frac{6}{8}}"),
    ("What is 2^3*5?", "40", r"\boxed{5 \cdot 2^3}"),
]


@pytest.mark.parametrize(("question", "gold", "answer"), REARRANGED)
def test_the_questions_arithmetic_rearranged_is_a_copy(
    question: str, gold: str, answer: str
) -> None:
    """An answer built of exactly the numbers of one expression in the question, each as
    often, is that expression reordered: SymPy still does all of its work. It scored 1;
    now 0, while the value itself scores 1."""
    score, reason = check_math(gold, answer, prompt=question)
    record("math verifier: the question's arithmetic copied", 1, int(score == 0.0))
    assert score == 0.0 and "copied" in reason, reason
    assert check_math(gold, rf"\boxed{{{gold}}}", prompt=question)[0] == 1.0


@pytest.mark.parametrize(
    ("question", "gold", "answer"),
    [
        (QUESTION, "9", r"\boxed{15-6}"),  # partly worked: 6 is not in the question
        (QUESTION, "9", r"\boxed{15-2-2-2}"),  # 2 three times: the work written out
        ("Tom has 3 apples and gets 4 more. How many?", "7", r"\boxed{3+4}"),
    ],
)
def test_worked_arithmetic_still_scores_1(question: str, gold: str, answer: str) -> None:
    """Numbers the question's expression does not hold, a number used more often than
    there, or numbers the question writes in words apart are judged by value."""
    score, reason = check_math(gold, answer, prompt=question)
    assert score == 1.0, reason
