"""Advantage strategies, checked against the seed's worked example; the registry."""

from __future__ import annotations

import pytest
import torch

from recipe_arena.advantages import (
    ADVANTAGES,
    AdvantageInput,
    CenteredParams,
    StandardParams,
    compute_advantages,
)
from recipe_arena.strategy import StrategyParams

SEED_EXAMPLE = [1, 0, 0, 1, 0, 0, 0, 1]


def _inp(rewards: list[float], groups: list[int] | None = None, tokens: int = 2) -> AdvantageInput:
    b = len(rewards)
    return AdvantageInput(
        rewards_B=torch.tensor(rewards, dtype=torch.float32),
        group_B=torch.tensor(groups or [0] * b),
        mask_BL=torch.ones(b, tokens),
        behavior_logprobs_BL=torch.zeros(b, tokens),
    )


def test_seed_worked_example_centered() -> None:
    """r = (1,0,0,1,0,0,0,1): mean = 3/8 = 0.375, so A = +0.625 for correct, -0.375 for
    wrong, on every completion token of the row."""
    a = compute_advantages(CenteredParams(), _inp(SEED_EXAMPLE)).advantages_BL
    expected = torch.tensor([0.625, -0.375, -0.375, 0.625, -0.375, -0.375, -0.375, 0.625])
    assert torch.allclose(a, expected[:, None].expand(8, 2))


def test_standard_divides_by_population_std() -> None:
    """std of (1,0,0,1,0,0,0,1) = sqrt(p(1-p)) with p = 3/8 = sqrt(15/64) = 0.48412;
    A_correct = 0.625 / (0.48412 + 1e-6) = 1.29099, A_wrong = -0.375 / 0.48412 = -0.77460."""
    a = compute_advantages(StandardParams(), _inp(SEED_EXAMPLE)).advantages_BL
    assert a[0, 0].item() == pytest.approx(1.290994, abs=1e-5)
    assert a[1, 1].item() == pytest.approx(-0.774597, abs=1e-5)


def test_std_eps_keeps_a_constant_group_finite() -> None:
    """(1, 1): centred 0, std 0, so A = 0 / (0 + eps) = 0 for any eps (no NaN); (0.5, 1)
    with eps 0.25: std 0.25, A = -0.25 / (0.25 + 0.25) = -0.5 (eps is read)."""
    a = compute_advantages(StandardParams(std_eps=1e-6), _inp([1.0, 1.0])).advantages_BL
    assert torch.equal(a, torch.zeros(2, 2))
    b = compute_advantages(StandardParams(std_eps=0.25), _inp([0.5, 1.0])).advantages_BL
    assert b[0, 0].item() == pytest.approx(-0.5)


def test_reward_scale_multiplies_centered_advantage() -> None:
    """Scale 10 (open-instruct): A = 10 r - mean(10 r) = 10 * (+0.625) = 6.25."""
    a = compute_advantages(CenteredParams(reward_scale=10.0), _inp(SEED_EXAMPLE)).advantages_BL
    assert a[0, 0].item() == pytest.approx(6.25)


def test_groups_are_centred_separately_and_padding_gets_zero() -> None:
    """Rows (1, 0 | 0.5, 0.5, 1) in groups 0 and 1: group means 0.5 and 2/3, so A = (0.5,
    -0.5, -1/6, -1/6, 1/3); a masked token (padding) gets 0 whatever its row's A."""
    inp = _inp([1.0, 0.0, 0.5, 0.5, 1.0], groups=[0, 0, 1, 1, 1])
    mask = inp.mask_BL.clone()
    mask[0, 1] = 0.0
    inp = AdvantageInput(inp.rewards_B, inp.group_B, mask, inp.behavior_logprobs_BL)
    a = compute_advantages(CenteredParams(), inp).advantages_BL
    assert torch.allclose(a[:, 0], torch.tensor([0.5, -0.5, -1 / 6, -1 / 6, 1 / 3]))
    assert a[0, 1].item() == 0.0


def test_registry_is_a_plain_dict_and_unknown_names_fail() -> None:
    assert isinstance(ADVANTAGES, dict) and {"centered", "distill", "standard"} <= set(ADVANTAGES)
    with pytest.raises(ValueError, match="not in this registry"):
        compute_advantages(StrategyParams(name="nope"), _inp([1.0, 0.0]))
