"""GSPO: the importance ratio and its clip at the sequence level (Zheng et al. 2025,
"Group Sequence Policy Optimization", arXiv:2507.18071; verl's ``loss_mode: gspo``,
TRL's ``importance_sampling_level="sequence"``, OpenRLHF's ``--policy_loss_type gspo``).

For row b with trained tokens T_b (the staleness strategy's mask) and advantage A_b:
    s_b  = exp( (1/|T_b|) sum_{t in T_b} (logp_theta(y_bt) - logp_old(y_bt)) )
    l_bt = -w_bt * min(s_b A_b, clip(s_b, 1 - eps_low, 1 + eps_high) A_b)
           + beta * k3_bt + extra_bt                          for t in T_b
then reduced under ``loss.normalisation`` (``policy_loss.base``). s_b is the geometric
mean of the token ratios, so the whole row is kept or clipped together, and a row's
gradient is A_b s_b times the mean of its tokens' grad logp (length-normalised within the
row): one token's noise cannot dominate the update, which is what stabilises MoE RL in
the paper. A_b is the mean of the row's A_bt (all equal under outcome rewards).

``loss.normalisation: sample`` is the paper's (1/G) sum_i; under ``token`` (the default)
each row's term counts once per trained token. ``w`` and ``extra`` are the staleness
strategy's; ``loss.clip_low``/``clip_high`` (OLMo's token clip) are not read: the
sequence ratio has its own, much narrower, range.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from recipe_arena.policy_loss.base import PolicyLossInput, PolicyLossResult, finish_loss
from recipe_arena.strategy import Strategy, StrategyParams

if TYPE_CHECKING:
    import torch
else:
    from recipe_arena.core.lazy import torch


class GSPOParams(StrategyParams):
    name: Literal["gspo"] = "gspo"
    clip_low: float = Field(3e-4, ge=0, le=1, examples=[0.5])
    """s_b clipped below at 1 - clip_low (unitless, 0-1); 3e-4 in the GSPO paper (a
    sequence ratio is a geometric mean, so it moves far less than a token ratio)."""
    clip_high: float = Field(4e-4, ge=0, le=10, examples=[0.5])
    """s_b clipped above at 1 + clip_high (unitless, >= 0); 4e-4 in the GSPO paper."""


def gspo_loss(inp: PolicyLossInput, params: GSPOParams) -> PolicyLossResult:
    """Sequence-level ratio and clip (module docstring); clip fractions count rows."""
    mask_BL = inp.mask_BL.float()
    n_B = mask_BL.sum(-1)
    has_B = (n_B > 0).float()
    log_r_BL = (inp.logprobs_BL - inp.old_logprobs_BL.detach()) * mask_BL
    s_B = torch.exp(log_r_BL.sum(-1) / n_B.clamp(min=1.0))
    adv_B = (inp.advantages_BL * mask_BL).sum(-1) / n_B.clamp(min=1.0)
    lo, hi = 1.0 - params.clip_low, 1.0 + params.clip_high
    term_B = -torch.minimum(s_B * adv_B, torch.clamp(s_B, lo, hi) * adv_B)
    pg_BL = term_B[:, None] * mask_BL
    if inp.token_weights_BL is not None:
        pg_BL = pg_BL * inp.token_weights_BL.detach()
    rows = max(float(has_B.sum()), 1.0)
    with torch.no_grad():
        metrics = {
            "loss/clip_low_frac": float((((adv_B < 0) & (s_B < lo)).float() * has_B).sum()) / rows,
            "loss/clip_high_frac": float((((adv_B > 0) & (s_B > hi)).float() * has_B).sum()) / rows,
            "loss/ratio_mean": float((s_B * has_B).sum()) / rows,
        }
    return finish_loss(pg_BL, inp, metrics)


STRATEGY = Strategy(GSPOParams, gspo_loss)
