"""The shape every length-control strategy shares: a pure function over one scored group.

In: the group's rewards and response lengths, the row's token budget and effort level,
and when each rollout was generated (seconds, the policy versions of its first and last
token, the engine's version when the group was finished). Out: possibly changed
rewards, which rollouts to keep, metrics. Kimi's token budget changes rewards;
DeepSeek's discard-early-short drops rollouts (and reads more: its module keeps the
generation windows through actor hooks). A group whose rollouts are all dropped
reaches the learner empty and is counted and replaced (``core.sampling``).

The actor applies the strategy through its group-finished hook (``core.hooks``);
``length_input`` is what it hands a strategy that keeps no state of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from recipe_arena.core.hooks import FinishedGroup, GroupVerdict
from recipe_arena.core.lazy import torch


@dataclass(frozen=True)
class LengthInput:
    rewards_G: torch.Tensor
    """float32, verifier rewards."""
    lengths_G: torch.Tensor
    """int64, completion tokens of each rollout."""
    row_budget: int | None
    """The row's own token budget (``PromptRow.token_budget``); None if it has none."""
    effort: str | None
    """The row's effort level (low, medium, high); None if it has none."""
    finish_seconds_G: torch.Tensor
    """float32, seconds from submission to each rollout's last token."""
    start_versions_G: torch.Tensor
    """int64, policy version of each rollout's first token (-1 for an empty rollout)."""
    end_versions_G: torch.Tensor
    """int64, policy version of each rollout's last token (-1 for an empty rollout)."""
    engine_version: int
    """The engine's policy version when the group was finished."""


LengthResult = GroupVerdict
"""rewards_G (possibly changed), keep_G (bool, rollouts that go on), metrics: what the
actor's group-finished hook returns (``core.hooks.GroupVerdict``)."""


LengthFn = Callable[[LengthInput, Any], LengthResult]


def length_input(group: FinishedGroup) -> LengthInput:
    """The strategy's view of a finished group."""
    return LengthInput(
        rewards_G=group.rewards_G,
        lengths_G=group.lengths_G,
        row_budget=group.row.token_budget,
        effort=group.row.effort,
        finish_seconds_G=group.finish_seconds_G,
        start_versions_G=group.start_versions_G,
        end_versions_G=group.end_versions_G,
        engine_version=group.engine_version,
    )
