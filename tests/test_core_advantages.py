"""Group-relative advantages, checked against the seed's worked example."""

from __future__ import annotations

import pytest
import torch

from recipe_arena.core.advantages import compute_advantages


def test_seed_worked_example_centered() -> None:
    """r = (1,0,0,1,0,0,0,1): mean = 3/8 = 0.375, so A = +0.625 for correct, -0.375 for wrong."""
    r = torch.tensor([1, 0, 0, 1, 0, 0, 0, 1], dtype=torch.float32)
    a = compute_advantages(r, "centered")
    expected = torch.tensor([0.625, -0.375, -0.375, 0.625, -0.375, -0.375, -0.375, 0.625])
    assert torch.allclose(a, expected)


def test_standard_divides_by_population_std() -> None:
    """std of (1,0,0,1,0,0,0,1) = sqrt(p(1-p)) with p = 3/8 = sqrt(15/64) = 0.48412;
    A_correct = 0.625 / 0.48412 = 1.29099, A_wrong = -0.375 / 0.48412 = -0.77460."""
    r = torch.tensor([1, 0, 0, 1, 0, 0, 0, 1], dtype=torch.float32)
    a = compute_advantages(r, "standard", std_eps=0.0)
    assert a[0].item() == pytest.approx(1.290994, abs=1e-5)
    assert a[1].item() == pytest.approx(-0.774597, abs=1e-5)


def test_reward_scale_multiplies_centered_advantage() -> None:
    """Scale 10 (open-instruct): A = 10 r - mean(10 r) = 10 * (+0.625) = 6.25."""
    r = torch.tensor([1, 0, 0, 1, 0, 0, 0, 1], dtype=torch.float32)
    assert compute_advantages(r, "centered", reward_scale=10.0)[0].item() == pytest.approx(6.25)


def test_unknown_advantage_names_allowed() -> None:
    with pytest.raises(ValueError, match="allowed"):
        compute_advantages(torch.zeros(2), "nope")
