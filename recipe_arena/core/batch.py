"""From scored RolloutGroups to the padded tensors of one optimiser step, advantages
included (the advantage hook sees the whole batch: ``core.hooks.AdvantageFn``)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from recipe_arena.core.hooks import AdvantageFn, AdvantageInput
from recipe_arena.core.types import LearnerBatch, Rollout, RolloutGroup


def build_learner_batch(
    groups: Sequence[RolloutGroup], advantages: AdvantageFn, pad_id: int
) -> LearnerBatch:
    """Row b = prompt + completion, right-padded; mask 1 on completion tokens; per-token
    advantages from the hook ``advantages`` (the configured advantage strategy).

    Position l of every per-token tensor refers to token l (its logprob scores token l
    given tokens < l), so completion token j of a prompt of length P sits at P + j.
    """
    rows = [(gi, r) for gi, g in enumerate(groups) for r in g.rollouts]
    if not rows:
        raise ValueError("cannot build a learner batch from zero rollouts")
    length = max(len(r.prompt_tokens) + len(r.completion_tokens) for _, r in rows)
    b = len(rows)
    tokens_BL = torch.full((b, length), pad_id, dtype=torch.long)
    mask_BL = torch.zeros(b, length)
    behavior_BL = torch.zeros(b, length)
    versions_BL = torch.full((b, length), -1, dtype=torch.long)
    attention_BL = torch.zeros(b, length, dtype=torch.long)
    for i, (_, r) in enumerate(rows):
        p, t = len(r.prompt_tokens), len(r.completion_tokens)
        tokens_BL[i, : p + t] = torch.tensor(
            r.prompt_tokens + r.completion_tokens, dtype=torch.long
        )
        attention_BL[i, : p + t] = 1
        if t:
            mask_BL[i, p : p + t] = 1.0
            behavior_BL[i, p : p + t] = torch.tensor(r.behavior_logprobs)
            versions_BL[i, p : p + t] = torch.tensor(r.token_versions, dtype=torch.long)
    rewards_B = torch.tensor([r.reward for _, r in rows], dtype=torch.float32)
    adv = advantages(
        AdvantageInput(
            rewards_B=rewards_B,
            group_B=torch.tensor([gi for gi, _ in rows], dtype=torch.long),
            mask_BL=mask_BL,
            behavior_logprobs_BL=behavior_BL,
            teacher_logprobs_BL=_teacher_logprobs([r for _, r in rows], length),
            teacher_B=_teachers([r for _, r in rows]),
        )
    )
    return LearnerBatch(
        tokens_BL=tokens_BL,
        mask_BL=mask_BL,
        advantages_BL=adv.advantages_BL * mask_BL,
        behavior_logprobs_BL=behavior_BL,
        versions_BL=versions_BL,
        attention_BL=attention_BL,
        prompt_ids=[groups[gi].prompt_id for gi, _ in rows],
        domains=[groups[gi].row.domain for gi, _ in rows],
        rewards_B=rewards_B,
        expert_ids_BLNK=_expert_ids([r for _, r in rows], length),
        metrics=adv.metrics,
    )


def _teacher_logprobs(rollouts: Sequence[Rollout], length: int) -> torch.Tensor | None:
    """A teacher's logprobs at the completion positions (0 elsewhere), when every
    rollout carries them; None otherwise."""
    if not all(r.teacher_logprobs is not None for r in rollouts):
        return None
    out_BL = torch.zeros(len(rollouts), length)
    for i, r in enumerate(rollouts):
        p, t = len(r.prompt_tokens), len(r.completion_tokens)
        if t and r.teacher_logprobs is not None:
            out_BL[i, p : p + t] = torch.tensor(r.teacher_logprobs)
    return out_BL


def _teachers(rollouts: Sequence[Rollout]) -> tuple[str, ...] | None:
    """Each row's teacher name, when every rollout names one; None otherwise."""
    names = [r.teacher for r in rollouts]
    return tuple(n for n in names if n is not None) if all(names) else None


def _expert_ids(rollouts: Sequence[Rollout], length: int) -> torch.Tensor | None:
    """The engine's expert ids per position (-1 where none was recorded), when any
    rollout carries them; None for dense models."""
    recorded = [r.expert_ids for r in rollouts if r.expert_ids is not None]
    if not recorded:
        return None
    n_layers, k = recorded[0].shape[1:]
    out_BLNK = torch.full((len(rollouts), length, n_layers, k), -1, dtype=torch.long)
    for i, r in enumerate(rollouts):
        if r.expert_ids is not None:
            out_BLNK[i, : r.expert_ids.shape[0]] = r.expert_ids.long()
    return out_BLNK
