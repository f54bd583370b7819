"""REINFORCE leave-one-out advantages (Kool, van Hoof & Welling 2019, "Buy 4 REINFORCE
Samples, Get a Baseline for Free!"; Ahmadian et al. 2024, "Back to Basics: Revisiting
REINFORCE Style Optimization for Learning from Human Feedback in LLMs").

    A_i = s r_i - mean_{j in group(i), j != i} (s r_j)
        = G / (G - 1) * (s r_i - mean_{j in group(i)} (s r_j)),   s = reward_scale

Each rollout's baseline is the mean reward of the other G - 1 rollouts of its prompt,
so the baseline does not depend on the rollout it scores and the policy-gradient
estimate stays unbiased (the centred baseline includes r_i itself and shrinks the
advantage by (G - 1) / G). A group of one rollout has no other: its advantage is 0.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from recipe_arena.advantages.base import AdvantageInput, AdvantageResult, broadcast
from recipe_arena.core.lazy import torch
from recipe_arena.strategy import Strategy, StrategyParams


class RLOOParams(StrategyParams):
    name: Literal["rloo"] = "rloo"
    reward_scale: float = Field(1.0, gt=0, examples=[10.0])
    """Multiplies verifier scores before advantages (unitless, > 0), as in ``centered``."""


def rloo_advantages(inp: AdvantageInput, params: RLOOParams) -> AdvantageResult:
    """A_i = s r_i - mean of the other rollouts' s r_j in its group (0 for a group of
    one), broadcast to the row's completion tokens."""
    r_B = inp.rewards_B.float() * params.reward_scale
    group_B = inp.group_B
    n_groups = int(group_B.max()) + 1 if group_B.numel() else 0
    sums_G = torch.zeros(n_groups).index_add_(0, group_B, r_B)
    counts_G = torch.zeros(n_groups).index_add_(0, group_B, torch.ones_like(r_B))
    others_B = counts_G[group_B] - 1.0
    baseline_B = (sums_G[group_B] - r_B) / others_B.clamp(min=1.0)
    adv_B = torch.where(others_B > 0, r_B - baseline_B, torch.zeros_like(r_B))
    return broadcast(adv_B, inp.mask_BL)


STRATEGY = Strategy(RLOOParams, rloo_advantages)
