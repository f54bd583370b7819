"""Staleness strategies: TIS weights and cap, the no-op baseline, the registry."""

from __future__ import annotations

import math

import pytest
import torch

from recipe_arena.staleness import STALENESS, StalenessInput, StalenessParams, get_staleness


def _inp(old: list[float], behavior: list[float], cap: float = 2.0) -> StalenessInput:
    n = len(old)
    return StalenessInput(
        logprobs_BL=torch.tensor([old]),
        old_logprobs_BL=torch.tensor([old]),
        behavior_logprobs_BL=torch.tensor([behavior]),
        advantages_BL=torch.ones(1, n),
        mask_BL=torch.ones(1, n),
        versions_BL=torch.zeros(1, n, dtype=torch.long),
        learner_version=0,
        params=StalenessParams(tis_cap=cap),
    )


def test_tis_weight_is_trainer_over_engine_probability_capped() -> None:
    """p_trainer/p_engine: 0.5/0.4 = 1.25 (kept), 0.9/0.3 = 3 -> cap 2, 0.2/0.4 = 0.5 (kept).
    One of three tokens hits the cap: fraction capped 1/3; mean weight (1.25+2+0.5)/3 = 1.25."""
    old = [math.log(0.5), math.log(0.9), math.log(0.2)]
    beh = [math.log(0.4), math.log(0.3), math.log(0.4)]
    out = get_staleness("tis")(_inp(old, beh, cap=2.0))
    assert torch.allclose(out.token_weights_BL, torch.tensor([[1.25, 2.0, 0.5]]), atol=1e-6)
    assert out.metrics["staleness/tis_capped_frac"] == pytest.approx(1 / 3)
    assert out.metrics["staleness/tis_weight_mean"] == pytest.approx(1.25)


def test_tis_cap_changes_which_tokens_are_capped() -> None:
    """Cap 1.0: 1.25 and 3 are capped to 1, 0.5 stays: fraction 2/3."""
    old = [math.log(0.5), math.log(0.9), math.log(0.2)]
    beh = [math.log(0.4), math.log(0.3), math.log(0.4)]
    out = get_staleness("tis")(_inp(old, beh, cap=1.0))
    assert torch.allclose(out.token_weights_BL, torch.tensor([[1.0, 1.0, 0.5]]), atol=1e-6)
    assert out.metrics["staleness/tis_capped_frac"] == pytest.approx(2 / 3)


def test_none_leaves_everything_unchanged() -> None:
    out = get_staleness("none")(_inp([-1.0, -2.0], [-3.0, -0.1]))
    assert torch.equal(out.token_weights_BL, torch.ones(1, 2))
    assert torch.equal(out.extra_loss_BL, torch.zeros(1, 2))


def test_registry_is_a_plain_dict_and_unknown_names_fail() -> None:
    assert isinstance(STALENESS, dict) and {"tis", "none"} <= set(STALENESS)
    with pytest.raises(ValueError, match="available"):
        get_staleness("kimi_regularizerx")
