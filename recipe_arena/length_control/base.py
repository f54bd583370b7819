"""The shape every length-control strategy shares: a pure function over one scored group.

In: the group's rewards and response lengths, the row's token budget and effort level,
and when each rollout was generated (seconds, the policy versions of its first and last
token, where its first token fell in the engine's generation window, the engine's
version when the group was finished). Out: possibly changed rewards, which rollouts to
keep, metrics. Kimi's token budget changes rewards;
DeepSeek's discard-early-short drops rollouts. A group whose rollouts are all dropped
reaches the learner empty and is counted and replaced (``core.sampling``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
    phase_steps_G: torch.Tensor
    """int64, decode steps from the opening of the generation window in which the
    group's first rollout started (the engine's last weight update before that token) to
    each rollout's first token; -1 where the engine does not count decode steps."""
    window_steps: float | None
    """Median decode steps of the actor's recent generation windows (between two weight
    updates); None before a window has closed."""
    collect_steps: float | None
    """Decode steps from a window's opening to the moment the learner closed its batch
    in that window (after which a group of the window's version can only be trained if
    max_staleness allows), the median over the actor's recent windows; None when the
    learner has not reported a closed batch yet (or a caller runs without a learner)."""
    response_cap: int
    """rl.max_new_tokens: the decode steps a full-length response takes."""
    max_staleness: int
    """rl.max_staleness: the learner drops a group whose oldest token lags more."""
    in_quota: bool | None = None
    """At max_staleness 0: whether the group started while its window's batch still
    needed groups (``core.actor.WindowQuota``: fewer than N of the window's groups that
    could still be trained had started, and the batch had not closed); such a group is
    trained whatever its length, since the batch waits for it. None at max_staleness > 0
    or where no quota is kept."""


@dataclass(frozen=True)
class LengthResult:
    rewards_G: torch.Tensor
    keep_G: torch.Tensor
    """bool, rollouts that go on to the learner."""
    metrics: dict[str, float]


LengthFn = Callable[[LengthInput, Any], LengthResult]
