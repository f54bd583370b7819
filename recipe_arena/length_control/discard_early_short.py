"""Discard early short samples (DeepSeek-AI 2026, "DeepSeek-V4.1-Flash", arXiv:2609.19969;
seed Table 9.2, row "Length control": "discards early short samples to counter the bias
of asynchronous generation toward short rollouts"). Our precise definition:

    a group is discarded  iff  max_i phi_i + D > k * W + C

phi_i: decode steps from the opening of the generation window in which the group's
first rollout started (the engine's weight update before it) to rollout i's first
token; W: decode steps per window (between two updates); C: decode steps from a
window's opening to the moment the learner closes its batch in that window (the learner
reports each closed batch to the actors); D: the steps a full-length response takes
(the response cap, or ``full_length``); k: rl.max_staleness. W and C are medians over
the actor's last 8 windows and batches that had ended when the group's first rollout
started (``core.actor.window_as_of_start``): a batch that waits for groups it can train
can take several times its usual collect phase, and a mean would carry that outlier
into the next 8 horizons; and windows that end while the group runs would make the
decision depend on how long the group runs, which is what the rule must not see.

Why: a group whose oldest token has version a is trained only if the learner receives
it while it still holds version a + k or older, that is before it closes its batch in
window a + k: k * W + C steps after window a opened (the learner spends the rest of
that window training, and a group that arrives then is offered to the next batch,
stale). Which groups make that deadline depends on their length, so without the rule
training sees a short-biased sample: of the groups that start late, the long ones go
stale while the short ones are trained. The rule discards every group that starts too
late for a full-length response to make the deadline, short ones included; what is kept
is selected by start phase alone, which does not depend on length, and cannot go stale,
so the trained length distribution is the sampled one. The price is the discarded share
of the groups, about clamp(1 + (D - C) / W - k, 0, 1) for uniform start phases; at
k = 0 a group must start and finish inside the learner's collect phase, so D must be
below C (``full_length`` a high percentile of the lengths) for anything to be kept.

At k = 0 the deadline is not a time: the learner closes a window's batch when N
trainable groups have arrived, so C is set by the arrivals, and a kept group that
arrives after the N-th is stale however well C was estimated; each batch is then made
of its window's first finishers, the short ones. There the rule counts starts instead
(``core.actor.WindowQuota``, the group's ``in_quota``):

    at k = 0, a group is discarded  iff  it started after the window's batch closed, or
              after N of the window's groups that may still be trained had started

The batch then waits for every group it keeps, so what it trains is selected by start
order alone. What it discards is what would otherwise have filled the batch: groups
that started late and finished early, the early short samples.

Deviations: the report gives no formula. The window is measured in the torch engine's
decode steps (one token per running sequence per step); at k >= 1, with an engine that
does not count them (hf, vLLM), or before the first window has closed, nothing is
discarded (the quota of k = 0 counts groups and works with any engine). With several
actors each keeps a quota of ceil(N / actors), so up to actors - 1 groups more than
the batch needs may start in quota and go stale.
Before the learner reports a closed batch, C is taken as W (the batch closes no later
than its window ends), which keeps some groups that will go stale.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from recipe_arena.core.lazy import torch
from recipe_arena.length_control.base import LengthInput, LengthResult
from recipe_arena.strategy import Strategy, StrategyParams


class DiscardEarlyShortParams(StrategyParams):
    name: Literal["discard_early_short"] = "discard_early_short"
    full_length: int | None = Field(None, ge=1)
    """D, decode steps a full-length response takes (tokens, >= 1); None: the response
    cap rl.max_new_tokens, which guarantees no kept group goes stale. A smaller D (a
    high percentile of the lengths) discards less and lets the few longer ones go stale."""


def horizon_steps(inp: LengthInput) -> float | None:
    """k * W + C in decode steps from the window's opening (module docstring); None when
    no window has closed yet."""
    if inp.window_steps is None:
        return None
    collect = inp.collect_steps if inp.collect_steps is not None else inp.window_steps
    return inp.max_staleness * inp.window_steps + collect


def discard_early_short(inp: LengthInput, params: DiscardEarlyShortParams) -> LengthResult:
    """Keep the group iff max_i phi_i + D <= k W + C, or at k = 0 iff it started in its
    window's quota (module docstring); counts what it drops and logs the horizon
    k W + C it used."""
    g = inp.rewards_G.shape[0]
    horizon = horizon_steps(inp)
    known = bool((inp.phase_steps_G >= 0).all()) and horizon is not None
    keep = True
    metrics: dict[str, float] = {}
    if inp.in_quota is not None:  # max_staleness 0: the start count decides (module doc)
        keep = inp.in_quota
    elif known and g and horizon is not None:
        phase = int(inp.phase_steps_G.max())
        full = params.full_length if params.full_length is not None else inp.response_cap
        keep = phase + full <= horizon
        metrics = {"length/horizon_groups": 1.0, "length/horizon_steps": horizon}
    keep_G = torch.full((g,), keep, dtype=torch.bool)
    metrics["length/discarded_short"] = float(g if not keep else 0)
    metrics["length/discarded_groups"] = float(not keep)
    return LengthResult(inp.rewards_G, keep_G, metrics)


STRATEGY = Strategy(DiscardEarlyShortParams, discard_early_short)
