"""Centred group-relative advantages (OLMo 3, arXiv:2512.13961; Liu et al. 2025,
Dr.GRPO): no division by the group's standard deviation.

    A_i = s r_i - mean_{j in group(i)} (s r_j),   s = reward_scale

Dividing by a small group std inflates the advantages of prompts that are almost always
right or almost always wrong, the ones with the least learning signal.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from recipe_arena.advantages.base import (
    AdvantageInput,
    AdvantageResult,
    broadcast,
    group_mean,
)
from recipe_arena.strategy import Strategy, StrategyParams


class CenteredParams(StrategyParams):
    name: Literal["centered"] = "centered"
    reward_scale: float = Field(1.0, gt=0, examples=[10.0])
    """Multiplies verifier scores before advantages (unitless, > 0; open-instruct used
    10, OLMo 3's default recipe 1). Standard advantages have none: dividing by the
    group's std cancels it."""


def centered_advantages(inp: AdvantageInput, params: CenteredParams) -> AdvantageResult:
    """A_i = s r_i - mean_group(s r), broadcast to the row's completion tokens."""
    r_B = inp.rewards_B.float() * params.reward_scale
    return broadcast(r_B - group_mean(r_B, inp.group_B), inp.mask_BL)


STRATEGY = Strategy(CenteredParams, centered_advantages)
