"""Advantage strategies: from scored rollouts to per-token advantages ``advantages_BL``.
The registry holds the ``STRATEGY`` of each module of this package; the config holds
``AdvantageConfig`` (the union of the parameter models). Group-relative entries
(centered, standard) and the on-policy distillation entry (distill), which reads
``AdvantageInput.teacher_logprobs_BL``."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from recipe_arena.advantages.base import AdvantageFn, AdvantageInput, AdvantageResult
from recipe_arena.advantages.centered import CenteredParams
from recipe_arena.advantages.distill import DistillParams
from recipe_arena.advantages.standard import StandardParams
from recipe_arena.strategy import Strategy, StrategyParams, collect, params_union, run_strategy

ADVANTAGES: dict[str, Strategy[AdvantageInput, AdvantageResult]] = collect(__name__)
compute_advantages = partial(run_strategy, ADVANTAGES)
"""``compute_advantages(params, inp)``: the strategy ``params`` names, applied to ``inp``."""
if TYPE_CHECKING:
    AdvantageConfig = StrategyParams
else:
    AdvantageConfig = params_union(ADVANTAGES)

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
