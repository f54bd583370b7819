"""A reference answer of a number with letters glued to it (``3x``, ``2n``, ``4i``) is
that expression, not the number with a unit: ``math_answer.normalise`` also tried the
gold without its letters, so a bare number, or the number with any other letters
(``3y``, itself also tried as 3), scored 1. Scored through the real ``check_math``
(math-verify, SymPy) and through the scorer's worker pool as training scores it."""

from __future__ import annotations

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.math_answer import check_math
from tests.hostile_tally import record

DROPPED = [
    # (gold, answer): the answer is not the gold; each scored 1, since the gold was
    # also read without its letters (3x as 3), and the answer as written or, with its
    # own letters dropped, is that number
    ("3x", r"\boxed{3}"),  # x+2x = 3x, not 3
    ("3x", r"\boxed{3y}"),  # 3y is read as 3y and, as a number with a unit, as 3
    ("3x", r"\boxed{3 \text{ x}}"),  # read as 3 with the unit x
    ("2n", r"\boxed{2}"),  # the even numbers 2n, not 2
    ("4i", r"\boxed{4}"),  # an imaginary number, not 4
    ("2e", r"\boxed{2}"),  # twice Euler's number, not 2
    ("3xy", r"\boxed{3}"),
    ("2pq", r"\boxed{2r}"),
]


@pytest.mark.parametrize(("gold", "answer"), DROPPED)
def test_letters_glued_to_the_golds_number_are_part_of_its_value(gold: str, answer: str) -> None:
    """Each answer scored 1 for its gold (the gold was also tried as its bare number);
    now 0, and the gold's own form still scores 1."""
    score, reason = check_math(gold, answer)
    record("math verifier: a gold's letters dropped as a unit", 1, int(score == 0.0))
    assert score == 0.0, reason
    assert check_math(gold, rf"\boxed{{{gold}}}")[0] == 1.0


@pytest.mark.parametrize(
    ("gold", "answer"),
    [
        ("12 cm", r"\boxed{12}"),  # a unit parted by a space is still a unit
        ("12 cm", r"\boxed{12 \text{ cm}}"),
        ("12", r"\boxed{12 cm}"),  # an answer's unit is dropped as before
        ("3x", r"\boxed{3 x}"),
        ("3x", r"\boxed{x \cdot 3}"),
        ("3x", r"\boxed{3x}"),
        ("4i", r"\boxed{4i}"),
    ],
)
def test_units_and_the_golds_own_value_still_score_1(gold: str, answer: str) -> None:
    """A gold's unit parted from its number by a space is read past as before, and
    any spelling of a glued gold's value scores 1."""
    score, reason = check_math(gold, answer)
    assert score == 1.0, reason


def test_a_bare_number_for_a_glued_gold_scores_0_through_the_pool() -> None:
    """Through the scorer's worker pool: for golds 3x, 2n and 4i ("Simplify x+2x", "the
    even numbers", "2i+2i"), the answers 3, 2 and 4 and 3y, 2m and 4j scored 1 each
    (6 of 6); now all 0, while the golds' own forms score 1."""
    golds = ["3x", "2n", "4i"]
    rows = [
        PromptRow(
            id=f"g{i}",
            messages=[{"role": "user", "content": "Simplify."}],
            ground_truth=g,
            domain="math",
        )
        for i, g in enumerate(golds)
    ]
    hacks = [r"\boxed{3}", r"\boxed{2}", r"\boxed{4}", r"\boxed{3y}", r"\boxed{2m}", r"\boxed{4j}"]
    with build_scorer(RewardsConfig(timeout_s=10.0, workers=2)) as scorer:
        own = scorer.score(rows, [rf"<think></think>\boxed{{{g}}}" for g in golds])
        hacked = scorer.score(rows * 2, [f"<think></think>{h}" for h in hacks])
    assert all(r.score == 1.0 for r in own), [r.reason for r in own]
    record(
        "math verifier: a gold's letters dropped as a unit", 6, sum(r.score == 0 for r in hacked)
    )
    assert all(r.score == 0.0 for r in hacked), [r.reason for r in hacked]
