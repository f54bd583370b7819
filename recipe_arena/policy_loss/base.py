"""What every policy loss shares: its input and result, the settings every loss reads
(``LossConfig``: the normalisation rule, the clip range, the KL weight), and the
reductions.

A policy loss is a pure function ``fn(inp, params) -> PolicyLossResult`` of the batch's
trainer logprobs (with gradient), pi_old's, the advantages, the trained-token mask and
the staleness strategy's token weights and extra loss. It returns the loss as a
numerator and a count under the normalisation rule, reduced over the trained tokens
m_bt (the mask the staleness strategy returns):
    token:    sum_bt m l / sum_bt m                                  (DAPO, OLMo 3)
    sample:   sum_b [sum_t m l / sum_t m] / #{b : sum_t m > 0}       (GRPO)
    constant: sum_bt m l / (B * L_const)                             (Dr.GRPO)

Every rule's numerator is a sum over rows and its count a sum over rows, so a batch
split into row micro-batches has loss = sum_m numerator_m / sum_m count_m: the learner
back-propagates each micro-batch's numerator and divides the gradient by the whole
batch's count, which is the gradient of one forward over the batch whatever mask the
strategy returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from recipe_arena.core.hooks import LossTerms
from recipe_arena.core.lazy import torch
from recipe_arena.strategy import STRICT_CONFIG

NORMALISATIONS = ("token", "sample", "constant")


class LossConfig(BaseModel):
    """Settings every policy loss reads (``loss.*``); defaults are OLMo 3's."""

    model_config = STRICT_CONFIG
    normalisation: Literal["token", "sample", "constant"] = "token"
    """token: sum over batch tokens / total tokens (DAPO; OLMo 3: no length bias);
    sample: per-sequence mean then mean (GRPO); constant: sum / (B * rl.max_new_tokens)
    (Dr.GRPO)."""
    clip_low: float = Field(0.2, ge=0, le=1)
    """Ratio clipped below at 1 - clip_low (unitless, 0-1; 0.8 in OLMo 3)."""
    clip_high: float = Field(0.272, ge=0, le=10)
    """Ratio clipped above at 1 + clip_high (unitless; 1.272 in OLMo 3, DAPO's
    clip-higher: rewarded unlikely tokens can gain probability faster)."""
    kl_beta: float = Field(0.0, ge=0)
    """Weight of a k3 KL to the reference policy (>= 0); 0 in OLMo 3 (no KL: updates
    less restricted, training stayed stable)."""


@dataclass(frozen=True)
class PolicyLossInput:
    logprobs_BL: torch.Tensor
    old_logprobs_BL: torch.Tensor
    advantages_BL: torch.Tensor
    mask_BL: torch.Tensor
    """Trained tokens: the mask the staleness strategy returned."""
    cfg: LossConfig
    constant_len: int
    """L_const of ``constant`` normalisation (the response cap, rl.max_new_tokens)."""
    token_weights_BL: torch.Tensor | None = None
    extra_loss_BL: torch.Tensor | None = None
    ref_logprobs_BL: torch.Tensor | None = None


PolicyLossResult = LossTerms
"""loss (numerator / max(count, 1): the loss of this batch alone), numerator and count
(sums over rows, module docstring), metrics: what the learner's loss hook returns
(``core.hooks.LossTerms``)."""


def reduce(
    loss_BL: torch.Tensor, mask_BL: torch.Tensor, how: str, constant_len: int = 1
) -> tuple[torch.Tensor, float]:
    """(numerator, count) of one normalisation rule (module docstring); both are sums
    over rows, so micro-batches add up."""
    if how == "token":
        return (loss_BL * mask_BL).sum(), float(mask_BL.sum())
    if how == "sample":
        n_B = mask_BL.sum(-1)
        has_B = (n_B > 0).float()
        per_seq_B = (loss_BL * mask_BL).sum(-1) / n_B.clamp(min=1.0)
        return (per_seq_B * has_B).sum(), float(has_B.sum())
    if how == "constant":
        return (loss_BL * mask_BL).sum(), float(mask_BL.shape[0] * constant_len)
    raise ValueError(f"unknown normalisation {how!r}; allowed: {list(NORMALISATIONS)}")


def normalise(
    loss_BL: torch.Tensor, mask_BL: torch.Tensor, how: str, constant_len: int = 1
) -> torch.Tensor:
    """numerator / count of ``reduce`` (0 when nothing is trained)."""
    numerator, count = reduce(loss_BL, mask_BL, how, constant_len)
    return numerator / max(count, 1.0)


def k3_kl(logprobs_BL: torch.Tensor, ref_logprobs_BL: torch.Tensor) -> torch.Tensor:
    """k3 = exp(d) - d - 1 with d = logp_ref - logp_theta: unbiased, non-negative KL(theta||ref) estimate."""
    d_BL = ref_logprobs_BL - logprobs_BL
    return torch.exp(d_BL) - d_BL - 1.0


def finish_loss(
    pg_BL: torch.Tensor, inp: PolicyLossInput, metrics: dict[str, float]
) -> PolicyLossResult:
    """The shared tail of a loss: to each token's policy term ``pg_BL`` (the staleness
    weight already applied) add beta * k3 to the reference policy (``loss.kl_beta``) and
    the staleness strategy's extra loss, and reduce under ``loss.normalisation``.
    ``metrics`` gains ``loss/kl_ref`` (when beta > 0), ``loss/policy`` and ``loss/total``."""
    cfg = inp.cfg
    mask_BL = inp.mask_BL.float()
    loss_BL = pg_BL
    if cfg.kl_beta > 0:
        if inp.ref_logprobs_BL is None:
            raise ValueError("kl_beta > 0 needs ref_logprobs_BL (a reference model's logprobs)")
        kl_BL = k3_kl(inp.logprobs_BL, inp.ref_logprobs_BL.detach())
        loss_BL = loss_BL + cfg.kl_beta * kl_BL
        metrics["loss/kl_ref"] = float(normalise(kl_BL.detach(), mask_BL, "token"))
    if inp.extra_loss_BL is not None:
        loss_BL = loss_BL + inp.extra_loss_BL
    numerator, count = reduce(loss_BL, mask_BL, cfg.normalisation, inp.constant_len)
    loss = numerator / max(count, 1.0)
    with torch.no_grad():
        metrics["loss/policy"] = float(
            normalise(pg_BL.detach(), mask_BL, cfg.normalisation, inp.constant_len)
        )
        metrics["loss/total"] = float(loss.detach())
    return PolicyLossResult(loss=loss, numerator=numerator, count=count, metrics=metrics)
