"""No length control (OLMo 3: a length-control verifier was tried and did not help;
arXiv:2512.13961, seed Table 9.2, row "Length control")."""

from __future__ import annotations

from typing import Literal

from recipe_arena.core.lazy import torch
from recipe_arena.length_control.base import LengthInput, LengthResult
from recipe_arena.strategy import Strategy, StrategyParams


class NoLengthControlParams(StrategyParams):
    name: Literal["none"] = "none"


def no_length_control(inp: LengthInput, params: NoLengthControlParams) -> LengthResult:
    """r' = r; every rollout kept."""
    del params
    return LengthResult(
        rewards_G=inp.rewards_G,
        keep_G=torch.ones_like(inp.rewards_G, dtype=torch.bool),
        metrics={},
    )


STRATEGY = Strategy(NoLengthControlParams, no_length_control)
