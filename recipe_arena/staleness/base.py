"""The shape every staleness strategy shares: a pure function of tensors.

A strategy sees the trainer's current logprobs (with gradient), the trainer's logprobs
before the step (``old``, no gradient), the engine's behaviour logprobs, advantages,
the trained-token mask and each token's policy version. It returns any of: per-token
weights multiplying the policy-gradient term, an extra per-token loss added to it, and
a token mask (a sequence mask is a token mask constant along a row). The loss then
normalises over the returned mask.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class StalenessParams:
    """The scalars strategies read; each uses only its own."""

    tis_cap: float = 2.0
    kimi_tau: float = 0.1
    deepseek_delta: float = 0.1
    deepseek_k: int = 1


@dataclass(frozen=True)
class StalenessInput:
    logprobs_BL: torch.Tensor
    """log pi_theta (current trainer forward, carries gradient)."""
    old_logprobs_BL: torch.Tensor
    """log pi_old: trainer forward with the weights before this step (no gradient)."""
    behavior_logprobs_BL: torch.Tensor
    """log pi_behavior: what the engine sampled with."""
    advantages_BL: torch.Tensor
    mask_BL: torch.Tensor
    versions_BL: torch.Tensor
    learner_version: int
    params: StalenessParams = field(default_factory=StalenessParams)


@dataclass(frozen=True)
class StalenessResult:
    token_weights_BL: torch.Tensor
    """Multiplies each token's policy-gradient loss (no gradient)."""
    extra_loss_BL: torch.Tensor
    """Added to each token's loss before normalisation."""
    mask_BL: torch.Tensor
    """Tokens that remain trained (a subset of the input mask)."""
    metrics: dict[str, float]


StalenessFn = Callable[[StalenessInput], StalenessResult]
