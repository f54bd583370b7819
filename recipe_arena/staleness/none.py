"""No staleness correction: weight 1 on every token, nothing added, nothing masked."""

from __future__ import annotations

from typing import Literal

from recipe_arena.core.lazy import torch
from recipe_arena.staleness.base import StalenessInput, StalenessResult
from recipe_arena.strategy import Strategy, StrategyParams


class NoCorrectionParams(StrategyParams):
    """The ablation baseline: the policy gradient as if every token were on-policy."""

    name: Literal["none"] = "none"


def no_correction(inp: StalenessInput, params: NoCorrectionParams) -> StalenessResult:
    """w_t = 1, extra_t = 0, mask unchanged."""
    del params
    return StalenessResult(
        token_weights_BL=torch.ones_like(inp.mask_BL),
        extra_loss_BL=torch.zeros_like(inp.mask_BL),
        mask_BL=inp.mask_BL,
        metrics={},
    )


STRATEGY = Strategy(NoCorrectionParams, no_correction)
