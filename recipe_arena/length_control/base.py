"""The shape every length-control strategy shares: a pure function over one group.

In: the group's rewards, response lengths, per-row token budget and the order in which
the rollouts finished. Out: possibly changed rewards, which rollouts to keep, metrics.
Kimi's token budget (reward -1 past the budget) changes rewards; DeepSeek's
discard-early-short drops rollouts; both join the registry with this shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LengthInput:
    rewards_G: torch.Tensor
    lengths_G: torch.Tensor
    """Completion tokens of each rollout."""
    budget: int | None
    """Per-problem token budget (from the row or its effort level); None: no budget."""
    finish_seconds_G: torch.Tensor
    """Seconds each rollout took to finish (early finishers are short under async)."""


@dataclass(frozen=True)
class LengthResult:
    rewards_G: torch.Tensor
    keep_G: torch.Tensor  # bool
    metrics: dict[str, float]


LengthFn = Callable[[LengthInput], LengthResult]
