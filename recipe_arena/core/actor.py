"""The actor: owns an engine and a scorer, turns prompts into scored RolloutGroups.

It pulls tasks from the prompt channel, keeps up to ``max_groups_in_engine`` groups
generating at once (continuous batching backfills finished sequences), scores each
group as soon as its G completions are back (as a group: the rubric tournament compares
a group's responses with each other), applies the length-control strategy, and pushes
the group to the result channel with what length control and the scorer counted for
it (``RolloutGroup.metrics``). Weight updates arrive at any time through
``update_weights`` and land between two decode steps: the actor never drains. Under
shared quantisation (``staleness=shared_quant``) the engine runs the fake-quantised
weights the trainer's forward runs.

A plain class: the local backend runs ``run`` in a thread, the Ray backend wraps the
class with ``ray.remote`` where it builds it. Under the deterministic schedule
(``core.lockstep``) nothing runs in a thread of its own: the caller queues groups with
``start_group`` and moves the paused engine one iteration at a time with ``advance``.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from recipe_arena.config import EngineConfig, RewardsConfig, RLConfig, RunConfig
from recipe_arena.core.channels import Channel
from recipe_arena.core.sampling import has_reward_variance
from recipe_arena.core.types import Rollout, RolloutGroup
from recipe_arena.data.schema import PromptRow
from recipe_arena.engines.base import Completion, GenerationRequest, SamplingParams
from recipe_arena.length_control import LengthInput, apply_length_control
from recipe_arena.models.chat import decode_response, encode_prompt
from recipe_arena.rewards.spurious import spurious_rewards
from recipe_arena.staleness.shared_quant import quantise_state_dict
from recipe_arena.strategy import StrategyParams


@dataclass(frozen=True)
class ActorTask:
    row: PromptRow
    seed: int
    """Sampling seed of this draw (fixes the G completions given the weights)."""
    tag: str
    """Unique id of this draw (a prompt can be drawn again after a requeue)."""


@dataclass(frozen=True)
class ActorSettings:
    group_size: int
    temperature: float
    max_new_tokens: int
    max_groups_in_engine: int = 8
    """Groups generating at once (a machine setting: enough to fill the engine's batch)."""
    length_control: StrategyParams = field(
        default_factory=lambda: RunConfig.model_fields["length_control"].get_default()
    )
    """The length-control strategy's parameters (``length_control``)."""
    quant_bits: int | None = None
    """Bits of the fake quantisation the engine shares with the trainer; None: none."""
    max_staleness: int = field(default_factory=lambda: RLConfig().max_staleness)
    """rl.max_staleness, which length control may take into account."""
    prompt_template: str = "chat"
    """How a row's messages become prompt tokens (``data.templates``)."""
    spurious_p: float | None = None
    """Spurious-reward control: when set, every rollout's reward is replaced by a seeded
    random bit that is 1 with this probability, independent of the response
    (``rewards.spurious``); None trains on the verifiers' scores."""
    window_quota: int | None = None
    """At max_staleness 0: the groups of each generation window this actor's share of the
    learner's batch needs (ceil(N / actors)); None: no quota kept (``WindowQuota``)."""
    refill_equal_rewards: bool = field(
        default_factory=lambda: RLConfig().zero_gradient_filter and RLConfig().active_sampling
    )
    """Whether a group whose rewards are all equal is replaced instead of counting toward
    its batch (rl.zero_gradient_filter with rl.active_sampling, ``core.sampling``)."""
    teachers: dict[str, str] | None = None
    """On-policy distillation: route -> teacher checkpoint (``distill.teachers``); each
    group's completions are scored by its prompt's teacher and carry its logprobs.
    None: no teacher."""


@dataclass
class _Pending:
    task: ActorTask
    prompt_tokens: tuple[int, ...]
    quota: tuple[int, bool] | None = None
    """(window, in quota) when the group was submitted, if a quota is kept."""
    completions: list[Completion] = field(default_factory=list)


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


class Actor:
    def __init__(
        self,
        actor_id: int,
        model: Any,
        tokenizer: Any,
        engine_name: str,
        engine_cfg: EngineConfig,
        rewards_cfg: RewardsConfig,
        settings: ActorSettings,
        version: int = 0,
        scorer: Any = None,
    ) -> None:
        from recipe_arena.engines import build_engine

        if isinstance(model, (str, Path)):  # Ray: each actor process loads its own copy
            from recipe_arena.models.factory import load_checkpoint

            model, tokenizer = load_checkpoint(model)
        self.actor_id = actor_id
        self.tokenizer = tokenizer
        self.settings = settings
        self.version = version
        self._window_opens: list[int] = [0]
        """Engine decode-step count at which each generation window opened (an update)."""
        self._collect_steps: list[tuple[int, int]] = []
        """(engine step, decode steps since the window opened) of each batch the learner
        closed."""
        self._quota = WindowQuota(settings.window_quota) if settings.window_quota else None
        self.engine = build_engine(engine_name, model, tokenizer, engine_cfg, version=version)
        if settings.quant_bits is not None:
            self.engine.update_weights(self._engine_weights(model.state_dict()), version)
        if scorer is None:
            from recipe_arena.rewards import build_scorer

            scorer = build_scorer(rewards_cfg, shared=True)
        self.scorer = scorer
        self.teachers: Any = None
        if settings.teachers:
            from recipe_arena.distill.teachers import TeacherPool

            self.teachers = TeacherPool(settings.teachers, engine_cfg)
        self._stop = threading.Event()
        self._stepped: dict[str, _Pending] = {}
        """Groups queued by ``start_group`` and not yet finished (deterministic schedule)."""
        self.tokens_generated = 0
        self.groups_done = 0
        self.started = time.perf_counter()

    # ------------------------------------------------------------------ control
    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        self.engine.update_weights(self._engine_weights(state_dict), version)
        self.version = version
        if self._quota is not None:
            self._quota.open()
        step = self.engine.stats().extra.get("steps")
        if step is not None:
            self._window_opens.append(int(step))

    def batch_closed(self, version: int) -> None:
        """The learner, holding ``version``, has closed its batch: a group of that version
        that arrives from now on goes to the next batch. Records the step and how many
        decode steps into the current window that happened
        (``length_control.discard_early_short``)."""
        if version != self.version:
            return
        if self._quota is not None:
            self._quota.close()
        step = self.engine.stats().extra.get("steps")
        if step is not None:
            self._collect_steps.append((int(step), int(step) - self._window_opens[-1]))

    def _window(self, comps: list[Completion]) -> tuple[torch.Tensor, float | None, float | None]:
        return window_as_of_start(
            [c.start_step for c in comps], self._window_opens, self._collect_steps
        )

    def _engine_weights(self, state_dict: Mapping[str, torch.Tensor]) -> Mapping[str, torch.Tensor]:
        """The weights the engine runs: the trainer's, fake-quantised when shared."""
        if self.settings.quant_bits is None:
            return state_dict
        return quantise_state_dict(state_dict, self.settings.quant_bits)

    def stop(self) -> None:
        self._stop.set()

    def stats(self) -> dict[str, float]:
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        return {
            "tokens": float(self.tokens_generated),
            "groups": float(self.groups_done),
            "tokens_per_s": self.tokens_generated / elapsed,
        }

    def close(self) -> None:
        self.engine.close()
        if self.teachers is not None:
            self.teachers.close()
        close = getattr(self.scorer, "close", None)
        if close is not None:
            close()

    # ------------------------------------------------------------------ work
    def run(self, prompts: Channel, results: Channel) -> dict[str, float]:
        """Generate and score until ``stop``; returns throughput counters."""
        self.started = time.perf_counter()
        pending: dict[str, _Pending] = {}
        while not self._stop.is_set():
            while len(pending) < self.settings.max_groups_in_engine:
                task = prompts.get(timeout=0.0 if pending else 0.05)
                if task is None:
                    break
                pending[task.tag] = self._submit(task)
            if not pending:
                continue
            c = self.engine.get(timeout=0.05)
            if c is None:
                continue
            p = pending[c.request_id]
            p.completions.append(c)
            if len(p.completions) == self.settings.group_size:
                del pending[c.request_id]
                results.put(self._finish(p))
        return self.stats()

    def rollouts(self, tasks: list[ActorTask]) -> list[RolloutGroup]:
        """Synchronous form: generate every task's group, wait for all, score them."""
        pending = {t.tag: self._submit(t) for t in tasks}
        remaining = len(tasks) * self.settings.group_size
        while remaining:
            c = self.engine.get(timeout=1.0)
            if c is not None:
                pending[c.request_id].completions.append(c)
                remaining -= 1
        return [self._finish(pending[t.tag]) for t in tasks]

    def start_group(self, task: ActorTask) -> None:
        """Deterministic schedule: queue ``task``'s group in the (paused) engine; it
        starts at the next ``advance``."""
        self._stepped[task.tag] = self._submit(task)

    def advance(self) -> list[tuple[ActorTask, RolloutGroup]]:
        """Deterministic schedule: one engine iteration (``TorchEngine.step``: admissions
        and one token for every running sample) on the caller's clock; returns the groups
        it finished, each scored, with its task, in the order the engine finished them."""
        self.engine.step()  # type: ignore[attr-defined]
        done: list[_Pending] = []
        while (c := self.engine.get(timeout=0)) is not None:
            p = self._stepped[c.request_id]
            p.completions.append(c)
            if len(p.completions) == self.settings.group_size:
                done.append(self._stepped.pop(c.request_id))
        return [(p.task, self._finish(p)) for p in done]

    def _submit(self, task: ActorTask) -> _Pending:
        s = self.settings
        prompt = encode_prompt(self.tokenizer, task.row, self.settings.prompt_template)
        params = SamplingParams(
            max_new_tokens=s.max_new_tokens,
            temperature=s.temperature,
            n=s.group_size,
            seed=task.seed,
        )
        self.engine.submit(
            GenerationRequest(request_id=task.tag, prompt_tokens=prompt, sampling=params)
        )
        return _Pending(task, prompt, self._quota.start() if self._quota else None)

    def _finish(self, p: _Pending) -> RolloutGroup:
        """Score the group's completions (as a group) and apply length control."""
        row = p.task.row
        comps = sorted(p.completions, key=lambda c: c.sample_index)
        texts = [decode_response(self.tokenizer, c.tokens) for c in comps]
        counted = scorer_counters(self.scorer)
        results = self.scorer.score_group(row, texts)
        scored = counters_since(counted, scorer_counters(self.scorer))
        verifier_G = torch.tensor([float(r.score) for r in results])
        rewards_G = verifier_G
        if self.settings.spurious_p is not None:  # the control: rewards carry no signal
            rewards_G = spurious_rewards(p.task.seed, len(texts), self.settings.spurious_p)
        phases_G, window, collect = self._window(comps)
        lc = apply_length_control(
            self.settings.length_control,
            LengthInput(
                rewards_G=rewards_G,
                lengths_G=torch.tensor([len(c.tokens) for c in comps], dtype=torch.long),
                row_budget=row.token_budget,
                effort=row.effort,
                finish_seconds_G=torch.tensor([c.seconds for c in comps]),
                start_versions_G=_edge_versions(comps, 0),
                end_versions_G=_edge_versions(comps, -1),
                engine_version=self.version,
                phase_steps_G=phases_G,
                window_steps=window,
                collect_steps=collect,
                response_cap=self.settings.max_new_tokens,
                max_staleness=self.settings.max_staleness,
                in_quota=None if p.quota is None else p.quota[1],
            ),
        )
        teacher, teacher_lps = None, [None] * len(comps)
        if self.teachers is not None and bool(lc.keep_G.any()):  # a dropped group: no scoring
            teacher, teacher_lps = self.teachers.score_group(
                row, p.prompt_tokens, [c.tokens for c in comps]
            )
        rollouts = tuple(
            Rollout(
                prompt_id=row.id,
                prompt_tokens=p.prompt_tokens,
                completion_tokens=c.tokens,
                behavior_logprobs=c.logprobs,
                token_versions=c.token_versions,
                finish_reason=c.finish_reason,
                domain=row.domain,
                text=t,
                reward=float(r),
                reward_reason=res.reason,
                gen_seconds=c.seconds,
                verifier_reward=None if self.settings.spurious_p is None else float(v),
                expert_ids=c.expert_ids,
                teacher_logprobs=tl,
                teacher=teacher,
            )
            for c, t, r, v, res, keep, tl in zip(
                comps,
                texts,
                lc.rewards_G.tolist(),
                verifier_G.tolist(),
                results,
                lc.keep_G.tolist(),
                teacher_lps,
                strict=True,
            )
            if keep
        )
        self.tokens_generated += sum(len(c.tokens) for c in comps)
        self.groups_done += 1
        group = RolloutGroup(
            row=row,
            rollouts=rollouts,
            sampled_lengths=tuple(len(c.tokens) for c in comps),
            metrics={**lc.metrics, **scored},
        )
        if self._quota is not None and p.quota is not None:  # counted as the learner will
            counts = (
                has_reward_variance(group) if self.settings.refill_equal_rewards else bool(rollouts)
            )
            self._quota.finished(*p.quota, trainable=counts)
        return group


def window_as_of_start(
    starts: list[int | None], opens: list[int], closes: list[tuple[int, int]]
) -> tuple[torch.Tensor, float | None, float | None]:
    """A group's place in its generation window, for ``length_control.discard_early_short``.

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


def scorer_counters(scorer: Any) -> dict[str, float]:
    """The scorer's counters since it started (``Scorer.metrics``: ``reward/<domain>/...``);
    empty for a scorer that keeps none."""
    metrics = getattr(scorer, "metrics", None)
    return dict(metrics()) if metrics is not None else {}


def counters_since(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """What the counters added between two readings (the ones that moved): one group's
    checks, timeouts and judge verdicts, summed per step by ``core.metrics``."""
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}


def _edge_versions(comps: list[Completion], at: int) -> torch.Tensor:
    """Policy version of each completion's first (``at`` 0) or last (-1) token; -1 if empty."""
    return torch.tensor(
        [c.token_versions[at] if c.token_versions else -1 for c in comps], dtype=torch.long
    )
