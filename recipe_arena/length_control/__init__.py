"""Length-control strategies: what happens to a group's rewards and rollouts given their
lengths. One registry, a plain dict literal; the config holds ``LengthControlConfig``,
the union of the strategies' parameter models (``core.strategy``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recipe_arena.core.strategy import Strategy, StrategyParams, params_union, run_strategy
from recipe_arena.length_control.base import LengthFn, LengthInput, LengthResult
from recipe_arena.length_control.discard_early_short import (
    DiscardEarlyShortParams,
    discard_early_short,
)
from recipe_arena.length_control.none import NoLengthControlParams, no_length_control
from recipe_arena.length_control.token_budget import TokenBudgetParams, token_budget

LENGTH_CONTROL: dict[str, Strategy[LengthInput, LengthResult]] = {
    "none": Strategy(NoLengthControlParams, no_length_control),
    "token_budget": Strategy(TokenBudgetParams, token_budget),
    "discard_early_short": Strategy(DiscardEarlyShortParams, discard_early_short),
}

if TYPE_CHECKING:
    LengthControlConfig = StrategyParams
else:
    LengthControlConfig = params_union(LENGTH_CONTROL)


def apply_length_control(params: StrategyParams, inp: LengthInput) -> LengthResult:
    """The length strategy ``params`` names, applied to one group."""
    return run_strategy(LENGTH_CONTROL, params, inp)


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
