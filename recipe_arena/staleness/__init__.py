"""Staleness strategies: how the learner treats tokens sampled by older or different
weights. The registry holds the ``STRATEGY`` of each module of this package; the config
holds the union of the strategies' parameter models (``axes.StalenessConfig``).

A new strategy: its module (function, parameter model and ``STRATEGY``), one YAML file
under ``recipes/staleness/`` and its tests.
"""

from __future__ import annotations

from functools import partial

from recipe_arena.staleness.base import StalenessFn as StalenessFn
from recipe_arena.staleness.base import StalenessInput as StalenessInput
from recipe_arena.staleness.base import StalenessResult as StalenessResult
from recipe_arena.staleness.deepseek_mask import DeepSeekMaskParams as DeepSeekMaskParams
from recipe_arena.staleness.kimi_regularizer import KimiRegularizerParams as KimiRegularizerParams
from recipe_arena.staleness.none import NoCorrectionParams as NoCorrectionParams
from recipe_arena.staleness.shared_quant import SharedQuantParams as SharedQuantParams
from recipe_arena.staleness.tis import TISParams as TISParams
from recipe_arena.strategy import Strategy, collect, run_strategy

STALENESS: dict[str, Strategy[StalenessInput, StalenessResult]] = collect(__name__)
apply_staleness = partial(run_strategy, STALENESS)
"""``apply_staleness(params, inp)``: the strategy ``params`` names, applied to ``inp``."""
