"""Standard GRPO advantages (Shao et al. 2024, DeepSeekMath, arXiv:2402.03300).

A_i = (s r_i - mean_group(s r)) / (std_group(s r) + eps),   population std, s = reward_scale
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


class StandardParams(StrategyParams):
    name: Literal["standard"] = "standard"
    std_eps: float = Field(1e-6, gt=0, examples=[0.5])
    """Added to the group std before dividing (reward units, > 0): keeps a zero-variance
    group finite."""


def standard_advantages(inp: AdvantageInput, params: StandardParams) -> AdvantageResult:
    """A_i = (r_i - mean) / (std + eps) within each group, broadcast to tokens."""
    r_B = inp.rewards_B.float()
    centred_B = r_B - group_mean(r_B, inp.group_B)
    std_B = group_mean(centred_B.square(), inp.group_B).sqrt()
    return broadcast(centred_B / (std_B + params.std_eps), inp.mask_BL)


STRATEGY = Strategy(StandardParams, standard_advantages)
