"""Length-control strategies: what happens to a group's rewards and rollouts given their
lengths. The registry holds the ``STRATEGY`` of each module of this package; the config
holds ``LengthControlConfig``, the union of the strategies' parameter models
(``strategy.params_union``)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from recipe_arena.length_control.base import LengthFn, LengthInput, LengthResult
from recipe_arena.length_control.discard_early_short import DiscardEarlyShortParams
from recipe_arena.length_control.none import NoLengthControlParams
from recipe_arena.length_control.token_budget import TokenBudgetParams
from recipe_arena.strategy import Strategy, StrategyParams, collect, params_union, run_strategy

LENGTH_CONTROL: dict[str, Strategy[LengthInput, LengthResult]] = collect(__name__)
apply_length_control = partial(run_strategy, LENGTH_CONTROL)
"""``apply_length_control(params, inp)``: the strategy ``params`` names, applied to one
group."""
if TYPE_CHECKING:
    LengthControlConfig = StrategyParams
else:
    LengthControlConfig = params_union(LENGTH_CONTROL)

__all__ = [
    "LENGTH_CONTROL",
    "DiscardEarlyShortParams",
    "LengthControlConfig",
    "LengthFn",
    "LengthInput",
    "LengthResult",
    "NoLengthControlParams",
    "TokenBudgetParams",
    "apply_length_control",
]
