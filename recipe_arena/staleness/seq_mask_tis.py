"""Sequence-masked truncated importance sampling (Liu, Li et al. 2025, "When Speed Kills
Stability: Demystifying RL Collapse from the Training-Inference Mismatch", geometric
rejection; OpenRLHF's and NeMo-RL's ``seq-mask-tis``, verl's ``rollout_rs: geometric``
with token ``rollout_is``).

    r_bt  = exp(logp_old(y_bt) - logp_behavior(y_bt))      (pi_train / pi_infer)
    g_b   = exp(mean_t log r_bt)                           (geometric mean over the row's
                                                           trained tokens)
    row b masked  iff  g_b < low  or  g_b > high
    w_bt  = min(r_bt, cap)  on the rows kept               (token-level TIS)

The geometric mean is length-invariant (a product of ratios would reject long rows for
their length alone), so a row is rejected when its tokens disagree on average, and the
tokens of the rows kept are corrected one by one.

Deviation: OpenRLHF and NeMo-RL weight the kept tokens by the untruncated r_bt; the
default here truncates at ``cap`` as ``tis`` does (``cap: null`` is their form).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from recipe_arena.staleness.base import StalenessInput, StalenessResult, masked_mean
from recipe_arena.strategy import Strategy, StrategyParams

if TYPE_CHECKING:
    import torch
else:
    from recipe_arena.core.lazy import torch


class SeqMaskTISParams(StrategyParams):
    name: Literal["seq_mask_tis"] = "seq_mask_tis"
    low: float = Field(0.999, gt=0, examples=[0.5])
    """Lower edge of the kept band of g_b (unitless, > 0); 0.999 in verl's geometric
    rejection preset (a row whose mean per-token log-ratio is under -1e-3 nats)."""
    high: float = Field(1.001, gt=0, examples=[2.0])
    """Upper edge of the kept band of g_b (unitless, > low); 1.001 in verl's preset."""
    cap: float | None = Field(2.0, gt=0, examples=[1.5])
    """Upper bound of the token weight min(r_bt, cap) on kept rows (unitless, > 0; 2.0 as
    ``tis``); null: untruncated r_bt (OpenRLHF, NeMo-RL)."""

    @model_validator(mode="after")
    def _band(self) -> SeqMaskTISParams:
        if self.low >= self.high:
            raise ValueError(f"seq_mask_tis needs low < high, got {self.low} >= {self.high}")
        return self


def seq_mask_tis(inp: StalenessInput, params: SeqMaskTISParams) -> StalenessResult:
    """Drop rows whose geometric-mean ratio leaves [low, high]; TIS on the rest."""
    mask_BL = inp.mask_BL
    log_r_BL = (inp.old_logprobs_BL - inp.behavior_logprobs_BL).detach() * mask_BL
    n_B = mask_BL.sum(-1)
    g_B = torch.exp(log_r_BL.sum(-1) / n_B.clamp(min=1.0))
    keep_B = ((g_B >= params.low) & (g_B <= params.high)).float()
    keep_BL = mask_BL * keep_B[:, None]
    r_BL = torch.exp(log_r_BL)
    w_BL = r_BL if params.cap is None else torch.clamp(r_BL, max=params.cap)
    has_B = (n_B > 0).float()
    return StalenessResult(
        token_weights_BL=w_BL * keep_BL,
        extra_loss_BL=torch.zeros_like(mask_BL),
        mask_BL=keep_BL,
        metrics={
            "staleness/seq_masked_frac": float(((1.0 - keep_B) * has_B).sum())
            / max(float(has_B.sum()), 1.0),
            "staleness/seq_geo_ratio_mean": float((g_B * has_B).sum())
            / max(float(has_B.sum()), 1.0),
            "staleness/seq_mask_tis_capped_frac": 0.0
            if params.cap is None
            else masked_mean((r_BL > params.cap).float(), keep_BL),
        },
    )


STRATEGY = Strategy(SeqMaskTISParams, seq_mask_tis)
