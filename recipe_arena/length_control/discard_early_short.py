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
started (``window_as_of_start``): a batch that waits for groups it can train
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
(``WindowQuota``, the group's ``in_quota``):

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

Where it lives: the rule is ``discard_early_short``, a pure function of the group and its
place in its window (``WindowedInput``); each actor keeps that place with ``WindowKeeper``,
whose methods are the actor's hooks (``core.hooks.ActorHooks``: a weight update opens a
window, the learner's closed batch ends its collect phase, a group's start takes its
quota ticket, its end frees the place of a group that will not be trained).
"""

from __future__ import annotations

import statistics
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from recipe_arena.core.hooks import ActorHooks, FinishedGroup, RunFacts
from recipe_arena.core.lazy import torch
from recipe_arena.length_control.base import LengthInput, LengthResult, length_input
from recipe_arena.strategy import Strategy, StrategyParams

if TYPE_CHECKING:
    from recipe_arena.core.types import RolloutGroup


class DiscardEarlyShortParams(StrategyParams):
    name: Literal["discard_early_short"] = "discard_early_short"
    full_length: int | None = Field(None, ge=1, examples=[50])
    """D, decode steps a full-length response takes (tokens, >= 1); None: the response
    cap rl.max_new_tokens, which guarantees no kept group goes stale. A smaller D (a
    high percentile of the lengths) discards less and lets the few longer ones go stale."""


@dataclass(frozen=True)
class WindowedInput(LengthInput):
    """A group with its place in the engine's generation windows (module docstring)."""

    phase_steps_G: torch.Tensor
    """int64, decode steps from the opening of the generation window in which the
    group's first rollout started (the engine's last weight update before that token) to
    each rollout's first token; -1 where the engine does not count decode steps."""
    window_steps: float | None
    """W: median decode steps of the actor's recent generation windows (between two
    weight updates); None before a window has closed."""
    collect_steps: float | None
    """C: decode steps from a window's opening to the moment the learner closed its
    batch in that window, the median over the actor's recent windows; None when the
    learner has not reported a closed batch yet."""
    response_cap: int
    """rl.max_new_tokens: the decode steps a full-length response takes."""
    max_staleness: int
    """k, rl.max_staleness."""
    in_quota: bool | None = None
    """At k = 0: whether the group started while its window's batch still needed groups
    (``WindowQuota``); such a group is trained whatever its length, since the batch
    waits for it. None at k > 0 or where no quota is kept."""


def horizon_steps(inp: WindowedInput) -> float | None:
    """k * W + C in decode steps from the window's opening (module docstring); None when
    no window has closed yet."""
    if inp.window_steps is None:
        return None
    collect = inp.collect_steps if inp.collect_steps is not None else inp.window_steps
    return inp.max_staleness * inp.window_steps + collect


def discard_early_short(inp: LengthInput, params: DiscardEarlyShortParams) -> LengthResult:
    """Keep the group iff max_i phi_i + D <= k W + C, or at k = 0 iff it started in its
    window's quota (module docstring); counts what it drops and logs the horizon
    k W + C it used. A group without its place in a window (a plain ``LengthInput``) is
    kept."""
    g = inp.rewards_G.shape[0]
    keep = True
    metrics: dict[str, float] = {}
    if isinstance(inp, WindowedInput):
        horizon = horizon_steps(inp)
        known = bool((inp.phase_steps_G >= 0).all()) and horizon is not None
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


@dataclass
class WindowQuota:
    """Which groups a window's batch trains at max_staleness 0, counted as they start.

    At max_staleness 0 a group is trained only if the learner receives it before it closes
    the batch of the window in which the group started. The learner closes that batch
    when N trainable groups have arrived, so a window's first N trainable groups to
    *arrive* are trained, and the groups that arrive first are the short ones: a deadline
    set by the arrivals, which no estimate of when the batch will close can meet. Counted
    at the start instead, the selection does not see length:

        a group is in quota  iff  the batch has not closed and
                                  admitted - untrainable < need  when it starts

    ``admitted``: groups of this window found in quota so far; ``untrainable``: those of
    them that have finished and will not count toward the batch (no rollout kept, or
    equal rewards where those are refilled); ``need``: the actor's share of N. The
    batch then closes only when every group in quota has arrived (at the close,
    admitted - untrainable = N trainable arrived, so none is still running), and a group
    in quota is trained whatever its length. Each weight update opens a new window.
    """

    need: int
    window: int = 0
    admitted: int = 0
    untrainable: int = 0
    closed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """The learner's thread opens and closes windows while the actor's starts groups."""

    def open(self) -> None:
        """A weight update: a new window, nothing admitted."""
        with self._lock:
            self.window += 1
            self.admitted = self.untrainable = 0
            self.closed = False

    def close(self) -> None:
        """The learner has closed the window's batch: nothing more is admitted."""
        with self._lock:
            self.closed = True

    def start(self) -> tuple[int, bool]:
        """A group starts: (its window, whether it is in quota)."""
        with self._lock:
            ok = not self.closed and self.admitted - self.untrainable < self.need
            self.admitted += ok
            return self.window, ok

    def finished(self, window: int, in_quota: bool, trainable: bool) -> None:
        """A group has finished; one in this window's quota that will not be trained
        frees its place."""
        with self._lock:
            if in_quota and window == self.window and not trainable:
                self.untrainable += 1


def window_as_of_start(
    starts: list[int | None], opens: list[int], closes: list[tuple[int, int]]
) -> tuple[torch.Tensor, float | None, float | None]:
    """A group's place in its generation window.

    ``starts``: each rollout's first-token engine step; ``opens``: the engine step of each
    window's opening (weight update), ascending; ``closes``: (engine step, decode steps
    into its window) of each batch the learner closed. Returns each rollout's step counted
    from the opening of the window in which the group's first rollout started (all -1 if
    any is unknown), and the median window and median collect phase of the last 8 that
    had ended when that rollout started (None where there is none yet).

    Medians: a batch that waits for groups it can train can take several times its usual
    collect phase. As of the group's start: a group that runs long finishes after more
    windows than a short one, and judging it against those later windows would make the
    decision depend on its own length."""
    known = [s for s in starts if s is not None]
    if not known or len(known) < len(starts):
        return torch.full((len(starts),), -1, dtype=torch.long), None, None
    first = min(known)
    before = [o for o in opens if o <= first]
    phases = [s - before[-1] for s in known]
    recent = before[-9:]
    widths = [b - a for a, b in zip(recent, recent[1:], strict=False)]
    window = statistics.median(widths) if widths else None
    collects = [c for step, c in closes if step <= first][-8:]
    collect = statistics.median(collects) if collects else None
    return torch.tensor(phases, dtype=torch.long), window, collect


@dataclass
class WindowKeeper:
    """One actor's record of its generation windows, batches and quota; its methods are
    the actor's hooks (module docstring)."""

    params: DiscardEarlyShortParams
    facts: RunFacts
    opens: list[int] = field(default_factory=lambda: [0])
    """Engine decode-step count at which each generation window opened (an update)."""
    closes: list[tuple[int, int]] = field(default_factory=list)
    """(engine step, decode steps since the window opened) of each batch the learner
    closed."""
    quota: WindowQuota | None = None
    """At max_staleness 0, with the actor's share of the batch known: the quota."""

    def __post_init__(self) -> None:
        if self.facts.max_staleness == 0 and self.facts.batch_share:
            self.quota = WindowQuota(self.facts.batch_share)

    def on_update(self, version: int, engine_step: int | None) -> None:
        """A weight update opens a window."""
        del version
        if self.quota is not None:
            self.quota.open()
        if engine_step is not None:
            self.opens.append(engine_step)

    def state(self, engine_step: int | None) -> dict[str, Any]:
        """What a checkpoint keeps: the windows' openings and the closed batches, in
        decode steps before ``engine_step`` (``ActorHooks.state``), and the quota."""
        now = engine_step or 0
        quota = self.quota
        return {
            "opens": [o - now for o in self.opens],
            "closes": [[step - now, collect] for step, collect in self.closes],
            "quota": None
            if quota is None
            else [quota.window, quota.admitted, quota.untrainable, quota.closed],
        }

    def load_state(self, state: dict[str, Any], engine_step: int | None) -> None:
        """``state``'s result, counted from a resumed run's engine step ``engine_step``."""
        now = engine_step or 0
        self.opens = [o + now for o in state["opens"]]
        self.closes = [(step + now, collect) for step, collect in state["closes"]]
        if self.quota is not None and state["quota"] is not None:
            q = self.quota
            q.window, q.admitted, q.untrainable, q.closed = state["quota"]

    def on_batch_closed(self, engine_step: int | None) -> None:
        """The learner closed the batch of the current window: the quota closes and the
        collect phase is recorded."""
        if self.quota is not None:
            self.quota.close()
        if engine_step is not None:
            self.closes.append((engine_step, engine_step - self.opens[-1]))

    def before_sampling(self) -> tuple[int, bool] | None:
        """A group starts: its (window, in quota), if a quota is kept."""
        return None if self.quota is None else self.quota.start()

    def on_group_finished(self, group: FinishedGroup) -> LengthResult:
        """The rule on the group placed in its window."""
        phases_G, window, collect = window_as_of_start(
            list(group.start_steps), self.opens, self.closes
        )
        ticket = group.ticket
        inp = WindowedInput(
            **vars(length_input(group)),
            phase_steps_G=phases_G,
            window_steps=window,
            collect_steps=collect,
            response_cap=self.facts.max_new_tokens,
            max_staleness=self.facts.max_staleness,
            in_quota=None if ticket is None else ticket[1],
        )
        return discard_early_short(inp, self.params)

    def on_group_done(self, finished: FinishedGroup, group: RolloutGroup) -> None:
        """A group in quota that will not count toward the batch frees its place,
        counted as the learner will count it (``core.sampling``)."""
        from recipe_arena.core.sampling import has_reward_variance  # imports torch

        if self.quota is None or finished.ticket is None:
            return
        trainable = (
            has_reward_variance(group) if self.facts.refill_equal_rewards else bool(group.rollouts)
        )
        window, in_quota = finished.ticket
        self.quota.finished(window, in_quota, trainable=trainable)


def window_hooks(params: DiscardEarlyShortParams, facts: RunFacts) -> ActorHooks:
    """One actor's hooks: a ``WindowKeeper`` of its own."""
    keeper = WindowKeeper(params, facts)
    return ActorHooks(
        before_sampling=keeper.before_sampling,
        on_group_finished=keeper.on_group_finished,
        on_group_done=keeper.on_group_done,
        on_update=keeper.on_update,
        on_batch_closed=keeper.on_batch_closed,
        state=keeper.state,
        load_state=keeper.load_state,
    )


STRATEGY = Strategy(DiscardEarlyShortParams, discard_early_short, actor_hooks=window_hooks)
