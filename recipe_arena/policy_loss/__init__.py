"""Policy losses: from the trainer's logprobs, advantages and the staleness strategy's
weights and mask to the loss the learner back-propagates. The registry holds the
``STRATEGY`` of each module of this package; the config holds the union of the losses'
parameter models (``axes.PolicyLossConfig``) and ``loss`` (``LossConfig``), the settings
every loss shares (normalisation, clip range, KL weight)."""

from __future__ import annotations

from functools import partial

from recipe_arena.policy_loss.base import LossConfig as LossConfig
from recipe_arena.policy_loss.base import PolicyLossInput as PolicyLossInput
from recipe_arena.policy_loss.base import PolicyLossResult as PolicyLossResult
from recipe_arena.policy_loss.olmo import OlmoParams as OlmoParams
from recipe_arena.strategy import Strategy, collect, run_strategy

POLICY_LOSS: dict[str, Strategy[PolicyLossInput, PolicyLossResult]] = collect(__name__)
apply_policy_loss = partial(run_strategy, POLICY_LOSS)
"""``apply_policy_loss(params, inp)``: the loss ``params`` names, applied to ``inp``."""
