"""Policy losses: from the trainer's logprobs, advantages and the staleness strategy's
weights and mask to the loss the learner back-propagates. The registry holds the
``STRATEGY`` of each module of this package; the config holds ``PolicyLossConfig``, the
union of the losses' parameter models, and ``loss`` (``LossConfig``), the settings every
loss shares (normalisation, clip range, KL weight)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from recipe_arena.policy_loss.base import LossConfig, PolicyLossInput, PolicyLossResult
from recipe_arena.policy_loss.olmo import OlmoParams
from recipe_arena.strategy import Strategy, StrategyParams, collect, params_union, run_strategy

POLICY_LOSS: dict[str, Strategy[PolicyLossInput, PolicyLossResult]] = collect(__name__)
apply_policy_loss = partial(run_strategy, POLICY_LOSS)
"""``apply_policy_loss(params, inp)``: the loss ``params`` names, applied to ``inp``."""
if TYPE_CHECKING:
    PolicyLossConfig = StrategyParams
else:
    PolicyLossConfig = params_union(POLICY_LOSS)

__all__ = [
    "POLICY_LOSS",
    "LossConfig",
    "OlmoParams",
    "PolicyLossConfig",
    "PolicyLossInput",
    "PolicyLossResult",
    "apply_policy_loss",
]
