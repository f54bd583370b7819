"""The shape every staleness strategy shares: a pure function of tensors.

A strategy sees the trainer's current logprobs (with gradient), the trainer's logprobs
before the step (``old``, no gradient), the engine's behaviour logprobs, advantages,
the trained-token mask and each token's policy version. It returns per-token weights
multiplying the policy-gradient term, an extra per-token loss added to it, and the mask
of tokens that stay trained (a sequence mask is a token mask constant along a row). The
loss then normalises over the returned mask (``policy_loss``).

A strategy that changes the forward passes rather than the loss (shared quantisation,
routing replay) provides hooks besides its function (``strategy.Strategy``:
``actor_hooks``, ``learner_hooks``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from recipe_arena.core.lazy import torch


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
    """1 on trained completion tokens."""
    versions_BL: torch.Tensor
    """Policy version that sampled each token (-1 on prompt and padding)."""
    learner_version: int


@dataclass(frozen=True)
class StalenessResult:
    token_weights_BL: torch.Tensor
    """Multiplies each token's policy-gradient loss (no gradient)."""
    extra_loss_BL: torch.Tensor
    """Added to each token's loss before normalisation."""
    mask_BL: torch.Tensor
    """Tokens that remain trained (a subset of the input mask)."""
    metrics: dict[str, float]


StalenessFn = Callable[[StalenessInput, Any], StalenessResult]


def masked_mean(x_BL: torch.Tensor, mask_BL: torch.Tensor) -> float:
    """Mean of ``x`` over the tokens of ``mask`` (0 when it is empty)."""
    return float((x_BL * mask_BL).sum() / mask_BL.sum().clamp(min=1.0))
