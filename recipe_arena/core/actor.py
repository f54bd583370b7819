"""The actor: owns an engine and a scorer, turns prompts into scored RolloutGroups.

It pulls tasks from the prompt channel, keeps up to ``max_groups_in_engine`` groups
generating at once (continuous batching backfills finished sequences), scores each
group as soon as its G completions are back (as a group: the rubric tournament compares
a group's responses with each other), hands it to the group-finished hook (length
control: rewards and which rollouts go on), and pushes the group to the result channel
with what the hook and the scorer counted for it (``RolloutGroup.metrics``). Weight
updates arrive at any time through ``update_weights`` and land between two decode
steps: the actor never drains. The strategies reach the actor only through its hooks
(``core.hooks.ActorHooks``: the weights the engine samples with, group started, group
finished, on update, on batch closed); the engine, the scorer and the teachers are
built by the caller (``recipe_arena.wiring``).

A plain class: the local backend runs ``run`` in a thread, the Ray backend wraps the
class with ``ray.remote`` where it builds it. Under the deterministic schedule
(``core.lockstep``) nothing runs in a thread of its own: the caller queues groups with
``start_group`` and moves the paused engine one iteration at a time with ``advance``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from recipe_arena.core.channels import Channel
from recipe_arena.core.engine import Completion, Engine, GenerationRequest, SamplingParams
from recipe_arena.core.hooks import ActorHooks, FinishedGroup, GroupVerdict
from recipe_arena.core.types import Rollout, RolloutGroup
from recipe_arena.data.chat import decode_response, encode_prompt
from recipe_arena.data.schema import PromptRow


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
    prompt_template: str = "chat"
    """How a row's messages become prompt tokens (``data.templates``)."""
    keep_verifier_reward: bool = False
    """Record the verifier's score on each rollout beside the reward it is trained on
    (``Rollout.verifier_reward``): set when a hook replaces the rewards (the
    spurious-reward control, noisy verifiers' label flips)."""


@dataclass
class _Pending:
    task: ActorTask
    prompt_tokens: tuple[int, ...]
    ticket: Any = None
    """What ``ActorHooks.before_sampling`` returned when the group was submitted."""
    completions: list[Completion] = field(default_factory=list)


class Actor:
    def __init__(
        self,
        actor_id: int,
        engine: Engine,
        tokenizer: Any,
        scorer: Any,
        settings: ActorSettings,
        hooks: ActorHooks | None = None,
        version: int = 0,
        teachers: Any = None,
    ) -> None:
        """``engine`` samples (its weights already the ones to sample with); ``scorer``
        scores a group (``score_group``); ``teachers``, when given, score each kept
        group's tokens (on-policy distillation, ``score_group``); ``hooks``: the
        strategies' (``core.hooks.ActorHooks``)."""
        self.actor_id = actor_id
        self.engine = engine
        self.tokenizer = tokenizer
        self.scorer = scorer
        self.settings = settings
        self.hooks = hooks or ActorHooks()
        self.version = version
        self.teachers = teachers
        self._stop = threading.Event()
        self._stepped: dict[str, _Pending] = {}
        """Groups queued by ``start_group`` and not yet finished (deterministic schedule)."""
        self.tokens_generated = 0
        self.groups_done = 0
        self.started = time.perf_counter()

    # ------------------------------------------------------------------ control
    def update_weights(
        self, state_dict: Mapping[str, torch.Tensor], version: int, notify: bool = True
    ) -> None:
        """New weights, swapped into the engine between two decode steps (as the
        before-sampling hook transforms them), then the on-update hook (unless
        ``notify`` is False: a resumed run restoring what the actor already held)."""
        hook = self.hooks.engine_weights
        self.engine.update_weights(state_dict if hook is None else hook(state_dict), version)
        self.version = version
        if notify and self.hooks.on_update is not None:
            self.hooks.on_update(version, self._engine_step())

    def state_dict(self) -> dict[str, Any]:
        """What a deterministic run's checkpoint keeps of the actor: the version it holds
        and its hooks' state (``ActorHooks.state``)."""
        keep = self.hooks.state
        return {
            "version": self.version,
            "hooks": None if keep is None else keep(self._engine_step()),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from ``state_dict``'s result in a resumed run: the hooks' state, and
        the version the actor held (``core.lockstep.train`` then loads the weights the
        first batch samples with where the actor already held them)."""
        restore = self.hooks.load_state
        if restore is not None and state.get("hooks") is not None:
            restore(state["hooks"], self._engine_step())
        self.version = int(state["version"])

    def batch_closed(self, version: int) -> None:
        """The learner, holding ``version``, has closed its batch: a group of that version
        that arrives from now on goes to the next batch. A report for a version the actor
        no longer holds is ignored; otherwise the on-batch-closed hook hears of it."""
        if version == self.version and self.hooks.on_batch_closed is not None:
            self.hooks.on_batch_closed(self._engine_step())

    def _engine_step(self) -> int | None:
        """The engine's decode-step count (None where it keeps none)."""
        step = self.engine.stats().extra.get("steps")
        return None if step is None else int(step)

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
        hook = self.hooks.before_sampling
        return _Pending(task, prompt, None if hook is None else hook())

    def _finish(self, p: _Pending) -> RolloutGroup:
        """Score the group's completions (as a group), then the group-finished hook."""
        row = p.task.row
        comps = sorted(p.completions, key=lambda c: c.sample_index)
        texts = [decode_response(self.tokenizer, c.tokens) for c in comps]
        counted = scorer_counters(self.scorer)
        results = self.scorer.score_group(row, texts)
        scored = counters_since(counted, scorer_counters(self.scorer))
        verifier_G = torch.tensor([float(r.score) for r in results])
        finished = FinishedGroup(
            row=row,
            seed=p.task.seed,
            rewards_G=verifier_G,
            lengths_G=torch.tensor([len(c.tokens) for c in comps], dtype=torch.long),
            finish_seconds_G=torch.tensor([c.seconds for c in comps]),
            start_versions_G=_edge_versions(comps, 0),
            end_versions_G=_edge_versions(comps, -1),
            start_steps=tuple(c.start_step for c in comps),
            engine_version=self.version,
            ticket=p.ticket,
        )
        hook = self.hooks.on_group_finished
        verdict = (
            GroupVerdict(verifier_G, torch.ones(len(comps), dtype=torch.bool), {})
            if hook is None
            else hook(finished)
        )
        teacher, teacher_lps = None, [None] * len(comps)
        if self.teachers is not None and bool(verdict.keep_G.any()):  # dropped: no scoring
            teacher, teacher_lps = self.teachers.score_group(
                row, p.prompt_tokens, [c.tokens for c in comps]
            )
        keep_verifier = self.settings.keep_verifier_reward
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
                verifier_reward=float(v) if keep_verifier else None,
                expert_ids=c.expert_ids,
                teacher_logprobs=tl,
                teacher=teacher,
            )
            for c, t, r, v, res, keep, tl in zip(
                comps,
                texts,
                verdict.rewards_G.tolist(),
                verifier_G.tolist(),
                results,
                verdict.keep_G.tolist(),
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
            metrics={**verdict.metrics, **scored},
        )
        if self.hooks.on_group_done is not None:
            self.hooks.on_group_done(finished, group)
        return group


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
