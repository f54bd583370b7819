"""Length-control strategies: what happens to a group's rewards and rollouts given their
lengths. The registry holds the ``STRATEGY`` of each module of this package; the config
holds the union of the strategies' parameter models (``axes.LengthControlConfig``)."""

from __future__ import annotations

from functools import partial

from recipe_arena.length_control.base import LengthFn as LengthFn
from recipe_arena.length_control.base import LengthInput as LengthInput
from recipe_arena.length_control.base import LengthResult as LengthResult
from recipe_arena.length_control.discard_early_short import (
    DiscardEarlyShortParams as DiscardEarlyShortParams,
)
from recipe_arena.length_control.none import NoLengthControlParams as NoLengthControlParams
from recipe_arena.length_control.token_budget import TokenBudgetParams as TokenBudgetParams
from recipe_arena.strategy import Strategy, collect, run_strategy

LENGTH_CONTROL: dict[str, Strategy[LengthInput, LengthResult]] = collect(__name__)
apply_length_control = partial(run_strategy, LENGTH_CONTROL)
"""``apply_length_control(params, inp)``: the strategy ``params`` names, applied to one
group."""
