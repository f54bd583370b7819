"""Advantage strategies: from scored rollouts to per-token advantages ``advantages_BL``.
One registry, a plain dict literal; the config holds ``AdvantageConfig`` (the union of
the parameter models). Group-relative entries (centered, standard) and the on-policy
distillation entry (distill), which reads ``AdvantageInput.teacher_logprobs_BL``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recipe_arena.core.advantages.base import AdvantageFn, AdvantageInput, AdvantageResult
from recipe_arena.core.advantages.centered import CenteredParams, centered_advantages
from recipe_arena.core.advantages.distill import DistillParams, distill_advantages
from recipe_arena.core.advantages.standard import StandardParams, standard_advantages
from recipe_arena.core.strategy import Strategy, StrategyParams, params_union, run_strategy

ADVANTAGES: dict[str, Strategy[AdvantageInput, AdvantageResult]] = {
    "centered": Strategy(CenteredParams, centered_advantages),
    "distill": Strategy(DistillParams, distill_advantages),
    "standard": Strategy(StandardParams, standard_advantages),
}

if TYPE_CHECKING:
    AdvantageConfig = StrategyParams
else:
    AdvantageConfig = params_union(ADVANTAGES)


def compute_advantages(params: StrategyParams, inp: AdvantageInput) -> AdvantageResult:
    """The advantage strategy ``params`` names, applied to ``inp``."""
    return run_strategy(ADVANTAGES, params, inp)


__all__ = [
    "ADVANTAGES",
    "AdvantageConfig",
    "AdvantageFn",
    "AdvantageInput",
    "AdvantageResult",
    "CenteredParams",
    "DistillParams",
    "StandardParams",
    "compute_advantages",
]
