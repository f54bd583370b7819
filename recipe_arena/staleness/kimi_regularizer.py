"""Kimi K3's per-token regulariser (Kimi Team 2026, "Kimi K3", arXiv:2607.24653; seed
Table 9.2, row "Stale data").

    extra_t = tau / 2 * (logp_theta(y_t) - logp_behavior(y_t))^2

added to each token's loss: a quadratic pull of the trainer's log-probability towards
the one the rollout was sampled with, which keeps rollouts that span several training
iterations (stale data) from moving the policy far from what generated them. Its
gradient is tau * (logp_theta - logp_behavior) * grad logp_theta.

Deviation: the report gives no value of tau; 0.1 is ours (the regulariser then costs
about as much as one token's policy term at a log-ratio of 1).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from recipe_arena.core.lazy import torch
from recipe_arena.staleness.base import StalenessInput, StalenessResult, masked_mean
from recipe_arena.strategy import Strategy, StrategyParams


class KimiRegularizerParams(StrategyParams):
    name: Literal["kimi_regularizer"] = "kimi_regularizer"
    tau: float = Field(0.1, ge=0, examples=[0.5])
    """Weight of the quadratic penalty (per token, in nats^-2 of log-ratio; >= 0). Not
    published for Kimi K3; 0 turns the penalty off."""


def kimi_regularizer(inp: StalenessInput, params: KimiRegularizerParams) -> StalenessResult:
    """extra_t = tau/2 (logp_theta - logp_behavior)^2 on trained tokens; w_t = 1."""
    diff_BL = inp.logprobs_BL - inp.behavior_logprobs_BL.detach()
    extra_BL = 0.5 * params.tau * diff_BL.square() * inp.mask_BL
    return StalenessResult(
        token_weights_BL=torch.ones_like(inp.mask_BL),
        extra_loss_BL=extra_BL,
        mask_BL=inp.mask_BL,
        metrics={"staleness/kimi_regularizer": masked_mean(extra_BL.detach(), inp.mask_BL)},
    )


STRATEGY = Strategy(KimiRegularizerParams, kimi_regularizer)
