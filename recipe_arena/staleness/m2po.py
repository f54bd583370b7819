"""M2PO: mask the tokens of largest squared log-ratio until the batch's second moment is
under a threshold (Zheng et al. 2025, "Prosperity before Collapse: How Far Can
Off-Policy RL Reach with Stale Data on LLMs?", arXiv:2510.01161; AReaL's
``m2_threshold``).

    d_t  = logp_old(y_t) - logp_behavior(y_t)             (log pi_train / pi_stale)
    sort the trained tokens by d_t^2, largest first: s_1 >= s_2 >= ... >= s_N
    k*   = min { k : (sum_{i>k} s_i) / (N - k) <= tau }   (k = N: nothing left, M2 = 0)
    the k* tokens of largest d_t^2 are masked;  w_t = 1

The second moment M2 = mean d^2 bounds both the KL and the variance a stale batch adds
(unlike a per-token clip, it looks at the batch), and masking only its largest
contributors keeps most stale tokens trained. The loss normalises over the kept tokens.

Deviations: M2PO also removes the PPO clip; here the policy loss axis keeps its own
(``policy_loss``). M2 is taken over the tokens the strategy sees at once: the whole
batch with ``rl.microbatch_tokens: null``, else each length-bucketed micro-batch (the
learner applies the strategy per micro-batch); ties in d^2 are masked in row-major
order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from recipe_arena.staleness.base import StalenessInput, StalenessResult, masked_mean
from recipe_arena.strategy import Strategy, StrategyParams

if TYPE_CHECKING:
    import torch
else:
    from recipe_arena.core.lazy import torch


class M2POParams(StrategyParams):
    name: Literal["m2po"] = "m2po"
    m2_threshold: float = Field(0.04, ge=0, examples=[1.0])
    """tau: the largest mean squared log-ratio the kept tokens may have (nats^2, >= 0);
    0.04 in the M2PO paper and AReaL."""


def m2po(inp: StalenessInput, params: M2POParams) -> StalenessResult:
    """Mask the fewest largest-d^2 tokens so the rest have mean d^2 <= tau (module docstring)."""
    mask = inp.mask_BL > 0
    d2_BL = (inp.old_logprobs_BL - inp.behavior_logprobs_BL).detach().float().square()
    s_N = d2_BL[mask]
    n = s_N.numel()
    keep = mask.clone()
    m2 = float(s_N.mean()) if n else 0.0
    if n:
        order_N = torch.sort(s_N, descending=True, stable=True).indices
        sorted_N = s_N[order_N]
        # mean of what is left after masking the k largest, k = 0..N-1
        rest_N = sorted_N.flip(0).cumsum(0).flip(0)
        left_N = torch.arange(n, 0, -1, device=s_N.device, dtype=s_N.dtype)
        ok_N = rest_N / left_N <= params.m2_threshold
        k = int(ok_N.float().argmax()) if bool(ok_N.any()) else n
        drop_N = torch.zeros(n, dtype=torch.bool, device=s_N.device)
        drop_N[order_N[:k]] = True
        keep[mask] = ~drop_N
    keep_BL = keep.to(inp.mask_BL.dtype)
    kept = d2_BL[keep]
    return StalenessResult(
        token_weights_BL=torch.ones_like(inp.mask_BL),
        extra_loss_BL=torch.zeros_like(inp.mask_BL),
        mask_BL=keep_BL,
        metrics={
            "staleness/m2": m2,
            "staleness/m2_kept": float(kept.mean()) if kept.numel() else 0.0,
            "staleness/m2po_masked_frac": masked_mean(1.0 - keep_BL, inp.mask_BL),
        },
    )


STRATEGY = Strategy(M2POParams, m2po)
