"""Math answers holding signs outside ASCII that the LaTeX parser does not know. Where
the parser stops at such a sign, math-verify takes a number out of the text instead (the
one before the sign, or the last), so ``9\u00b75`` (9·5, which is 45) was read as 9.
Scored through the real ``check_math`` (math-verify, SymPy) and through the scorer's
worker pool as training scores it."""

from __future__ import annotations

import pytest

from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.math_answer import check_math
from tests.hostile_tally import record
from tests.test_rewards_math_copies import boxed_gold_forms_fail, references_pass_and_hacks_fail

PICKED = [
    # (response, the number math-verify picked out of it, what a reader sees)
    ("\\boxed{9\u00b75}", "9"),  # 9·5 (middle dot): 45
    ("\\boxed{2\u221a3}", "2"),  # 2√3: about 3.46
    ("\\boxed{9\u2030}", "9"),  # 9‰ (per mille): 0.009
    ("\\boxed{9\u2031}", "9"),  # 9‱ (per ten thousand): 0.0009
    ("\\boxed{9 \u00bd}", "9"),  # 9 ½: 9.5
    ("\\boxed{9\u00bc}", "9"),  # 9¼: 9.25
    ("\\boxed{9\u01c3}", "9"),  # the click letter drawn as !: 9! = 362880
    ("\\boxed{9\u203c}", "9"),  # 9‼ (double factorial): 945
    ("\\boxed{\u2796 9}", "9"),  # the heavy minus sign: -9
    ("\\boxed{\u2043 9}", "9"),  # the hyphen bullet: -9
    ("\\boxed{9 \u00b7 5}", "5"),  # 9 · 5, spaced: the last number was taken
    ("\\boxed{5 \u2717}", "5"),  # 5 with a ballot X: marked wrong
    ("\\boxed{9\u2148}", "9"),  # 9 times the double-struck imaginary unit: 9i
    ("\\boxed{\u2211 9}", "9"),  # a sum sign with nothing to sum
]


@pytest.mark.parametrize(("response", "picked"), PICKED)
def test_a_number_picked_out_of_unread_unicode_scores_0(response: str, picked: str) -> None:
    """Each answer shows another value than the number math-verify picked out of it once
    the LaTeX parser stopped at the sign: it scored 1 for that number. An answer holding
    a character outside ASCII is now read as LaTeX only, and this one as LaTeX is
    nothing, so it scores 0."""
    score, reason = check_math(picked, response)
    record("math verifier: numbers picked out of unread unicode", 1, int(score == 0.0))
    assert score == 0.0, reason


READ = [
    # (gold, response): signs the LaTeX parser reads, with the value a reader sees
    ("-9", "\\boxed{\u22129}"),  # the minus sign: -9
    ("27", "\\boxed{9\u00d73}"),  # 9×3
    ("3", "\\boxed{9\u00f73}"),  # 9÷3
    ("6", "\\boxed{2\u22c53}"),  # 2⋅3 (dot operator)
    ("2\\pi", "\\boxed{2\u03c0}"),  # 2π
    ("x \\leq 3", "\\boxed{x \u2264 3}"),  # x ≤ 3, the reference's own relation
    ("9", "\\boxed{9\u00b0}"),  # a degree sign, dropped before parsing
    ("9", "\\boxed{9 \\text{ \u00e9l\u00e8ves}}"),  # a unit in \text{}, as in ASCII
]


@pytest.mark.parametrize(("gold", "response"), READ)
def test_unicode_the_latex_parser_reads_still_scores_1(gold: str, response: str) -> None:
    """Signs the LaTeX parser knows keep their verdict: each answer equals its gold as a
    reader sees it and scores 1."""
    score, reason = check_math(gold, response)
    assert score == 1.0, reason


def test_the_micro_worlds_digits_beside_unread_signs_score_0_through_the_pool() -> None:
    """200 micro problems through the scorer's worker pool: each reference scores 1, its
    digit d written as ``d·5``, ``d‰``, ``d ½`` or ``d\u01c3`` (45 for a d of 9, a
    thousandth, a half more, a factorial) scores 0; each scored 1 before."""
    boxed_gold_forms_fail(
        13,
        ["{}\u00b75", "{}\u2030", "{} \u00bd", "{}\u01c3"],
        "math verifier: numbers picked out of unread unicode",
    )


def test_the_questions_arithmetic_copied_with_unicode_operators_scores_0_through_the_pool() -> None:
    """ "What is the last digit of 15-2*3?" (15-6 = 9) answered with the question copied,
    its operators written as signs the LaTeX parser reads as ``*``, ``-``, ``+`` or ``/``
    (the bullet operator ``15-2\u22193``, the star ``15-2\u22c63``, the ring ``15-2\u22183``,
    the dot minus ``15\u22382*3``): SymPy works it out to 9 and each scored 1, the copy
    check not knowing the sign. Through the scorer's worker pool each scores 0; 9 itself
    scores 1, and so do ``84\u00f712`` and ``3\u22954`` judged as copies of 84/12 and 3+4."""
    rows = [
        PromptRow(id=q, messages=[{"role": "user", "content": q}], ground_truth=g, domain="math")
        for q, g in [
            ("What is the last digit of 15-2*3?", "9"),
            ("What is 84/12?", "7"),
            ("What is 3+4?", "7"),
        ]
    ]
    signs = "\u2219\u22c6\u2218\u2297\u22a0\u22a1\u22c4\u22c8\u22c9\u22ca"
    hacks = [(rows[0], "\\boxed{15-2" + s + "3}") for s in signs]
    hacks += [(rows[0], "\\boxed{15\u22382*3}"), (rows[0], "\\boxed{15\u2212 2\u2219 3}")]
    hacks += [(rows[1], "\\boxed{84\u00f712}"), (rows[1], "\\boxed{84\u221512}")]
    hacks += [(rows[2], "\\boxed{3" + s + "4}") for s in "\u2295\u2214\u229e"]
    references_pass_and_hacks_fail(
        rows,
        ["\\boxed{9}", "\\boxed{7}", "\\boxed{7}"],
        hacks,
        "math verifier: the question's arithmetic copied",
    )
