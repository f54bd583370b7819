"""No length control (OLMo 3: a length verifier was tried and did not help)."""

from __future__ import annotations

import torch

from recipe_arena.length_control.base import LengthInput, LengthResult


def no_length_control(inp: LengthInput) -> LengthResult:
    """r' = r; every rollout kept."""
    return LengthResult(
        rewards_G=inp.rewards_G,
        keep_G=torch.ones_like(inp.rewards_G, dtype=torch.bool),
        metrics={},
    )
