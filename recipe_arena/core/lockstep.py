"""The deterministic schedule (``rl.schedule=deterministic``): the actor and the learner
in lock step on a logical clock instead of wall time.

One thread runs everything in a fixed order. The clock counts the actor engine's
iterations (``TorchEngine.step``: admit waiting samples, then one token for every
running sample), and the learner's steps. For optimiser step s, the learner holding
version V (= s - 1 from a fresh start), with lag k = ``rl.lag`` and u =
``rl.update_at_decode_step``:

    the batch is sampled by version     v_s = max(v_0, V - k)      (v_0: the starting version)
    the next version lands at tick u    v_s + 1, if u is set and v_0 < V - k + 1 <= V

so every token sampled before tick u lags exactly k versions behind the learner that
trains it (fewer while the first k steps fill the pipeline) and every token after it
k - 1: ``token_versions`` change inside the sequences running at tick u. An update that
a short batch never reaches lands at the batch boundary, where the next batch starts
with that version anyway.

Which groups are in flight is fixed too: the actor holds exactly the groups the batch
still needs (N minus those counted), and each dropped group (zero reward variance,
emptied by length control, stale) is replaced by the next prompt draw. No group is
sampled beyond what the batch needs, so which groups are kept does not depend on which
finish first (no bias toward short responses), and kept groups enter the batch in the
order they were drawn, not the order they finished. Prompt draws, sampling seeds
(``core.loop.draw_seed``) and every random stream are functions of (seed, draw), so the
whole run is a function of the configuration and the seed.

Bitwise reproducibility then holds on the same machine type with the same software and
the same torch thread count (float sums are reduced in an order that depends on the
number of threads and on the CPU's kernels); machine load changes only the wall time.
The cost: generation and training no longer overlap (docs/results.md, "Deterministic scheduling").
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from recipe_arena.core.actor import Actor, ActorTask
from recipe_arena.core.learner import Learner
from recipe_arena.core.loop import (
    InFlight,
    LoopSettings,
    StepHook,
    StepRecord,
    draw_seed,
    learn,
)
from recipe_arena.core.metrics import group_metrics, length_metrics
from recipe_arena.core.prompts import PromptSource
from recipe_arena.core.types import RolloutGroup

if TYPE_CHECKING:  # annotations only: the core reads the section it is given
    from recipe_arena.config import RLConfig


@dataclass(frozen=True)
class VersionPlan:
    """Which weights sample each batch, from ``rl.lag`` and ``rl.update_at_decode_step``."""

    lag: int
    """k: versions the actor is behind the learner, 0 or more."""
    update_at: int | None
    """u: engine iterations of a batch after which the next version lands; None: at the
    batch boundary only."""
    first: int = 0
    """v_0: the version the actor starts with (the learner's at the start of training)."""

    @classmethod
    def of(cls, rl: RLConfig, first: int = 0) -> VersionPlan:
        """The plan ``rl.lag`` and ``rl.update_at_decode_step`` set, from version ``first``."""
        return cls(rl.lag, rl.update_at_decode_step, first)

    def start_version(self, learner_version: int) -> int:
        """v_s = max(v_0, V - k): the version the batch's first tokens are sampled with."""
        return max(self.first, learner_version - self.lag)

    def switch_version(self, learner_version: int) -> int | None:
        """The version landing at tick u of the batch, or None when there is none: no u,
        or V - k + 1 is not after v_0 (the pipeline is still filling) or not yet
        trained (k = 0)."""
        target = learner_version - self.lag + 1
        if self.update_at is None or not self.first < target <= learner_version:
            return None
        return target


class Snapshots:
    """The learner's weights of the versions the actor may still need: the last k + 1."""

    def __init__(
        self, plan: VersionPlan, held: Mapping[int, Mapping[str, torch.Tensor]] | None = None
    ) -> None:
        self.plan = plan
        self._by_version: dict[int, Mapping[str, torch.Tensor]] = dict(held or {})

    def add(self, version: int, weights: Mapping[str, torch.Tensor]) -> None:
        self._by_version[version] = weights
        oldest = self.plan.start_version(version)  # what the next batch starts with
        for v in [v for v in self._by_version if v < oldest]:
            del self._by_version[v]

    def __getitem__(self, version: int) -> Mapping[str, torch.Tensor]:
        return self._by_version[version]

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps: v_0 and the weights of every version held."""
        return {"first": self.plan.first, "weights": dict(self._by_version)}


@dataclass
class _Batch:
    """One batch's generation under the logical clock."""

    received: list[tuple[int, RolloutGroup]]
    kept: list[tuple[int, RolloutGroup]]
    zero_variance: list[str]
    stale: list[str]
    ticks: int
    switched_at: int | None
    metrics: dict[str, float]


def sample_batch(
    actor: Actor,
    source: PromptSource,
    flight: InFlight,
    learner_version: int,
    snapshots: Snapshots,
    s: LoopSettings,
) -> _Batch:
    """Generate, score and filter one batch on the logical clock (module docstring)."""
    rl, plan = s.rl, snapshots.plan
    start = plan.start_version(learner_version)
    if actor.version != start:
        actor.update_weights(snapshots[start], start)
    switch = plan.switch_version(learner_version)
    filler = s.batch_filler()
    out = _Batch([], [], [], [], 0, None, {})
    running: dict[str, int] = {}  # tag -> draw index
    while not filler.done:
        counted = (
            len(filler.kept)
            if rl.active_sampling
            else filler.received - filler.stale - filler.empty
        )
        while counted + len(running) < rl.prompts_per_step and (
            filler.received + len(running) < filler.max_draws
        ):
            draw = source.draws
            row = source.next()
            task = ActorTask(row=row, seed=draw_seed(s.seed, draw), tag=f"{row.id}@{draw}")
            actor.start_group(task)
            flight.issue(row.id)
            running[task.tag] = draw
        if not running:
            raise RuntimeError("deterministic schedule: the batch needs groups but none is running")
        if switch is not None and out.ticks == plan.update_at:
            actor.update_weights(snapshots[switch], switch)
            out.switched_at, switch = out.ticks, None
        finished = actor.advance()
        out.ticks += 1
        for task, group in sorted(finished, key=lambda tg: running[tg[0].tag]):
            draw = running.pop(task.tag)
            out.received.append((draw, group))
            verdict = filler.offer(group, learner_version)
            if verdict == "kept":
                out.kept.append((draw, group))
            elif verdict == "stale":
                source.requeue(group.row)
                flight.settle(group.prompt_id)
                out.stale.append(group.prompt_id)
            elif verdict in ("zero_variance", "empty"):
                flight.settle(group.prompt_id)
                out.zero_variance.append(group.prompt_id)
    out.metrics = {
        **filler.metrics(),
        "schedule/decode_steps": float(out.ticks),
        "schedule/start_version": float(start),
        "schedule/switch_at": float(-1 if out.switched_at is None else out.switched_at),
    }
    return out


def train(
    learner: Learner,
    actor: Actor,
    source: PromptSource,
    s: LoopSettings,
    start_step: int = 0,
    on_step: StepHook | None = None,
    state: dict[str, Any] | None = None,
) -> list[StepRecord]:
    """``core.loop.train`` under the deterministic schedule: optimiser steps
    start_step+1 .. rl.steps with ``actor`` driven on the learner's thread; ``on_step``
    logs, checkpoints, evaluates (each record's ``schedule_state`` is what a checkpoint
    keeps). ``state``: a checkpoint's ``schedule_state`` when resuming, so the resumed
    run samples with the versions the uninterrupted one would. Wall-time figures go to
    ``throughput/`` metrics only."""
    first = learner.version if state is None else int(state["first"])
    plan = VersionPlan.of(s.rl, first)
    snapshots = Snapshots(plan, None if state is None else state["weights"])
    snapshots.add(learner.version, learner.weights())
    if state is not None:  # resumed: the actor continues as it was at the checkpoint
        start = plan.start_version(learner.version)
        held = state.get("actor")  # None in a checkpoint made before it was kept
        if held is not None:
            actor.load_state_dict(held)
        # where the uninterrupted actor already held the first batch's version, its hooks
        # heard of that update before the checkpoint: load the weights without telling
        # them (elsewhere the first batch swaps them in, and the hooks hear of it again)
        if held is None or actor.version == start:
            actor.update_weights(snapshots[start], start, notify=False)
    flight = InFlight()
    records: list[StepRecord] = []
    actor.engine.pause()
    try:
        for step in range(start_step + 1, s.rl.steps + 1):
            t_step = time.perf_counter()
            got = sample_batch(actor, source, flight, learner.version, snapshots, s)
            t_learn = time.perf_counter()
            actor.batch_closed(actor.version)  # the batch is closed at the actor's version
            # batch rows and logged groups in draw order, not in the order they finished
            received = [g for _, g in sorted(got.received, key=lambda dg: dg[0])]
            kept = [g for _, g in sorted(got.kept, key=lambda dg: dg[0])]
            metrics = {**got.metrics, **group_metrics(received)}
            metrics.update(length_metrics(received, kept))
            metrics.update(learn(learner, kept, s))
            snapshots.add(learner.version, learner.weights())
            for g in kept:
                flight.settle(g.prompt_id)
            now = time.perf_counter()
            metrics.update(
                {
                    "throughput/step_time_s": now - t_step,
                    "throughput/generate_time_s": t_learn - t_step,
                    "throughput/learn_time_s": now - t_learn,
                    "throughput/actor_tokens": actor.stats()["tokens"],
                }
            )
            record = StepRecord(
                step=step,
                version=learner.version,
                trained=[g.prompt_id for g in kept],
                zero_variance=got.zero_variance,
                stale=got.stale,
                metrics=metrics,
                groups=kept,
                schedule_state={**snapshots.state_dict(), "actor": actor.state_dict()},
            )
            records.append(record)
            if on_step is not None:
                on_step(record, flight)
    finally:
        actor.engine.resume()
    return records
