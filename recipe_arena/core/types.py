"""Typed records that move through the actor-learner core.

Shapes: ``T`` is the number of completion tokens of one rollout; ``G`` the
rollouts of one prompt; ``B`` the sequences of a learner batch; ``L`` the padded
sequence length. Lists are per token unless a name says otherwise.
"""

from __future__ import annotations

import dataclasses
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
    verifier_reward: float | None = None
    """The verifier's score when ``reward`` is not the verifier's alone (the spurious-reward
    control, noisy verifiers' label flips); None otherwise."""
    expert_ids: torch.Tensor | None = None
    """int64 (P + T - 1, N, K): the K experts each MoE layer n routed position l to in
    the engine, for every position fed to it (prompt and all completion tokens but the
    last); None for a dense model."""
    teacher_logprobs: tuple[float, ...] | None = None
    """A teacher's log-probability of each completion token (on-policy distillation);
    None when no teacher scored the rollout."""
    teacher: str | None = None
    """Name of the teacher that scored it (its route, ``distill.teachers``)."""

    def __post_init__(self) -> None:
        n = len(self.completion_tokens)
        if len(self.behavior_logprobs) != n or len(self.token_versions) != n:
            raise ValueError(
                f"rollout {self.prompt_id}: {n} tokens but {len(self.behavior_logprobs)} "
                f"logprobs and {len(self.token_versions)} versions"
            )

    @property
    def min_version(self) -> int | None:
        """Version of the oldest token; None for an empty completion (an abort), which
        holds no token and so nothing stale."""
        return min(self.token_versions) if self.token_versions else None


@dataclass(frozen=True)
class RolloutGroup:
    """The G rollouts of one prompt, scored. Groups, not single rollouts, go to the learner."""

    row: PromptRow
    rollouts: tuple[Rollout, ...]
    """The rollouts that go to the learner (length control may have dropped some)."""
    sampled_lengths: tuple[int, ...] = ()
    """Completion lengths of every rollout sampled for this group, dropped ones too."""
    metrics: dict[str, float] = field(default_factory=dict)
    """What length control (``length/...``) and the scorer (``reward/<domain>/...``: checks,
    timeouts, judge verdicts) counted for this group; combined over a step's groups by
    ``core.metrics.group_counters``."""

    @property
    def prompt_id(self) -> str:
        return self.row.id

    @property
    def rewards_G(self) -> torch.Tensor:
        return torch.tensor([r.reward for r in self.rollouts], dtype=torch.float32)

    @property
    def min_version(self) -> int | None:
        """Version of the group's oldest token; None when it holds no token (no
        rollouts, or only empty ones)."""
        versions = [v for r in self.rollouts if (v := r.min_version) is not None]
        return min(versions) if versions else None


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
    expert_ids_BLNK: torch.Tensor | None = None
    """int64, the engine's expert choice per position and MoE layer (-1 where none was
    recorded: padding, a row's last token, dense models); None: no MoE routing."""
    metrics: dict[str, float] = field(default_factory=dict)
    """What building the batch measured (advantage statistics)."""

    @property
    def num_tokens(self) -> int:
        return int(self.mask_BL.sum().item())

    @property
    def lengths_B(self) -> torch.Tensor:
        """Unpadded length of each row (prompt + completion)."""
        if self.attention_BL is None:
            return torch.full((self.tokens_BL.shape[0],), self.tokens_BL.shape[1])
        return self.attention_BL.sum(-1)

    def to(self, device: torch.device | str) -> LearnerBatch:
        """The batch with its tensors on ``device`` (itself when they already are)."""
        if self.tokens_BL.device == torch.device(device):
            return self

        def move(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t.to(device)

        return dataclasses.replace(
            self,
            tokens_BL=self.tokens_BL.to(device),
            mask_BL=self.mask_BL.to(device),
            advantages_BL=self.advantages_BL.to(device),
            behavior_logprobs_BL=self.behavior_logprobs_BL.to(device),
            versions_BL=self.versions_BL.to(device),
            attention_BL=move(self.attention_BL),
            rewards_B=move(self.rewards_B),
            expert_ids_BLNK=move(self.expert_ids_BLNK),
        )

    def select(self, rows: list[int]) -> LearnerBatch:
        """The batch of ``rows`` (in that order), its padding cut to their longest row."""
        idx = torch.tensor(rows, dtype=torch.long)
        length = int(self.lengths_B[idx].max())
        return LearnerBatch(
            tokens_BL=self.tokens_BL[idx, :length],
            mask_BL=self.mask_BL[idx, :length],
            advantages_BL=self.advantages_BL[idx, :length],
            behavior_logprobs_BL=self.behavior_logprobs_BL[idx, :length],
            versions_BL=self.versions_BL[idx, :length],
            attention_BL=None if self.attention_BL is None else self.attention_BL[idx, :length],
            prompt_ids=[self.prompt_ids[i] for i in rows] if self.prompt_ids else [],
            domains=[self.domains[i] for i in rows] if self.domains else [],
            rewards_B=None if self.rewards_B is None else self.rewards_B[idx],
            expert_ids_BLNK=(
                None if self.expert_ids_BLNK is None else self.expert_ids_BLNK[idx, :length]
            ),
        )


def length_buckets(lengths: list[int], max_tokens: int | None) -> list[list[int]]:
    """Rows grouped into micro-batches of similar length, each padded to at most
    ``max_tokens`` tokens (rows x its longest row); a row longer than that goes alone.

    Rows are sorted by length and cut greedily, so short rows are not padded to the
    batch's longest. ``None`` keeps one micro-batch of all rows in their order."""
    if max_tokens is None or not lengths:
        return [list(range(len(lengths)))]
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    buckets: list[list[int]] = []
    current: list[int] = []
    for i in order:  # ascending, so the row being added is the longest of its bucket
        if current and (len(current) + 1) * lengths[i] > max_tokens:
            buckets.append(current)
            current = []
        current.append(i)
    if current:
        buckets.append(current)
    return buckets
