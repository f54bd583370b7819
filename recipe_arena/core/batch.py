"""From scored RolloutGroups to the padded tensors of one optimiser step."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from recipe_arena.core.advantages import compute_advantages
from recipe_arena.core.types import LearnerBatch, RolloutGroup


def group_advantages(
    groups: Sequence[RolloutGroup], name: str, reward_scale: float, std_eps: float
) -> list[torch.Tensor]:
    """One advantage vector (G,) per group, from its rewards."""
    return [compute_advantages(g.rewards_G, name, reward_scale, std_eps) for g in groups]


def build_learner_batch(
    groups: Sequence[RolloutGroup], advantages: Sequence[torch.Tensor], pad_id: int
) -> LearnerBatch:
    """Row b = prompt + completion, right-padded; mask 1 on completion tokens.

    Position l of every per-token tensor refers to token l (its logprob scores token l
    given tokens < l), so completion token j of a prompt of length P sits at P + j.
    """
    rows = [
        (g, r, float(a))
        for g, adv_G in zip(groups, advantages, strict=True)
        for r, a in zip(g.rollouts, adv_G.tolist(), strict=True)
    ]
    if not rows:
        raise ValueError("cannot build a learner batch from zero rollouts")
    length = max(len(r.prompt_tokens) + len(r.completion_tokens) for _, r, _ in rows)
    b = len(rows)
    tokens_BL = torch.full((b, length), pad_id, dtype=torch.long)
    mask_BL = torch.zeros(b, length)
    adv_BL = torch.zeros(b, length)
    behavior_BL = torch.zeros(b, length)
    versions_BL = torch.full((b, length), -1, dtype=torch.long)
    attention_BL = torch.zeros(b, length, dtype=torch.long)
    for i, (_, r, a) in enumerate(rows):
        p, t = len(r.prompt_tokens), len(r.completion_tokens)
        tokens_BL[i, : p + t] = torch.tensor(
            r.prompt_tokens + r.completion_tokens, dtype=torch.long
        )
        attention_BL[i, : p + t] = 1
        if t:
            mask_BL[i, p : p + t] = 1.0
            adv_BL[i, p : p + t] = a
            behavior_BL[i, p : p + t] = torch.tensor(r.behavior_logprobs)
            versions_BL[i, p : p + t] = torch.tensor(r.token_versions, dtype=torch.long)
    return LearnerBatch(
        tokens_BL=tokens_BL,
        mask_BL=mask_BL,
        advantages_BL=adv_BL,
        behavior_logprobs_BL=behavior_BL,
        versions_BL=versions_BL,
        attention_BL=attention_BL,
        prompt_ids=[g.prompt_id for g, _, _ in rows],
        domains=[g.row.domain for g, _, _ in rows],
        rewards_B=torch.tensor([r.reward for _, r, _ in rows]),
    )
