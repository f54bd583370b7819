"""CISPO: REINFORCE weighted by a clipped, stop-gradient importance ratio (MiniMax 2025,
"MiniMax-M1: Scaling Test-Time Compute Efficiently with Lightning Attention",
arXiv:2506.13585, sec. 3.1; verl's ``loss_mode: cispo``, TRL's ``loss_type="cispo"``).

Per trained token t of row b, with r_bt = exp(logp_theta - logp_old):
    l_bt = -w_bt * sg(clip(r_bt, 1 - eps_low, 1 + eps_high)) * A_bt * logp_theta(y_bt)
           + beta * k3_bt + extra_bt
then reduced under ``loss.normalisation`` (``policy_loss.base``; ``token`` is the
paper's 1 / sum_i |o_i|). sg is the stop-gradient, so the gradient of a token is
-w sg(r^) A grad logp_theta: the clip bounds the weight, never the update, and no token
leaves the gradient (PPO's clip zeroes the gradient of clipped tokens, among them the
rare "reflective" tokens the paper finds important for long reasoning). ``w`` and
``extra`` are the staleness strategy's.

The reported ``loss/policy`` is this surrogate's value (-A logp, not -r A), so it is not
comparable in level with the ratio losses'; its gradient is.
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


class CISPOParams(StrategyParams):
    name: Literal["cispo"] = "cispo"
    clip_low: float = Field(1.0, ge=0, le=1, examples=[0.2])
    """IS weight clipped below at 1 - clip_low (unitless, 0-1); 1.0, no lower bound, as
    in the paper (which tunes only the upper one)."""
    clip_high: float = Field(0.28, ge=0, le=10, examples=[1.0])
    """IS weight clipped above at 1 + clip_high (unitless, >= 0). The paper does not
    publish its value; 0.28 is Trinity-RFT's CISPO default (DAPO's clip-higher)."""


def cispo_loss(inp: PolicyLossInput, params: CISPOParams) -> PolicyLossResult:
    """-sg(clip(r)) A logp_theta per token (module docstring); clip fractions count tokens."""
    mask_BL = inp.mask_BL.float()
    ratio_BL = torch.exp(inp.logprobs_BL - inp.old_logprobs_BL).detach()
    lo, hi = 1.0 - params.clip_low, 1.0 + params.clip_high
    weight_BL = torch.clamp(ratio_BL, lo, hi)
    pg_BL = -weight_BL * inp.advantages_BL * inp.logprobs_BL
    if inp.token_weights_BL is not None:
        pg_BL = pg_BL * inp.token_weights_BL.detach()
    n = mask_BL.sum().clamp(min=1.0)
    with torch.no_grad():
        metrics = {
            "loss/clip_low_frac": float(((ratio_BL < lo).float() * mask_BL).sum() / n),
            "loss/clip_high_frac": float(((ratio_BL > hi).float() * mask_BL).sum() / n),
            "loss/ratio_mean": float((ratio_BL * mask_BL).sum() / n),
        }
    return finish_loss(pg_BL, inp, metrics)


STRATEGY = Strategy(CISPOParams, cispo_loss)
