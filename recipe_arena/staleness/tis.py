"""Truncated importance sampling (Yao et al. 2025; OLMo 3, seed sec. 9.4).

rho_t = min(exp(log pi_old(y_t) - log pi_behavior(y_t)), cap): the trainer's probability
over the engine's, capped so no token dominates. OLMo 3 used cap = 2.0.
"""

from __future__ import annotations

import torch

from recipe_arena.staleness.base import StalenessInput, StalenessResult


def truncated_importance_sampling(inp: StalenessInput) -> StalenessResult:
    """rho_t = min(exp(logp_old - logp_behavior), cap); reports the fraction capped."""
    cap = inp.params.tis_cap
    log_ratio_BL = (inp.old_logprobs_BL - inp.behavior_logprobs_BL).detach()
    raw_BL = torch.exp(log_ratio_BL)
    weights_BL = torch.clamp(raw_BL, max=cap) * inp.mask_BL
    n = inp.mask_BL.sum().clamp(min=1.0)
    capped = ((raw_BL > cap).float() * inp.mask_BL).sum() / n
    mean_w = weights_BL.sum() / n
    return StalenessResult(
        token_weights_BL=weights_BL,
        extra_loss_BL=torch.zeros_like(inp.mask_BL),
        mask_BL=inp.mask_BL,
        metrics={
            "staleness/tis_capped_frac": float(capped),
            "staleness/tis_weight_mean": float(mean_w),
        },
    )
