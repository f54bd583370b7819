"""Advantage strategies: from scored rollouts to per-token advantages ``advantages_BL``.
The registry holds the ``STRATEGY`` of each module of this package; the config holds
the union of the parameter models (``axes.AdvantageConfig``). Group-relative entries
(centered, standard) and the on-policy distillation entry (distill), which reads
``AdvantageInput.teacher_logprobs_BL``."""

from __future__ import annotations

from functools import partial

from recipe_arena.advantages.base import AdvantageFn as AdvantageFn
from recipe_arena.advantages.base import AdvantageInput as AdvantageInput
from recipe_arena.advantages.base import AdvantageResult as AdvantageResult
from recipe_arena.advantages.centered import CenteredParams as CenteredParams
from recipe_arena.advantages.distill import DistillParams as DistillParams
from recipe_arena.advantages.standard import StandardParams as StandardParams
from recipe_arena.strategy import Strategy, collect, run_strategy

ADVANTAGES: dict[str, Strategy[AdvantageInput, AdvantageResult]] = collect(__name__)
compute_advantages = partial(run_strategy, ADVANTAGES)
"""``compute_advantages(params, inp)``: the strategy ``params`` names, applied to ``inp``."""
