"""Gradient checks of the staleness strategies inside the loss, with current and old
logprobs that differ (a reused batch, or a policy that moved since sampling).

One token, A = +1, p_theta = 0.5 (the leaf whose gradient is checked), p_old = 0.4,
p_behaviour = 0.2, ratio r = 0.5 / 0.4 = 1.25 (inside the clip [0.8, 1.272]). The policy
term is -w r A, whose gradient in logp_theta is -w r A (dr/dlogp = r, w held fixed).
"""

from __future__ import annotations

import math

import pytest
import torch

from recipe_arena.core.types import LearnerBatch
from recipe_arena.policy_loss import LossConfig
from recipe_arena.staleness import KimiRegularizerParams, SharedQuantParams, TISParams
from recipe_arena.strategy import StrategyParams
from recipe_arena.wiring import strategy_loss


def _loss_and_grad(
    staleness: StrategyParams, kl_beta: float = 0.0, ref: float | None = None
) -> tuple[float, float]:
    logp = torch.tensor([[0.0, math.log(0.5)]], requires_grad=True)
    batch = LearnerBatch(
        tokens_BL=torch.tensor([[3, 4]]),
        mask_BL=torch.tensor([[0.0, 1.0]]),
        advantages_BL=torch.tensor([[0.0, 1.0]]),
        behavior_logprobs_BL=torch.tensor([[0.0, math.log(0.2)]]),
        versions_BL=torch.tensor([[-1, 0]]),
    )
    old = torch.tensor([[0.0, math.log(0.4)]])
    ref_BL = None if ref is None else torch.tensor([[0.0, ref]])
    out, _ = strategy_loss(staleness, LossConfig(kl_beta=kl_beta), 1, 0, batch, logp, old, ref_BL)
    out.loss.backward()
    assert logp.grad is not None
    return out.loss.item(), logp.grad[0, 1].item()


def test_tis_weight_from_old_logprobs_and_detached() -> None:
    """cap 3: w = min(0.4 / 0.2, 3) = 2 from pi_old (from pi_theta it would be 2.5), so
    loss = -2 x 1.25 = -2.5 and the gradient is -2.5 too; a w that carried gradient
    (w = p_theta / p_behaviour) would double it to -5."""
    loss, grad = _loss_and_grad(TISParams(cap=3.0))
    assert loss == pytest.approx(-2.5)
    assert grad == pytest.approx(-2.5)


def test_tis_weight_does_not_multiply_the_kl_term() -> None:
    """kl_beta 0.5, p_ref = 0.25: d = log(0.25 / 0.5), k3 = e^d - d - 1 = 0.5 + log 2 - 1
    = 0.193147, dk3/dlogp = 1 - e^d = 0.5. Loss = -2.5 + 0.5 k3 = -2.403426; gradient
    -2.5 + 0.5 x 0.5 = -2.25 (with w on the KL term too: -2.5 + 2 x 0.25 = -2.0)."""
    loss, grad = _loss_and_grad(TISParams(cap=3.0), kl_beta=0.5, ref=math.log(0.25))
    assert loss == pytest.approx(-2.5 + 0.5 * (0.5 + math.log(2) - 1))
    assert grad == pytest.approx(-2.25)


def test_extra_per_token_loss_is_kept() -> None:
    """Kimi's regulariser, tau 1: diff = log(0.5 / 0.2) = 0.916291, extra = diff^2 / 2 =
    0.419794, its gradient diff; w = 1, so loss = -1.25 + 0.419794 and gradient
    -1.25 + 0.916291 = -0.333709 (dropping the extra loss would leave -1.25)."""
    diff = math.log(2.5)
    for params in (
        KimiRegularizerParams(tau=1.0),
        SharedQuantParams(regularizer=KimiRegularizerParams(tau=1.0)),
    ):
        loss, grad = _loss_and_grad(params)
        assert loss == pytest.approx(-1.25 + diff**2 / 2)
        assert grad == pytest.approx(-1.25 + diff)
