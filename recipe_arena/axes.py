"""The strategy axes as the config holds them: for each axis, the discriminated union of
its registry's parameter models (``strategy.params_union``), told apart by ``name``.

Type checkers see the base model; pydantic validates against the union, so a wrong
name fails at start-up naming the registry's entries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recipe_arena.advantages import ADVANTAGES
from recipe_arena.length_control import LENGTH_CONTROL
from recipe_arena.policy_loss import POLICY_LOSS
from recipe_arena.staleness import STALENESS
from recipe_arena.strategy import StrategyParams, params_union

if TYPE_CHECKING:
    AdvantageConfig = StrategyParams
    StalenessConfig = StrategyParams
    LengthControlConfig = StrategyParams
    PolicyLossConfig = StrategyParams
else:
    AdvantageConfig = params_union(ADVANTAGES)
    StalenessConfig = params_union(STALENESS)
    LengthControlConfig = params_union(LENGTH_CONTROL)
    PolicyLossConfig = params_union(POLICY_LOSS)
