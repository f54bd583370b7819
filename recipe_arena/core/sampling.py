"""Which groups reach the learner: staleness rule, zero-gradient filter, active sampling.

Staleness (stated once, the only rule):
    a group is trainable  iff  learner_version - min(token_versions of the group) <= max_staleness
A stale group is dropped, counted, and its prompt goes back to the prompt source.
An empty completion (an abort) holds no token and so nothing stale: it does not make
its group stale. A group left with no rollout (length control dropped them all) is
dropped and counted, like a zero-variance group.

Zero-gradient filter (DAPO's dynamic sampling, OLMo 3): a group whose rewards are all
equal has A = 0 on every token and is dropped. Active sampling keeps drawing groups
until the batch holds N prompts with non-zero reward variance, giving up after
``max_draws`` groups (a batch then trains short and says so in the metrics).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from recipe_arena.core.types import RolloutGroup

Verdict = Literal["kept", "zero_variance", "stale", "empty", "ignored"]


def is_trainable(min_token_version: int | None, learner_version: int, max_staleness: int) -> bool:
    """learner_version - min_token_version <= max_staleness; a group without tokens
    (``None``) holds nothing stale."""
    if min_token_version is None:
        return True
    return learner_version - min_token_version <= max_staleness


def has_reward_variance(group: RolloutGroup, tol: float = 0.0) -> bool:
    """True iff some reward differs from the others (max - min > tol)."""
    rewards = [r.reward for r in group.rollouts]
    return bool(rewards) and max(rewards) - min(rewards) > tol


@dataclass
class BatchFiller:
    """Collects the groups of one optimiser step; offer() says what happened to each.

    ``n_prompts``: N. ``active_sampling``: refill dropped groups until N are kept;
    without it the batch closes after N groups that are neither stale nor emptied by
    length control, whatever the filter kept.
    """

    n_prompts: int
    max_staleness: int
    zero_gradient_filter: bool = True
    active_sampling: bool = True
    max_draws: int = 1_000_000
    kept: list[RolloutGroup] = field(default_factory=list)
    received: int = 0
    zero_variance: int = 0
    stale: int = 0
    empty: int = 0
    stale_lag: list[int] = field(default_factory=list)

    @property
    def done(self) -> bool:
        if len(self.kept) >= self.n_prompts or self.received >= self.max_draws:
            return True
        if not self.active_sampling:  # a group length control emptied was never a candidate
            return self.received - self.stale - self.empty >= self.n_prompts
        return False

    def offer(self, group: RolloutGroup, learner_version: int) -> Verdict:
        if self.done:
            return "ignored"
        self.received += 1
        if not group.rollouts:
            self.empty += 1
            return "empty"
        oldest = group.min_version
        if oldest is not None and not is_trainable(oldest, learner_version, self.max_staleness):
            self.stale += 1
            self.stale_lag.append(learner_version - oldest)
            return "stale"
        if self.zero_gradient_filter and not has_reward_variance(group):
            self.zero_variance += 1
            return "zero_variance"
        self.kept.append(group)
        return "kept"

    def metrics(self) -> dict[str, float]:
        """Counts for this batch: dropped groups and the replacements they cost."""
        return {
            "sampling/groups_received": float(self.received),
            "sampling/groups_kept": float(len(self.kept)),
            "sampling/zero_variance_groups": float(self.zero_variance),
            "sampling/stale_groups": float(self.stale),
            "sampling/empty_groups": float(self.empty),
            "sampling/resampled_groups": float(max(0, self.received - self.n_prompts)),
            "sampling/batch_short": float(max(0, self.n_prompts - len(self.kept))),
        }
