"""OlmoRL's policy loss (seed 'GRPO' and 'OLMoRL'; OLMo 3, arXiv:2512.13961), the
default of the ``policy_loss`` axis.

Per token t of sequence b, with ratio r = exp(logp_theta - logp_old):
    l_bt = -w_bt * min(r * A_bt, clip(r, 1 - eps_low, 1 + eps_high) * A_bt)
           + beta * k3_bt + extra_bt
    k3_bt = exp(logp_ref - logp_theta) - (logp_ref - logp_theta) - 1   (Schulman's k3)
then reduced over the trained tokens under ``loss.normalisation`` (``policy_loss.base``),
with eps_low, eps_high and beta the shared ``loss.clip_low``, ``loss.clip_high`` and
``loss.kl_beta``.
``w`` and ``extra`` come from the staleness strategy (TIS weights; Kimi's regulariser);
w multiplies the policy-gradient term only, never the KL.

Notes:
- With one minibatch and one epoch per batch, logp_old equals logp_theta in value, so
  r = 1 and the clip never binds; the gradient is still the policy gradient because r
  carries the gradient of logp_theta. The clip binds once a batch is reused.
- Clip fractions count trained tokens where the clipped branch is the active one.
"""

from __future__ import annotations

from typing import Literal

from recipe_arena.core.lazy import torch
from recipe_arena.policy_loss.base import PolicyLossInput, PolicyLossResult, finish_loss
from recipe_arena.strategy import Strategy, StrategyParams


class OlmoParams(StrategyParams):
    """OlmoRL's loss reads only the shared settings (``loss.*``)."""

    name: Literal["olmo"] = "olmo"


def olmo_loss(inp: PolicyLossInput, params: OlmoParams) -> PolicyLossResult:
    """OlmoRL token loss (module docstring), with clip fractions and KL in the metrics."""
    del params
    cfg = inp.cfg
    mask_BL = inp.mask_BL.float()
    adv_BL = inp.advantages_BL
    ratio_BL = torch.exp(inp.logprobs_BL - inp.old_logprobs_BL.detach())
    lo, hi = 1.0 - cfg.clip_low, 1.0 + cfg.clip_high
    unclipped_BL = ratio_BL * adv_BL
    clipped_BL = torch.clamp(ratio_BL, lo, hi) * adv_BL
    pg_BL = -torch.minimum(unclipped_BL, clipped_BL)
    if inp.token_weights_BL is not None:
        pg_BL = pg_BL * inp.token_weights_BL.detach()
    metrics: dict[str, float] = {}
    n = mask_BL.sum().clamp(min=1.0)
    with torch.no_grad():
        clip_low_BL = (adv_BL < 0) & (ratio_BL < lo)
        clip_high_BL = (adv_BL > 0) & (ratio_BL > hi)
        metrics["loss/clip_low_frac"] = float((clip_low_BL.float() * mask_BL).sum() / n)
        metrics["loss/clip_high_frac"] = float((clip_high_BL.float() * mask_BL).sum() / n)
        metrics["loss/ratio_mean"] = float((ratio_BL * mask_BL).sum() / n)
    return finish_loss(pg_BL, inp, metrics)


STRATEGY = Strategy(OlmoParams, olmo_loss)
