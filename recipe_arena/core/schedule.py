"""The learning-rate schedule every training stage shares: linear warm-up, then cosine
decay to a floor (10% of the peak for base training and SFT; a floor of 1.0 keeps the
rate constant after warm-up, the RL default)."""

from __future__ import annotations

import math


def lr_at(step: int, total: int, warmup: int, peak: float, floor: float = 0.1) -> float:
    """Learning rate at ``step`` (0-based): linear warm-up over ``warmup`` steps, then
    cosine from ``peak`` down to ``floor * peak`` at ``total``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))
