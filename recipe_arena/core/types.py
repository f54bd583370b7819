"""Typed records that move through the actor-learner core.

Shapes: ``T`` is the number of completion tokens of one rollout; ``G`` the
rollouts of one prompt; ``B`` the sequences of a learner batch; ``L`` the padded
sequence length. Lists are per token unless a name says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from recipe_arena.data.schema import Domain, PromptRow

FinishReason = str  # "stop" (end-of-sequence token), "length" (hit max_new_tokens), "abort"


@dataclass(frozen=True)
class Rollout:
    """One sampled completion with what the engine knew when sampling it."""

    prompt_id: str
    prompt_tokens: tuple[int, ...]
    completion_tokens: tuple[int, ...]
    behavior_logprobs: tuple[float, ...]
    """log pi_behavior(y_t | prefix) of each sampled token, under the distribution it was
    actually sampled from (after temperature)."""
    token_versions: tuple[int, ...]
    """Policy version that produced each token; differs inside one sequence when a weight
    update lands mid-generation."""
    finish_reason: FinishReason
    domain: Domain
    text: str = ""
    reward: float = 0.0
    reward_reason: str = ""
    gen_seconds: float = 0.0

    def __post_init__(self) -> None:
        n = len(self.completion_tokens)
        if len(self.behavior_logprobs) != n or len(self.token_versions) != n:
            raise ValueError(
                f"rollout {self.prompt_id}: {n} tokens but {len(self.behavior_logprobs)} "
                f"logprobs and {len(self.token_versions)} versions"
            )

    @property
    def min_version(self) -> int:
        return min(self.token_versions) if self.token_versions else 0


@dataclass(frozen=True)
class RolloutGroup:
    """The G rollouts of one prompt, scored. Groups, not single rollouts, go to the learner."""

    row: PromptRow
    rollouts: tuple[Rollout, ...]

    @property
    def prompt_id(self) -> str:
        return self.row.id

    @property
    def rewards_G(self) -> torch.Tensor:
        return torch.tensor([r.reward for r in self.rollouts], dtype=torch.float32)

    @property
    def min_version(self) -> int:
        return min(r.min_version for r in self.rollouts)


@dataclass
class LearnerBatch:
    """Padded token tensors for one optimiser step.

    Row b holds prompt then completion; ``mask_BL`` is 1 on completion tokens that are
    trained. Logprobs and versions are aligned to the token they score (position l
    holds log p(tokens_BL[b, l] | tokens_BL[b, :l])).
    """

    tokens_BL: torch.Tensor  # int64
    mask_BL: torch.Tensor  # float32, 1 on trained completion tokens
    advantages_BL: (
        torch.Tensor
    )  # float32, per token (sequence advantage broadcast, or per-token for distillation)
    behavior_logprobs_BL: torch.Tensor  # float32
    versions_BL: torch.Tensor  # int64, policy version per token (-1 on prompt/pad)
    attention_BL: torch.Tensor | None = None
    """int64, 1 on prompt and completion tokens, 0 on padding (None: all ones)."""
    prompt_ids: list[str] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)
    rewards_B: torch.Tensor | None = None
    """float32, the (unscaled) reward of each row's rollout."""

    @property
    def num_tokens(self) -> int:
        return int(self.mask_BL.sum().item())
