"""No staleness correction: weight 1 on every token, nothing added, nothing masked."""

from __future__ import annotations

import torch

from recipe_arena.staleness.base import StalenessInput, StalenessResult


def no_correction(inp: StalenessInput) -> StalenessResult:
    """w_t = 1. The baseline every correction is compared against."""
    return StalenessResult(
        token_weights_BL=torch.ones_like(inp.mask_BL),
        extra_loss_BL=torch.zeros_like(inp.mask_BL),
        mask_BL=inp.mask_BL,
        metrics={},
    )
