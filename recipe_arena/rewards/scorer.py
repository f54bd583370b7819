"""The Scorer: one verifier per domain, checks in a reusable process pool.

``score(rows, responses)`` sends every math, code and ifeval check of the batch to
the pool at once (they run in parallel, each under a hard timeout) and scores chat
rows with the configured chat verifier in the calling process (the judge holds a
model; it batches its own requests). A bad row yields a 0 with an ``error:``
reason; it never fails the batch.
"""

from __future__ import annotations

import atexit
import importlib
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.domains import POOLED_DOMAINS, VERIFIERS
from recipe_arena.rewards.pool import Task, WorkerPool
from recipe_arena.rewards.text import RewardResult

TaskFn = Callable[[PromptRow, str, RewardsConfig], Task]


def _resolve(ref: str) -> Any:
    """The function a ``"module:function"`` reference of ``domains.VERIFIERS`` names."""
    mod, _, name = ref.partition(":")
    return getattr(importlib.import_module(mod), name)


def _task_fn(domain: str, ref: str) -> TaskFn:
    """The pool task of ``domain`` for one response, from the verifier's ``task`` function
    (``domains.Verifier.task``: row, response, config -> args, deadline)."""
    make = _resolve(ref)

    def task(row: PromptRow, response: str, cfg: RewardsConfig) -> Task:
        args, timeout_s = make(row, response, cfg)
        return Task(domain, args, timeout_s)

    return task


MEMO_SIZE = 4096
"""Verdicts a scorer remembers (oldest dropped first): more than the held-out code
rows of any world, so every evaluation of a run after the first finds its unchanged
programs; a few MB."""

POOLED: dict[str, TaskFn] = {d: _task_fn(d, str(VERIFIERS[d].task)) for d in POOLED_DOMAINS}
"""Pooled domain -> its task builder (``domains.VERIFIERS``); the other domains (chat)
are scored by the judge in this process."""

MEMO: dict[str, tuple[Callable[..., str | None], Callable[[str], bool]]] = {
    d: (_resolve(v.memo_key), _resolve(v.memo_keeps))
    for d, v in VERIFIERS.items()
    if v.memo_key and v.memo_keeps
}
"""Pooled domain -> its verdict key and the test of which verdicts are kept
(``domains.Verifier.memo_key``, ``memo_keeps``): the domains whose verdicts a scorer
reuses."""


# ----------------------------------------------------------------------------- shared parts
# A worker pool (a few seconds to start: its processes import SymPy and the IFEval
# checkers) and a judge (a few seconds to load) are kept per process and per setting when
# a scorer is built with ``shared=True``, so the stages of one run (prompt filter, RL
# actors, evaluations) start them once. They are closed when the process exits.
_SHARED: dict[str, Any] = {}
_SHARED_LOCK = threading.Lock()


def _shared(key: str, build: Callable[[], Any]) -> Any:
    with _SHARED_LOCK:
        if key not in _SHARED:
            if not _SHARED:
                atexit.register(close_shared)
            _SHARED[key] = build()
        return _SHARED[key]


def shared_pool(cfg: RewardsConfig) -> WorkerPool:
    """The process's shared worker pool for ``cfg.workers`` workers, started on first
    call. A command that will score calls it before its own imports: the pool's zygote
    (a process of its own) then loads SymPy and the checkers, about 2 s of one core,
    while this process loads torch, instead of stalling the first stage that scores."""
    pool: WorkerPool = _shared(f"pool:{cfg.workers}", lambda: WorkerPool(cfg.workers))
    return pool


def _judge_key(cfg: RewardsConfig) -> str:
    fields = {
        "judge_model",
        "judge_mode",
        "judge_markers",
        "judge_max_new_tokens",
        "judge_timeout_s",
        "judge_retries",
    }
    return "judge:" + cfg.model_dump_json(include=fields)


def forget_judged() -> None:
    """Empty the memo of every shared judge of this process (``Judge.memo``). A run calls
    it before the first stage after its prefix (``prefix_cache.prefix_stages``): one that
    trained the prefix in this process would otherwise go on with the prompt filter's
    and evaluations' verdicts remembered, and log other ``chat/judge_memo_hits`` in its
    RL stage than the same run reading that prefix from the cache (same rewards, other
    counts in metrics.jsonl: 11 of the 96 steps of a broken-arm run of the Table 9.2
    study)."""
    with _SHARED_LOCK:
        items = list(_SHARED.values())
    for item in items:
        memo = getattr(item, "memo", None)
        if memo is not None:
            with item.lock:
                memo.clear()


def close_shared() -> None:
    """Close the shared pools and judges (registered to run at process exit)."""
    with _SHARED_LOCK:
        items = list(_SHARED.values())
        _SHARED.clear()
    for item in items:
        item.close()


class Scorer:
    """Scores responses; use as a context manager or call ``close()``. With
    ``shared=True`` the worker pool and the judge are the process's shared ones (see
    above) and ``close()`` leaves them running; the counters are the scorer's own."""

    def __init__(self, cfg: RewardsConfig, judge: Any = None, shared: bool = False) -> None:
        self.cfg = cfg
        self.shared = shared
        self.pool = shared_pool(cfg) if shared else WorkerPool(cfg.workers)
        self._judge = judge  # a rewards.judge.Judge; built lazily on the first chat row
        self.counts: Counter[str] = Counter()
        self._verdicts: dict[str, RewardResult | None] = {}
        """Verdicts of the ``MEMO`` domains by their key, this scorer's own (at most
        ``MEMO_SIZE``): the same program against the same tests is not run again. None
        marks a key that once got a verdict not kept (a time limit, an error): it is
        checked every time while the scorer holds the mark (like any entry, it is
        dropped, oldest first, once ``MEMO_SIZE`` newer keys came), since a program
        that can tell it failed (a loop of the tests stopped early) could otherwise hang
        then, be checked again, and keep the first pass that chance gave it."""
        self._verdicts_lock = threading.Lock()  # actors' threads may share a scorer

    # ------------------------------------------------------------------ chat
    @property
    def judge(self) -> Any:
        if self._judge is None:
            from recipe_arena.rewards.judge_model import build_judge

            if self.shared:
                self._judge = _shared(_judge_key(self.cfg), lambda: build_judge(self.cfg))
            else:
                self._judge = build_judge(self.cfg)
        return self._judge

    def _score_chat(
        self, rows: Sequence[PromptRow], responses: Sequence[str]
    ) -> list[RewardResult]:
        """The judge's verdicts; when a batch fails, each row is judged alone so that
        one bad row gets an ``error:`` reason and the others their scores."""
        with self.judge.lock:  # scorers sharing a judge take turns
            try:
                results: list[RewardResult] = self.judge.score(rows, responses)
            except Exception:
                results = [self._judge_one(r, x) for r, x in zip(rows, responses, strict=True)]
            self.counts.update(self.judge.take_counts())
        return results

    def _judge_one(self, row: PromptRow, response: str) -> RewardResult:
        try:
            result: RewardResult = self.judge.score([row], [response])[0]
        except Exception as e:
            self.counts["chat/errors"] += 1
            return RewardResult(
                0.0, f"error: judge failed on this row ({type(e).__name__}: {e})"[:200]
            )
        return result

    # ------------------------------------------------------------------ api
    def score(self, rows: Sequence[PromptRow], responses: Sequence[str]) -> list[RewardResult]:
        """One RewardResult per (row, response), in order."""
        if len(rows) != len(responses):
            raise ValueError(f"score: {len(rows)} rows but {len(responses)} responses")
        out: list[RewardResult | None] = [None] * len(rows)
        tasks: list[Task] = []
        keys: list[str | None] = []
        where: list[int] = []
        chat: list[int] = []
        for i, (row, resp) in enumerate(zip(rows, responses, strict=True)):
            if not isinstance(resp, str):
                out[i] = RewardResult(
                    0.0, f"error: response must be a string, got {type(resp).__name__}"
                )
            elif row.domain in POOLED:
                try:
                    task = POOLED[row.domain](row, resp, self.cfg)
                    memo = MEMO.get(row.domain)
                    key = memo[0](*task.args) if memo else None
                except Exception as e:  # a malformed row costs itself only
                    out[i] = RewardResult(0.0, f"error: bad row ({type(e).__name__}: {e})"[:200])
                    continue
                kept = self._verdicts.get(key) if key is not None else None
                if kept is not None:
                    out[i] = kept
                    self.counts[f"{row.domain}/checks"] += 1  # as the check it stands for
                    continue
                tasks.append(task)
                keys.append(key)
                where.append(i)
            elif row.domain in VERIFIERS:
                chat.append(i)
            else:
                out[i] = RewardResult(0.0, f"error: no verifier for domain {row.domain!r}")
        for i, key, o in zip(where, keys, self.pool.run(tasks), strict=True):
            dom = rows[i].domain
            self.counts[f"{dom}/checks"] += 1
            if o.ok:
                score, reason = o.value
                out[i] = got = RewardResult(float(score), str(reason))
                if reason.startswith("error:"):
                    self.counts[f"{dom}/errors"] += 1
                if key is not None:
                    self._keep(key, got if MEMO[dom][1](got.reason) else None)
            else:
                if key is not None:
                    self._keep(key, None)
                self.counts[f"{dom}/{o.error.split(':')[0]}"] += 1
                limit = (
                    f" after {tasks[where.index(i)].timeout_s:g}s" if o.error == "timeout" else ""
                )
                out[i] = RewardResult(0.0, f"{o.error.splitlines()[0][:200]}{limit}")
        if chat:
            for i, r in zip(
                chat,
                self._score_chat([rows[i] for i in chat], [responses[i] for i in chat]),
                strict=True,
            ):
                out[i] = r
        return [r if r is not None else RewardResult(0.0, "error: not scored") for r in out]

    def _keep(self, key: str, got: RewardResult | None) -> None:
        """Remember verdict ``got`` under ``key``, or None: keep none for it while the
        mark is held (a marked key stays marked until it is dropped, oldest first, for
        ``MEMO_SIZE`` newer keys)."""
        with self._verdicts_lock:
            if key in self._verdicts and self._verdicts[key] is None:
                return
            if key not in self._verdicts and len(self._verdicts) >= MEMO_SIZE:
                self._verdicts.pop(next(iter(self._verdicts)))
            self._verdicts[key] = got

    def score_group(self, row: PromptRow, responses: Sequence[str]) -> list[RewardResult]:
        """Scores of one prompt's G responses; group-aware for the rubric tournament."""
        return self.score_groups([(row, responses)])[0]

    def score_groups(
        self, groups: Sequence[tuple[PromptRow, Sequence[str]]]
    ) -> list[list[RewardResult]]:
        """Scores of several prompts' responses, one list per group. A chat group under
        ``chat: rubric_tournament`` is scored by a tournament among its own responses;
        every other response goes to ``score`` in one batch (checks run in parallel)."""
        out: list[list[RewardResult]] = [[] for _ in groups]
        flat_rows: list[PromptRow] = []
        flat_responses: list[str] = []
        where: list[int] = []
        for gi, (row, responses) in enumerate(groups):
            if row.domain == "chat" and self.cfg.chat == "rubric_tournament":
                out[gi] = self._tournament(row, responses)
            else:
                flat_rows += [row] * len(responses)
                flat_responses += list(responses)
                where += [gi] * len(responses)
        for gi, result in zip(where, self.score(flat_rows, flat_responses), strict=True):
            out[gi].append(result)
        return out

    def _tournament(self, row: PromptRow, responses: Sequence[str]) -> list[RewardResult]:
        from recipe_arena.rewards.rubric import tournament

        with self.judge.lock:
            results, counts = tournament(self.judge, row, responses, self.cfg)
        self.counts.update(counts)
        return results

    def metrics(self) -> dict[str, float]:
        """Counters since start, under ``reward/`` (checks, timeouts, errors, judge failures)."""
        out = {f"reward/{k}": float(v) for k, v in sorted(self.counts.items())}
        out["reward/workers_replaced"] = float(self.pool.replaced)
        return out

    def close(self) -> None:
        if self.shared:
            return
        self.pool.close()
        if self._judge is not None:
            self._judge.close()

    def __enter__(self) -> Scorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_scorer(
    cfg: RewardsConfig | None = None, judge: Any = None, shared: bool = False
) -> Scorer:
    """The scorer for ``cfg`` (defaults if None). ``judge`` overrides the configured judge;
    ``shared`` uses the process's shared worker pool and judge (see ``Scorer``)."""
    return Scorer(cfg or RewardsConfig(), judge=judge, shared=shared)
