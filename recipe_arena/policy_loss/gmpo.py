"""GMPO: the geometric mean of the clipped token objectives (Zhao et al. 2025,
"Geometric-Mean Policy Optimization", arXiv:2507.20673; verl's ``loss_mode: geo_mean``).

For row b with trained tokens T_b, advantage A_b and sign sigma_b = sgn(A_b), in log
space with rho_bt = logp_theta - logp_old:
    c_bt = clip(rho_bt, -eps_low, eps_high)
    m_bt = sigma_b * min(sigma_b * rho_bt, sigma_b * c_bt)      (the pessimistic branch)
    S_b  = exp( (1/|T_b|) sum_{t in T_b} m_bt )
    l_bt = -w_bt * A_b * S_b + beta * k3_bt + extra_bt           for t in T_b
which is the paper's objective (prod_t |min(r A, clip(r, e^-eps_low, e^eps_high) A)|)^(1/|o|)
sgn(A), per row. The geometric mean is less sensitive to one outlier token ratio than
GRPO's arithmetic mean, so the clip range can be wider (e^-0.4, e^0.4) and exploration
stays higher. A_b is the mean of the row's A_bt.

``loss.normalisation: sample`` is the paper's (1/G) sum_i; under ``token`` (the default)
each row's term counts once per trained token. ``w`` and ``extra`` are the staleness
strategy's; ``loss.clip_low``/``clip_high`` are not read (the clip is in log space).
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


class GMPOParams(StrategyParams):
    name: Literal["gmpo"] = "gmpo"
    clip_low: float = Field(0.4, ge=0, le=10, examples=[1.0])
    """Log-ratio clipped below at -clip_low (nats, >= 0): ratio >= e^-0.4 = 0.67 in the
    GMPO paper."""
    clip_high: float = Field(0.4, ge=0, le=10, examples=[0.1])
    """Log-ratio clipped above at clip_high (nats, >= 0): ratio <= e^0.4 = 1.49 in the
    GMPO paper."""


def gmpo_loss(inp: PolicyLossInput, params: GMPOParams) -> PolicyLossResult:
    """Geometric mean of the clipped token ratios, times -A (module docstring)."""
    mask_BL = inp.mask_BL.float()
    n_B = mask_BL.sum(-1)
    has_B = (n_B > 0).float()
    adv_B = (inp.advantages_BL * mask_BL).sum(-1) / n_B.clamp(min=1.0)
    sign_B1 = torch.sign(adv_B)[:, None]
    rho_BL = inp.logprobs_BL - inp.old_logprobs_BL.detach()
    c_BL = torch.clamp(rho_BL, -params.clip_low, params.clip_high)
    m_BL = sign_B1 * torch.minimum(sign_B1 * rho_BL, sign_B1 * c_BL)
    s_B = torch.exp((m_BL * mask_BL).sum(-1) / n_B.clamp(min=1.0))
    pg_BL = (-adv_B * s_B)[:, None] * mask_BL
    if inp.token_weights_BL is not None:
        pg_BL = pg_BL * inp.token_weights_BL.detach()
    n = mask_BL.sum().clamp(min=1.0)
    rows = max(float(has_B.sum()), 1.0)
    with torch.no_grad():
        clipped_BL = (sign_B1 * rho_BL > sign_B1 * c_BL).float()  # pessimistic branch clipped
        metrics = {
            "loss/clip_frac": float((clipped_BL * mask_BL).sum() / n),
            "loss/ratio_mean": float((s_B * has_B).sum()) / rows,
        }
    return finish_loss(pg_BL, inp, metrics)


STRATEGY = Strategy(GMPOParams, gmpo_loss)
