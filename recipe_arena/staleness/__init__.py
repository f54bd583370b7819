"""Staleness strategies: how the learner treats tokens sampled by older or different
weights. The registry holds the ``STRATEGY`` of each module of this package; the config
holds ``StalenessConfig``, the union of the strategies' parameter models
(``strategy.params_union``).

A new strategy: its module (function, parameter model and ``STRATEGY``), one YAML file
under ``recipes/staleness/`` and its tests.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from recipe_arena.staleness.base import (
    ReplaysRouting,
    SharesQuantisation,
    StalenessFn,
    StalenessInput,
    StalenessResult,
)
from recipe_arena.staleness.deepseek_mask import DeepSeekMaskParams
from recipe_arena.staleness.kimi_regularizer import KimiRegularizerParams
from recipe_arena.staleness.mismatch import correction_metrics
from recipe_arena.staleness.none import NoCorrectionParams
from recipe_arena.staleness.shared_quant import SharedQuantParams
from recipe_arena.staleness.tis import TISParams
from recipe_arena.strategy import Strategy, StrategyParams, collect, params_union, run_strategy

STALENESS: dict[str, Strategy[StalenessInput, StalenessResult]] = collect(__name__)
apply_staleness = partial(run_strategy, STALENESS)
"""``apply_staleness(params, inp)``: the strategy ``params`` names, applied to ``inp``."""
if TYPE_CHECKING:
    StalenessConfig = StrategyParams
else:
    StalenessConfig = params_union(STALENESS)


def shared_quant_bits(params: Any) -> int | None:
    """Bits of the fake quantisation the engine and the trainer share, None if none."""
    return params.quant_bits if isinstance(params, SharesQuantisation) else None


def replays_routing(params: Any) -> bool:
    """Whether the trainer's forward replays the engine's MoE routing."""
    return bool(params.routing_replay) if isinstance(params, ReplaysRouting) else False


__all__ = [
    "STALENESS",
    "DeepSeekMaskParams",
    "KimiRegularizerParams",
    "NoCorrectionParams",
    "SharedQuantParams",
    "StalenessConfig",
    "StalenessFn",
    "StalenessInput",
    "StalenessResult",
    "TISParams",
    "apply_staleness",
    "correction_metrics",
    "replays_routing",
    "shared_quant_bits",
]
