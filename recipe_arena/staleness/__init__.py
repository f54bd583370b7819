"""Staleness strategies: how the learner treats tokens sampled by older or different
weights. One registry, a plain dict literal; the config holds ``StalenessConfig``, the
union of the strategies' parameter models (``core.strategy``).

A new strategy: its module (function + parameter model), one line here, one YAML file
under ``recipes/staleness/`` and its tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recipe_arena.core.strategy import Strategy, StrategyParams, params_union, run_strategy
from recipe_arena.staleness.base import (
    ReplaysRouting,
    SharesQuantisation,
    StalenessFn,
    StalenessInput,
    StalenessResult,
)
from recipe_arena.staleness.deepseek_mask import DeepSeekMaskParams, deepseek_mask
from recipe_arena.staleness.kimi_regularizer import KimiRegularizerParams, kimi_regularizer
from recipe_arena.staleness.none import NoCorrectionParams, no_correction
from recipe_arena.staleness.shared_quant import SharedQuantParams, shared_quant
from recipe_arena.staleness.tis import TISParams, truncated_importance_sampling

STALENESS: dict[str, Strategy[StalenessInput, StalenessResult]] = {
    "none": Strategy(NoCorrectionParams, no_correction),
    "tis": Strategy(TISParams, truncated_importance_sampling),
    "kimi_regularizer": Strategy(KimiRegularizerParams, kimi_regularizer),
    "shared_quant": Strategy(SharedQuantParams, shared_quant),
    "deepseek_mask": Strategy(DeepSeekMaskParams, deepseek_mask),
}

if TYPE_CHECKING:
    StalenessConfig = StrategyParams
else:
    StalenessConfig = params_union(STALENESS)


def apply_staleness(params: StrategyParams, inp: StalenessInput) -> StalenessResult:
    """The strategy ``params`` names, applied to ``inp``."""
    return run_strategy(STALENESS, params, inp)


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
    "replays_routing",
    "shared_quant_bits",
]
