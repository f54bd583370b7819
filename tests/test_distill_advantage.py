"""The on-policy distillation advantage: A_t = clip(logp_teacher - logp_student, -c, c)
on completion tokens, with metrics per teacher (hand-derived)."""

from __future__ import annotations

import pytest
import torch

from recipe_arena.advantages import ADVANTAGES, AdvantageInput, compute_advantages
from recipe_arena.advantages.distill import DistillParams


def _inp(teacher: list[list[float]] | None, names: tuple[str, ...] | None) -> AdvantageInput:
    """Two rows of four positions; position 0 is the prompt (mask 0), row 1's last
    position is padding (mask 0). Student (behaviour) logprobs:
        row 0: [-9, -1.0, -2.0, -0.5]     row 1: [-9, -3.0, -0.1, 0]"""
    return AdvantageInput(
        rewards_B=torch.tensor([1.0, 0.0]),
        group_B=torch.tensor([0, 0]),
        mask_BL=torch.tensor([[0.0, 1, 1, 1], [0, 1, 1, 0]]),
        behavior_logprobs_BL=torch.tensor([[-9.0, -1.0, -2.0, -0.5], [-9.0, -3.0, -0.1, 0.0]]),
        teacher_logprobs_BL=None if teacher is None else torch.tensor(teacher),
        teacher_B=names,
    )


TEACHER = [[0.0, -0.5, -9.0, -0.5], [0.0, -0.2, -6.1, -4.0]]
"""Gaps on the mask (teacher - student):
    row 0: -0.5 - (-1) = +0.5,  -9 - (-2) = -7.0,  -0.5 - (-0.5) = 0.0
    row 1: -0.2 - (-3) = +2.8,  -6.1 - (-0.1) = -6.0
Positions off the mask (the prompt, the padding) get 0 whatever the logprobs say."""


def test_gap_clipped_on_both_sides() -> None:
    """c = 2.5: +0.5 and 0 pass; -7.0 -> -2.5; +2.8 -> +2.5; -6.0 -> -2.5. Three of
    the five completion tokens are clipped (one above, two below)."""
    res = compute_advantages(DistillParams(clip=2.5), _inp(TEACHER, ("a", "b")))
    expected = torch.tensor([[0.0, 0.5, -2.5, 0.0], [0.0, 2.5, -2.5, 0.0]])
    assert torch.allclose(res.advantages_BL, expected)
    m = res.metrics
    assert m["distill/all/clipped_frac"] == pytest.approx(3 / 5)
    # mean gap (unclipped): (0.5 - 7 + 0 + 2.8 - 6) / 5 = -9.7 / 5 = -1.94
    assert m["distill/all/gap_mean"] == pytest.approx(-1.94)
    # |gap|: (0.5 + 7 + 0 + 2.8 + 6) / 5 = 16.3 / 5 = 3.26
    assert m["distill/all/gap_abs_mean"] == pytest.approx(3.26)


def test_metrics_per_teacher() -> None:
    """Teacher a scored row 0: gap mean (0.5 - 7 + 0)/3 = -2.1667, |gap| 7.5/3 = 2.5,
    clipped 1/3 (c = 2.5). Teacher b scored row 1: mean (2.8 - 6)/2 = -1.6, |gap|
    8.8/2 = 4.4, clipped 2/2."""
    m = compute_advantages(DistillParams(clip=2.5), _inp(TEACHER, ("a", "b"))).metrics
    assert m["distill/a/gap_mean"] == pytest.approx(-6.5 / 3)
    assert m["distill/a/gap_abs_mean"] == pytest.approx(2.5)
    assert m["distill/a/clipped_frac"] == pytest.approx(1 / 3)
    assert m["distill/a/tokens"] == 3
    assert m["distill/b/gap_mean"] == pytest.approx(-1.6)
    assert m["distill/b/gap_abs_mean"] == pytest.approx(4.4)
    assert m["distill/b/clipped_frac"] == pytest.approx(1.0)


def test_clip_is_read() -> None:
    """c = 10 clips nothing: the advantages are the raw gaps (-7.0 and +2.8 pass)."""
    res = compute_advantages(DistillParams(clip=10.0), _inp(TEACHER, None))
    expected = torch.tensor([[0.0, 0.5, -7.0, 0.0], [0.0, 2.8, -6.0, 0.0]])
    assert torch.allclose(res.advantages_BL, expected)
    assert res.metrics["distill/all/clipped_frac"] == 0.0


def test_rewards_do_not_enter() -> None:
    """Rewards (1, 0) swapped to (0, 1): the advantages are the same."""
    a = compute_advantages(DistillParams(clip=2.5), _inp(TEACHER, None)).advantages_BL
    inp = _inp(TEACHER, None)
    swapped = AdvantageInput(**{**inp.__dict__, "rewards_B": torch.tensor([0.0, 1.0])})
    assert torch.equal(a, compute_advantages(DistillParams(clip=2.5), swapped).advantages_BL)


def test_without_teacher_it_fails_naming_the_cause() -> None:
    with pytest.raises(ValueError, match="teacher log-probabilities"):
        compute_advantages(DistillParams(), _inp(None, None))


def test_registry_entry() -> None:
    assert ADVANTAGES["distill"].params is DistillParams
    assert DistillParams().clip == 5.0


def test_a_gap_exactly_at_the_bound_is_not_clipped_and_empty_teachers_read_zero() -> None:
    """c = 2.5, three rows of three positions, position 0 the prompt (mask 0):

        row 0, teacher a: student [-9, -1.0, -2.0], teacher [0, -0.5, -3.0], mask [0, 1, 1]
                          gaps +0.5, -1.0
        row 1, teacher b: no completion token (mask [0, 0, 0]: an empty response)
        row 2, teacher c: student [-9, -3.0, 0], teacher [0, -0.5, 0], mask [0, 1, 0]
                          gap -0.5 - (-3.0) = +2.5 = c exactly (exact in float32)

    A gap equal to c is left as it is: clip(2.5, -2.5, 2.5) = 2.5, and it is not counted
    as clipped (``|gap| > c``), so every clipped fraction is 0. Over all rows: 3 tokens,
    gap mean (0.5 - 1 + 2.5) / 3 = 2/3, |gap| mean (0.5 + 1 + 2.5) / 3 = 4/3. Teacher c
    has one token: its means are that token's gap, 2.5. Teacher b has none: its metrics
    are 0 rather than 0/0."""
    inp = AdvantageInput(
        rewards_B=torch.zeros(3),
        group_B=torch.tensor([0, 0, 0]),
        mask_BL=torch.tensor([[0.0, 1, 1], [0, 0, 0], [0, 1, 0]]),
        behavior_logprobs_BL=torch.tensor([[-9.0, -1.0, -2.0], [-9.0, -1.0, -1.0], [-9, -3.0, 0]]),
        teacher_logprobs_BL=torch.tensor([[0.0, -0.5, -3.0], [0.0, -4.0, -4.0], [0, -0.5, 0]]),
        teacher_B=("a", "b", "c"),
    )
    res = compute_advantages(DistillParams(clip=2.5), inp)
    expected = torch.tensor([[0.0, 0.5, -1.0], [0.0, 0.0, 0.0], [0.0, 2.5, 0.0]])
    assert torch.equal(res.advantages_BL, expected)
    m = res.metrics
    assert m["distill/all/clipped_frac"] == 0.0
    assert m["distill/all/tokens"] == 3
    assert m["distill/all/gap_mean"] == pytest.approx(2 / 3)
    assert m["distill/all/gap_abs_mean"] == pytest.approx(4 / 3)
    assert (m["distill/c/tokens"], m["distill/c/clipped_frac"]) == (1, 0.0)
    assert m["distill/c/gap_mean"] == pytest.approx(2.5)
    assert m["distill/c/gap_abs_mean"] == pytest.approx(2.5)
    b = {k: m[f"distill/b/{k}"] for k in ("gap_mean", "gap_abs_mean", "clipped_frac", "tokens")}
    assert b == {"gap_mean": 0.0, "gap_abs_mean": 0.0, "clipped_frac": 0.0, "tokens": 0.0}
