"""The asynchronous RL loop: one RL step, read top to bottom, and how it departs from
textbook GRPO.

One step (``train`` below; ``core.lockstep`` runs the same stages on a logical clock,
``core.minimal_loop`` synchronously):

    top_up_prompts   keep pipeline_depth * N prompts queued for the actors
    collect_groups   actors sample G completions per prompt (continuous batching), score
                     them as a group, apply the group-finished hook (length control);
                     the learner takes groups until N are kept: stale ones dropped and
                     requeued, zero-variance ones dropped and replaced
    batch_closed     tell the actors the batch is closed (on-batch-closed hook)
    learn            advantages (advantage hook) -> padded batch -> Learner.train_step:
                     trainer logprobs inside the forward wrappers -> staleness weights,
                     extra loss and mask -> policy loss -> backward, clip, AdamW step
    sync_weights     broadcast the new weights; actors swap them in between two decode
                     steps and keep going

Textbook GRPO (Shao et al. 2024, DeepSeekMath, arXiv:2402.03300) samples G responses per
prompt from the current policy, waits for all of them, normalises the rewards by the
group's mean and standard deviation, and minimises the PPO clipped surrogate at
ratio bounds [1 - eps, 1 + eps] averaged per sample, plus beta * KL(pi || pi_ref),
over several epochs. The default recipe (OLMo 3's OlmoRL, arXiv:2512.13961, seed sec.
9.4) departs from it, in the order a step meets each departure:

 1. Offline prompt filtering, before RL: prompts the starting policy already solves in
    more than 62.5% of 8 rollouts are dropped (``stages.prompt_filter``,
    ``prompt_filter.*``).
 2. Asynchronous generation: actors keep pipeline_depth * N prompts in flight while the
    learner trains (``top_up_prompts``; ``core.actor``, ``core.backends``,
    ``rl.pipeline_depth``), with continuous batching in the engine (finished sequences'
    slots refilled at once; ``engines.torch_engine``, ``engine.mode``).
 3. In-flight weight updates: new weights land between two decode steps of running
    sequences, which keep their KV cache (``sync_weights``, ``Actor.update_weights``,
    ``engine.keep_kv_on_update``); one rollout's tokens can come from several policy
    versions (``Rollout.token_versions``).
 4. A staleness bound: a group whose oldest token lags the learner by more than
    ``rl.max_staleness`` versions is dropped and its prompt requeued
    (``core.sampling``).
 5. Zero-gradient filtering: a group whose rewards are all equal has A = 0 everywhere
    and is dropped (DAPO's dynamic sampling; ``core.sampling``,
    ``rl.zero_gradient_filter``).
 6. Active sampling: dropped groups are replaced by new draws until the batch holds N
    prompts with reward variance (``core.sampling.BatchFiller``, ``rl.active_sampling``).
 7. No standard-deviation normalisation: A_i = r_i - mean(r_group) (Dr.GRPO;
    ``advantages.centered``, ``advantage=centered``).
 8. Truncated importance sampling: each token's policy-gradient term is weighted by
    min(pi_trainer / pi_engine, 2), correcting the engine/trainer mismatch and the
    in-flight staleness (``staleness.tis``, ``staleness=tis``).
 9. Clip-higher: ratio bounds [0.8, 1.272] instead of [0.8, 1.2] (DAPO;
    ``policy_loss.olmo``, ``loss.clip_low``, ``loss.clip_high``).
10. Token-level normalisation: the loss sums over every trained token of the batch and
    divides by their count, so long responses are not down-weighted (DAPO;
    ``policy_loss.base``, ``loss.normalisation``), exact under micro-batching
    (``Learner.train_step``, ``rl.microbatch_tokens``).
11. No KL term: beta = 0, no reference model (``loss.kl_beta``).
12. One minibatch, one epoch per batch: pi_old is the trainer's own forward, the ratio
    is 1 in value and the clip binds only when ``rl.epochs`` > 1 (``core.learner``).

The strategy axes swap steps 7 to 10 (``advantage=``, ``staleness=``,
``length_control=``, ``policy_loss=``: Kimi K3's and DeepSeek's rows of Table 9.2); the
core calls them through its hooks (``core.hooks``), built from the config by
``recipe_arena.wiring``.

Two knobs bound what is in flight, stated once:

    in flight:   prompts drawn but not yet trained or dropped  <=  pipeline_depth * N
    trainable:   learner_version - min(token_versions of the group)  <=  max_staleness

Sampling (actors) and scoring (the actors' process pool) happen off the learner's
thread; the learner's idle time is the time it waits for groups.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recipe_arena.core.actor import ActorTask
from recipe_arena.core.backends import Backend
from recipe_arena.core.batch import build_learner_batch
from recipe_arena.core.hooks import AdvantageFn
from recipe_arena.core.learner import Learner
from recipe_arena.core.metrics import group_metrics, length_metrics
from recipe_arena.core.prompts import PromptSource
from recipe_arena.core.sampling import BatchFiller
from recipe_arena.core.types import LearnerBatch, RolloutGroup

if TYPE_CHECKING:  # annotations only: the core reads the section it is given
    from recipe_arena.config import RLConfig


@dataclass(frozen=True)
class LoopSettings:
    """What the loop reads: the RL section as configured (steps, N, max_staleness,
    pipeline_depth, filtering), the advantage hook, the run seed, the pad token."""

    rl: RLConfig
    advantages: AdvantageFn
    """The advantage hook: the configured advantage strategy bound to its parameters
    (``recipe_arena.wiring.advantage_hook``)."""
    seed: int
    pad_id: int
    stall_timeout_s: float = 600.0
    """Fail (naming the cause) when no group arrives for this long."""

    def batch_filler(self) -> BatchFiller:
        """An empty batch of N prompts under the staleness rule and the filters."""
        rl = self.rl
        return BatchFiller(
            n_prompts=rl.prompts_per_step,
            max_staleness=rl.max_staleness,
            zero_gradient_filter=rl.zero_gradient_filter,
            active_sampling=rl.active_sampling,
            max_draws=rl.prompts_per_step * rl.max_resample_factor,
        )


@dataclass
class StepRecord:
    step: int
    version: int
    trained: list[str]
    zero_variance: list[str]
    stale: list[str]
    metrics: dict[str, float]
    groups: list[RolloutGroup]
    schedule_state: dict[str, Any] | None = None
    """Deterministic schedule: what a resumed run needs besides the learner and the
    prompt source (the starting version and the older weights the actor will still
    sample with; ``core.lockstep``); None under the wall-clock schedule."""


@dataclass
class InFlight:
    """Prompts drawn and handed to actors, not yet trained or dropped (a multiset)."""

    counts: collections.Counter[str] = field(default_factory=collections.Counter)

    def __len__(self) -> int:
        return sum(self.counts.values())

    def issue(self, prompt_id: str) -> None:
        self.counts[prompt_id] += 1

    def settle(self, prompt_id: str) -> None:
        self.counts[prompt_id] -= 1
        if self.counts[prompt_id] <= 0:
            del self.counts[prompt_id]

    def ids(self) -> list[str]:
        return sorted(self.counts.elements())


@dataclass
class Collected:
    filler: BatchFiller
    received: list[RolloutGroup]
    zero_variance: list[str]
    stale: list[str]
    wait_s: float


StepHook = Callable[[StepRecord, InFlight], None]


def draw_seed(seed: int, draw: int) -> int:
    """Sampling seed of the draw-th prompt draw: fixed by the run seed and the cursor."""
    return (seed * 1_000_003 + draw) % (2**31)


# ----------------------------------------------------------------------------- stages
def top_up_prompts(
    backend: Backend, source: PromptSource, flight: InFlight, s: LoopSettings
) -> None:
    """Sample stage, learner side: keep pipeline_depth * N prompts in flight."""
    while len(flight) < s.rl.pipeline_depth * s.rl.prompts_per_step:
        row = source.next()
        task = ActorTask(
            row=row, seed=draw_seed(s.seed, source.draws), tag=f"{row.id}@{source.draws}"
        )
        backend.prompts.put(task)
        flight.issue(row.id)


def collect_groups(
    backend: Backend, source: PromptSource, flight: InFlight, learner_version: int, s: LoopSettings
) -> Collected:
    """Sample + score happen in the actors; here, filter and staleness: take scored
    groups until the batch holds N prompts with reward variance (active sampling)."""
    filler = s.batch_filler()
    out = Collected(filler, [], [], [], 0.0)
    last = time.perf_counter()
    while not filler.done:
        top_up_prompts(backend, source, flight, s)
        t0 = time.perf_counter()
        group = backend.results.get(timeout=1.0)
        out.wait_s += time.perf_counter() - t0
        if group is None:
            backend.check()
            if time.perf_counter() - last > s.stall_timeout_s:
                raise RuntimeError(
                    f"no rollout group arrived for {s.stall_timeout_s:.0f} s; actors stalled"
                )
            continue
        last = time.perf_counter()
        out.received.append(group)
        verdict = filler.offer(group, learner_version)
        if verdict == "stale":
            source.requeue(group.row)  # drawn again before any new prompt
            flight.settle(group.prompt_id)
            out.stale.append(group.prompt_id)
        elif verdict in ("zero_variance", "empty"):
            flight.settle(group.prompt_id)
            out.zero_variance.append(group.prompt_id)
    return out


def advantage_batch(groups: Sequence[RolloutGroup], s: LoopSettings) -> LearnerBatch:
    """Advantage stage: the padded batch with per-token advantages (``advantages``)."""
    return build_learner_batch(groups, s.advantages, s.pad_id)


def learn(learner: Learner, kept: Sequence[RolloutGroup], s: LoopSettings) -> dict[str, float]:
    """Advantage, staleness, loss and step on the kept groups; the learner's metrics and
    the tokens trained (nothing when no group was kept)."""
    if not kept:
        return {}
    batch = advantage_batch(kept, s)
    return {**learner.train_step(batch), "throughput/trained_tokens": float(batch.num_tokens)}


def sync_weights(backend: Backend, learner: Learner) -> float:
    """Sync stage: broadcast the new weights in flight; returns seconds spent."""
    t0 = time.perf_counter()
    backend.broadcast(learner.weights(), learner.version)
    return time.perf_counter() - t0


# ----------------------------------------------------------------------------- the loop
def train(
    learner: Learner,
    backend: Backend,
    source: PromptSource,
    s: LoopSettings,
    start_step: int = 0,
    on_step: StepHook | None = None,
) -> list[StepRecord]:
    """Run optimiser steps start_step+1 .. rl.steps; ``on_step`` logs, checkpoints, evaluates."""
    flight = InFlight()
    records: list[StepRecord] = []
    backend.start()
    try:
        for step in range(start_step + 1, s.rl.steps + 1):
            t_step = time.perf_counter()
            got = collect_groups(
                backend, source, flight, learner.version, s
            )  # sample, score, filter
            backend.batch_closed(learner.version)  # what arrives now is for the next batch
            kept = got.filler.kept
            metrics = {**got.filler.metrics(), **group_metrics(got.received)}
            metrics.update(length_metrics(got.received, kept))
            t_learn = time.perf_counter()
            metrics.update(learn(learner, kept, s))  # advantage, staleness, loss, step
            learn_s = time.perf_counter() - t_learn
            sync_s = sync_weights(backend, learner)  # sync
            for g in kept:
                flight.settle(g.prompt_id)
            step_s = time.perf_counter() - t_step
            metrics.update(_timing(backend, got.wait_s, learn_s, sync_s, step_s))
            record = StepRecord(
                step=step,
                version=learner.version,
                trained=[g.prompt_id for g in kept],
                zero_variance=got.zero_variance,
                stale=got.stale,
                metrics=metrics,
                groups=kept,
            )
            records.append(record)
            if on_step is not None:
                on_step(record, flight)
    finally:
        backend.shutdown()
    return records


def _timing(
    backend: Backend, wait_s: float, learn_s: float, sync_s: float, step_s: float
) -> dict[str, float]:
    stats = backend.actor_stats()
    return {
        "throughput/step_time_s": step_s,
        "throughput/learner_idle_frac": wait_s / step_s if step_s > 0 else 0.0,
        "throughput/learn_time_s": learn_s,
        "throughput/sync_time_s": sync_s,
        "throughput/actor_tokens_per_s": sum(a["tokens_per_s"] for a in stats),
        "throughput/actor_tokens": sum(a["tokens"] for a in stats),
    }
