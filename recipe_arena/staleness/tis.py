"""Truncated importance sampling (Yao et al. 2025, "Your efficient RL framework secretly
brings you off-policy RL training"; OLMo 3, arXiv:2512.13961, seed sec. 9.4).

    rho_t = min(exp(logp_trainer_old - logp_behavior), cap)

the trainer's probability of the sampled token over the engine's, capped so no token
dominates; it multiplies the token's policy-gradient term and carries no gradient.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from recipe_arena.core.lazy import torch
from recipe_arena.staleness.base import StalenessInput, StalenessResult, masked_mean
from recipe_arena.strategy import Strategy, StrategyParams


class TISParams(StrategyParams):
    name: Literal["tis"] = "tis"
    cap: float = Field(2.0, gt=0, examples=[1.5])
    """Upper bound of rho_t (unitless, > 0). 2.0 in OLMo 3's runs; a lower cap trades
    bias for variance when the engine and the trainer disagree."""


def truncated_importance_sampling(inp: StalenessInput, params: TISParams) -> StalenessResult:
    """rho_t = min(exp(logp_old - logp_behavior), cap); reports the fraction capped."""
    log_ratio_BL = (inp.old_logprobs_BL - inp.behavior_logprobs_BL).detach()
    raw_BL = torch.exp(log_ratio_BL)
    weights_BL = torch.clamp(raw_BL, max=params.cap) * inp.mask_BL
    return StalenessResult(
        token_weights_BL=weights_BL,
        extra_loss_BL=torch.zeros_like(inp.mask_BL),
        mask_BL=inp.mask_BL,
        metrics={
            "staleness/tis_capped_frac": masked_mean((raw_BL > params.cap).float(), inp.mask_BL),
            "staleness/tis_weight_mean": masked_mean(weights_BL, inp.mask_BL),
        },
    )


STRATEGY = Strategy(TISParams, truncated_importance_sampling)
