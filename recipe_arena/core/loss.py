"""OlmoRL's policy loss as one pure function (seed 'GRPO' and 'OLMoRL').

Per token t of sequence b, with ratio r = exp(logp_theta - logp_old):
    l_bt = -w_bt * min(r * A_bt, clip(r, 1 - eps_low, 1 + eps_high) * A_bt)
           + beta * k3_bt + extra_bt
    k3_bt = exp(logp_ref - logp_theta) - (logp_ref - logp_theta) - 1   (Schulman's k3)
then normalised over trained tokens (``token``: sum / total tokens, DAPO; ``sample``:
per-sequence mean, then mean over sequences, GRPO; ``constant``: sum / (B * L_const),
Dr.GRPO). ``w`` comes from the staleness strategy (TIS weights), ``extra`` from it too
(e.g. Kimi's regulariser).

Notes:
- With one minibatch and one epoch per batch, logp_old equals logp_theta in value, so
  r = 1 and the clip never binds; the gradient is still the policy gradient because r
  carries the gradient of logp_theta. The clip binds once a batch is reused.
- Clip fractions count tokens where the clipped branch is the active one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

NORMALISATIONS = ("token", "sample", "constant")


@dataclass(frozen=True)
class PolicyLossInput:
    logprobs_BL: torch.Tensor
    old_logprobs_BL: torch.Tensor
    advantages_BL: torch.Tensor
    mask_BL: torch.Tensor
    token_weights_BL: torch.Tensor | None = None
    extra_loss_BL: torch.Tensor | None = None
    ref_logprobs_BL: torch.Tensor | None = None
    clip_low: float = 0.2
    clip_high: float = 0.272
    normalisation: str = "token"
    kl_beta: float = 0.0
    constant_len: int = 1
    """L_const of ``constant`` normalisation (the response cap)."""


@dataclass(frozen=True)
class PolicyLossResult:
    loss: torch.Tensor
    metrics: dict[str, float]


def normalise(
    loss_BL: torch.Tensor, mask_BL: torch.Tensor, how: str, constant_len: int = 1
) -> torch.Tensor:
    """Reduce per-token losses to a scalar; see the module docstring for the three rules."""
    if how == "token":
        return (loss_BL * mask_BL).sum() / mask_BL.sum().clamp(min=1.0)
    if how == "sample":
        per_seq_B = (loss_BL * mask_BL).sum(-1) / mask_BL.sum(-1).clamp(min=1.0)
        has_tokens_B = (mask_BL.sum(-1) > 0).float()
        return (per_seq_B * has_tokens_B).sum() / has_tokens_B.sum().clamp(min=1.0)
    if how == "constant":
        return (loss_BL * mask_BL).sum() / (loss_BL.shape[0] * constant_len)
    raise ValueError(f"unknown normalisation {how!r}; allowed: {list(NORMALISATIONS)}")


def normaliser_count(mask_BL: torch.Tensor, how: str, constant_len: int = 1) -> float:
    """The denominator ``normalise`` divides by: trained tokens (``token``), sequences
    with a trained token (``sample``), B * L_const (``constant``).

    Every rule is a sum over rows divided by this count, so a batch split into row
    micro-batches m has loss = sum_m normalise(m) * count(m) / count(batch): gradient
    accumulation that leaves the gradient unchanged."""
    if how == "token":
        return float(mask_BL.sum())
    if how == "sample":
        return float((mask_BL.sum(-1) > 0).sum())
    if how == "constant":
        return float(mask_BL.shape[0] * constant_len)
    raise ValueError(f"unknown normalisation {how!r}; allowed: {list(NORMALISATIONS)}")


def k3_kl(logprobs_BL: torch.Tensor, ref_logprobs_BL: torch.Tensor) -> torch.Tensor:
    """k3 = exp(d) - d - 1 with d = logp_ref - logp_theta: unbiased, non-negative KL(theta||ref) estimate."""
    d_BL = ref_logprobs_BL - logprobs_BL
    return torch.exp(d_BL) - d_BL - 1.0


def policy_loss(inp: PolicyLossInput) -> PolicyLossResult:
    """OlmoRL token loss (module docstring), with clip fractions and KL in the metrics."""
    mask_BL = inp.mask_BL.float()
    adv_BL = inp.advantages_BL
    ratio_BL = torch.exp(inp.logprobs_BL - inp.old_logprobs_BL.detach())
    lo, hi = 1.0 - inp.clip_low, 1.0 + inp.clip_high
    unclipped_BL = ratio_BL * adv_BL
    clipped_BL = torch.clamp(ratio_BL, lo, hi) * adv_BL
    pg_BL = -torch.minimum(unclipped_BL, clipped_BL)
    if inp.token_weights_BL is not None:
        pg_BL = pg_BL * inp.token_weights_BL.detach()
    loss_BL = pg_BL
    metrics: dict[str, float] = {}
    if inp.kl_beta > 0:
        if inp.ref_logprobs_BL is None:
            raise ValueError("kl_beta > 0 needs ref_logprobs_BL (a reference model's logprobs)")
        kl_BL = k3_kl(inp.logprobs_BL, inp.ref_logprobs_BL.detach())
        loss_BL = loss_BL + inp.kl_beta * kl_BL
        metrics["loss/kl_ref"] = float(normalise(kl_BL.detach(), mask_BL, "token"))
    if inp.extra_loss_BL is not None:
        loss_BL = loss_BL + inp.extra_loss_BL
    loss = normalise(loss_BL, mask_BL, inp.normalisation, inp.constant_len)

    n = mask_BL.sum().clamp(min=1.0)
    with torch.no_grad():
        clip_low_BL = (adv_BL < 0) & (ratio_BL < lo)
        clip_high_BL = (adv_BL > 0) & (ratio_BL > hi)
        metrics["loss/clip_low_frac"] = float((clip_low_BL.float() * mask_BL).sum() / n)
        metrics["loss/clip_high_frac"] = float((clip_high_BL.float() * mask_BL).sum() / n)
        metrics["loss/ratio_mean"] = float((ratio_BL * mask_BL).sum() / n)
        metrics["loss/policy"] = float(
            normalise(pg_BL.detach(), mask_BL, inp.normalisation, inp.constant_len)
        )
        metrics["loss/total"] = float(loss.detach())
    return PolicyLossResult(loss=loss, metrics=metrics)
