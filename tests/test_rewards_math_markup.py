"""Math answers whose LaTeX math-verify drops or does not read as it is drawn: a
``\\text{}`` group taken for a unit (with all that follows it), invisible content, and
markup the LaTeX parser stops at. Scored through the real ``check_math`` (math-verify,
SymPy) and through the scorer's worker pool as training scores it."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.math_answer import check_math
from tests.hostile_tally import record
from tests.test_rewards_math_copies import boxed_gold_forms_fail

DROPPED = [
    # (gold the answer scored 1 for, answer): what a reader sees is in the comment
    ("9", r"\boxed{9\text{00}}"),  # 900
    ("9", r"\boxed{9\mathbf{00}}"),  # 900 in bold
    ("9", r"\boxed{9\text{.5}}"),  # 9.5
    ("9", r"\boxed{9\text{!}}"),  # 9! = 362880
    ("9", r"\boxed{9\text{ m} \cdot 5\text{ m}}"),  # 45 m (all from the first \text dropped)
    ("9", r"\boxed{x = 9\text{00}}"),  # x = 900
    ("9", r"\boxed{9\text{ thousand}}"),  # 9000
    ("9", "\\boxed{9\\text{\u2030}}"),  # 9 per mille: 0.009
    ("0", r"\boxed{9\phantom{0}}"),  # 9 (the 0 is invisible; read as 9*0 = 0)
    ("9", r"\boxed{9\underline{00}}"),  # 900 underlined
    ("9", r"\boxed{9\color{white}{00}}"),  # 900, the zeros white
    ("9", r"\boxed{9\smash{00}}"),  # 900
    ("9", r"\boxed{9\operatorname{00}}"),  # 900
    ("9", r"\boxed{9\textsf{00}}"),  # 900 in sans serif
    ("9", r"\boxed{9\rlap{00}}"),  # 900, the zeros overlapping what follows
    ("9", r"\boxed{9\raisebox{1pt}{00}}"),  # 900, the zeros raised
    ("9", r"\boxed{9\overset{}{00}}"),  # 900
    ("9", r"\boxed{9\tag{00}}"),  # 9 numbered (00)
    ("9", r"\boxed{9\url{00}}"),  # 900
    ("9", r"\boxed{9\verb|00|}"),  # 900
    ("9", r"\boxed{9\ensuremath{00}}"),  # 900
]


@pytest.mark.parametrize(("gold", "answer"), DROPPED)
def test_latex_dropped_or_not_read_as_drawn_scores_0(gold: str, answer: str) -> None:
    """Each answer shows another value than math-verify read (the comment's), and it
    scored 1 for ``gold``: a unit group holding more than a unit was dropped with what
    follows it, and the parser stopped at markup it does not know (taking the first
    number) or read invisible content. Each scores 0 now, the reason naming why."""
    score, reason = check_math(gold, answer)
    record("math verifier: LaTeX dropped or not read as drawn", 1, int(score == 0.0))
    assert score == 0.0 and "answer holds" in reason, reason


KEPT = [
    # (gold, answer): units, and markup the reference holds too
    ("9", r"\boxed{9 \text{ cm}}"),
    ("9", r"\boxed{9\text{ cm}^2}"),
    ("9", r"\boxed{9\text{ cm}^{2}}"),
    ("9", r"\boxed{9\mathrm{~m/s}^2}"),
    ("9", "\\boxed{9\\text{ m\u00b2}}"),
    ("9", r"\boxed{9 \text{ apples}}"),
    ("9", r"\boxed{9 \text{ degrees}}"),
    ("9", r"\boxed{\text{9}}"),
    (r"\operatorname{lcm}(a,b)", r"\boxed{\operatorname{lcm}(a,b)}"),
    (r"\underline{9}", r"\boxed{\underline{9}}"),
]


@pytest.mark.parametrize(("gold", "answer"), KEPT)
def test_units_and_the_references_own_markup_still_score_1(gold: str, answer: str) -> None:
    """A unit of letters, with a power after a letter, is a unit, and markup the
    reference holds is allowed: each answer equals its gold and scores 1."""
    score, reason = check_math(gold, answer)
    assert score == 1.0, reason


def test_the_micro_worlds_digits_with_dropped_latex_score_0_through_the_pool() -> None:
    """200 micro problems through the scorer's worker pool: each reference scores 1, its
    digit d written as ``d\\text{00}``, ``d\\mathbf{00}``, ``d\\underline{00}`` or
    ``d\\text{ m} \\cdot 5\\text{ m}`` (shown as 100 times d, or 5 times d metres) scores 0;
    each scored 1 before."""
    boxed_gold_forms_fail(
        17,
        [
            r"{}\text{{00}}",
            r"{}\mathbf{{00}}",
            r"{}\underline{{00}}",
            r"{}\text{{ m}} \cdot 5\text{{ m}}",
        ],
        "math verifier: LaTeX dropped or not read as drawn",
    )
