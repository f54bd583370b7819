"""Staleness strategies: how the learner treats tokens sampled by older or different weights.

The registry is a plain dict; Kimi's per-token regulariser (an extra per-token loss)
and DeepSeek's off-policy bound and stale-token mask (token and sequence masks) take
the same ``StalenessInput -> StalenessResult`` shape and join it by name.
"""

from __future__ import annotations

from recipe_arena.staleness.base import (
    StalenessFn,
    StalenessInput,
    StalenessParams,
    StalenessResult,
)
from recipe_arena.staleness.none import no_correction
from recipe_arena.staleness.tis import truncated_importance_sampling

STALENESS: dict[str, StalenessFn] = {
    "tis": truncated_importance_sampling,
    "none": no_correction,
}


def get_staleness(name: str) -> StalenessFn:
    if name not in STALENESS:
        raise ValueError(
            f"staleness strategy {name!r} is not implemented; available: {sorted(STALENESS)}"
        )
    return STALENESS[name]


__all__ = [
    "STALENESS",
    "StalenessFn",
    "StalenessInput",
    "StalenessParams",
    "StalenessResult",
    "get_staleness",
]
