"""PROVISIONAL (being measured)."""

from __future__ import annotations

from typing import Literal

import torch

from recipe_arena.core.strategy import StrategyParams
from recipe_arena.length_control.base import LengthInput, LengthResult


class DiscardEarlyShortParams(StrategyParams):
    name: Literal["discard_early_short"] = "discard_early_short"


def discard_early_short(inp: LengthInput, params: DiscardEarlyShortParams) -> LengthResult:
    keep_G = torch.ones_like(inp.rewards_G, dtype=torch.bool)
    return LengthResult(inp.rewards_G, keep_G, {})
