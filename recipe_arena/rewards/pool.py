"""A process pool with hard per-call timeouts enforced from outside the worker.

Why not ``concurrent.futures.ProcessPoolExecutor``: it cannot cancel a call that
is already running, so one pathological input (``10^{10^{10}}`` handed to SymPy)
would occupy a worker forever. Why not a signal-based timeout: ``signal.alarm``
only works in the main thread, and verifiers that use it inside a worker thread
either raise or silently turn every check into "wrong". Here the parent measures
the deadline of every call and, when it passes, kills the worker process and
starts a fresh one; the other workers never notice.

Workers are forked from a template process of the pool's own, its zygote
(``rewards.zygote``: the tasks, the zygote and the worker loop). They talk to the pool
over two pipes with ``multiprocessing.connection`` framing and are reused across calls.
Thread-safe: concurrent ``run`` calls are served at the same time (see ``WorkerPool``).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from recipe_arena.domains import POOLED_DOMAINS
from recipe_arena.rewards.zygote import Zygote

START_DEATHS = 5
"""Workers in a row that die before they are ready, after which the pool gives up."""


@dataclass(frozen=True)
class Task:
    """One call: ``zygote.TASKS[name](*args)`` with a hard wall-clock limit."""

    name: str
    args: tuple[Any, ...]
    timeout_s: float


@dataclass(frozen=True)
class Outcome:
    """What came back: ``ok`` with the function's value, or an error kind and text."""

    ok: bool
    value: Any = None
    error: str = ""  # one of NO_VERDICT, or "error: ..." for a task that cannot be sent


NO_VERDICT = ("timeout", "worker_died", "exception:", "lost")
"""How ``Outcome.error`` opens when a task got no verdict from its worker: the deadline
passed, the worker died, the check raised, or the batch ended without it. Chance under
load rather than a property of the input, so what holds one is not kept
(``audit.cached_audit``)."""


class _Worker:
    def __init__(self, zygote: Zygote) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        try:
            zygote.fork((to_child_r, from_child_w))
        except BaseException:  # no worker: this side's ends are closed too
            os.close(to_child_w)
            os.close(from_child_r)
            raise
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self._zygote = zygote
        self.pid: int | None = None  # known once the worker says it is ready
        self.pidfd: int | None = None
        self.send_conn = Connection(to_child_w, readable=False)
        self.conn = Connection(from_child_r, writable=False)
        self.ready = False
        self.job: int | None = None
        self.batch: _Batch | None = None
        self.deadline = 0.0

    def started(self, pid: int) -> None:
        self.pid, self.ready = pid, True
        self.pidfd = _pidfd(pid, self._zygote.proc.pid)

    def kill(self) -> None:
        """SIGKILL, sent by this process through a pidfd (it does not need the zygote to be
        alive, and never reaches a process that reused the pid) and asked of the zygote
        too; a worker not ready yet finds its pipes closed and exits on its own."""
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            os.close(self.pidfd)
            self.pidfd = None
        if self.pid is not None:
            self._zygote.kill(self.pid)
        self.conn.close()
        self.send_conn.close()


def _pidfd(pid: int, parent: int) -> int | None:
    """A pidfd of ``pid`` if it is still a child of ``parent`` (None: gone, or no pidfd
    support here)."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            return fd
    except (OSError, IndexError, ValueError):
        pass
    os.close(fd)
    return None


@dataclass
class _Batch:
    """One ``run`` call: its tasks (pickled by the caller), what is still queued and
    running, its results."""

    tasks: Sequence[Task]
    results: list[Outcome | None]
    pending: deque[int]
    payloads: list[bytes] = field(default_factory=list)
    running: int = 0
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def finished(self) -> bool:
        return not self.pending and self.running == 0


class WorkerPool:
    """``n`` spawned workers; ``run(tasks)`` returns one Outcome per task, in order.

    A task whose deadline passes gets ``Outcome(ok=False, error="timeout")`` and its
    worker is killed and replaced. The deadline counts from the moment the task is
    handed to a ready worker, so queueing and worker start-up are not charged to it.
    ``spares`` warm standby workers take over at once when one is killed (a fresh
    worker needs seconds to import SymPy and the checkers), so a burst of hostile
    inputs does not leave the pool without workers.

    Concurrent callers (RL actors, evaluation) are served at the same time, not in turn:
    one dispatcher thread owns the workers and hands the next free worker to the caller
    with the fewest tasks running. A caller that finds every worker busy with other
    callers' tasks gets a ready spare as an extra worker (up to ``n + spares`` at once),
    so a batch of slow or hostile inputs never stalls another caller's batch.
    """

    def __init__(self, n: int, preload: Sequence[str] = POOLED_DOMAINS, spares: int = 1) -> None:
        if n < 1 or spares < 0:
            raise ValueError(f"WorkerPool needs n >= 1 and spares >= 0, got n={n}, spares={spares}")
        self._preload = tuple(preload)
        self._n = n
        self._zygote: Zygote | None = None  # started by the dispatcher thread (it dies
        self._workers: list[_Worker] = []  # with that thread, see rewards.zygote)
        # Spares start once the first workers are ready, so they do not slow start-up.
        self._n_spares = spares
        self._spares: list[_Worker] = []
        self._lock = threading.Lock()  # guards _batches and _closed only
        self._batches: list[_Batch] = []
        self.replaced = 0  # workers killed and restarted (timeouts, crashes)
        self._start_deaths = 0  # workers in a row that died before they were ready
        self._ever_ready = False
        self._closed = False  # no new calls (close(), or the dispatcher failed)
        self._shut = False  # close() ran
        self._wake_r, self._wake_w = os.pipe()
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        self._thread = threading.Thread(target=self._dispatch, daemon=True, name="verifier-pool")
        self._thread.start()
        self._started.wait()
        if self._start_error is not None:
            self.close()
            raise self._start_error

    def run(self, tasks: Sequence[Task]) -> list[Outcome]:
        """One Outcome per task, in order. A task that cannot be pickled (a ground truth
        nested too deeply, an object that does not pickle) gets an ``error:`` outcome
        here, in the caller's thread; it never reaches the dispatcher."""
        if not tasks:
            return []
        results: list[Outcome | None] = [None] * len(tasks)
        payloads: list[bytes] = [b""] * len(tasks)
        for i, t in enumerate(tasks):
            try:
                payloads[i] = pickle.dumps((t.name, t.args), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as e:  # RecursionError, PicklingError, AttributeError, ...
                results[i] = Outcome(
                    False, error=f"error: task cannot be sent ({type(e).__name__})"
                )
        todo = deque(i for i, r in enumerate(results) if r is None)
        batch = _Batch(tasks, results, todo, payloads)
        if not todo:
            return [r for r in results if r is not None]
        with self._lock:
            if self._closed:
                raise RuntimeError("WorkerPool.run called after close()")
            self._batches.append(batch)
        self._wake()
        batch.done.wait()
        if batch.error is not None:
            raise batch.error
        return [r if r is not None else Outcome(False, error="lost") for r in batch.results]

    # ------------------------------------------------------------------ dispatcher
    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def _start(self) -> None:
        try:
            self._zygote = Zygote(self._preload)
            self._workers = [_Worker(self._zygote) for _ in range(self._n)]
        except BaseException as e:
            self._start_error = e
            with self._lock:
                self._closed = True
        finally:
            self._started.set()

    def _new_worker(self) -> _Worker:
        assert self._zygote is not None
        return _Worker(self._zygote)

    def _dispatch(self) -> None:
        self._start()
        try:
            while True:
                with self._lock:
                    if self._closed:
                        break
                    batches = list(self._batches)
                self._step(batches)
        except BaseException as e:  # a worker that cannot start: every caller hears it
            with self._lock:
                self._closed = True
                waiting, self._batches = self._batches, []
            for b in waiting:
                b.error = e
                b.done.set()
        finally:
            for b in self._finish_all():
                b.done.set()

    def _finish_all(self) -> list[_Batch]:
        with self._lock:
            waiting, self._batches = self._batches, []
        for b in waiting:
            b.error = b.error or RuntimeError("WorkerPool closed while a call was waiting")
        return waiting

    def _step(self, batches: list[_Batch]) -> None:
        if len(self._spares) < self._n_spares and all(w.ready for w in self._workers):
            self._spares.append(self._new_worker())
        self._assign(batches)
        busy = [w.deadline for w in self._workers if w.job is not None]
        wait_s = max(0.0, min(busy) - time.monotonic()) if busy else 1.0
        conns: list[Any] = [w.conn for w in self._workers]
        conns += [w.conn for w in self._spares if not w.ready]
        ready_conns = wait([*conns, self._wake_r], timeout=wait_s)
        if self._wake_r in ready_conns:
            os.read(self._wake_r, 4096)
        self._poll_spares(ready_conns)
        for i, w in enumerate(list(self._workers)):
            if w.conn in ready_conns:
                self._receive(i, w)
            elif w.job is not None and time.monotonic() >= w.deadline:
                self._replace(i)  # first, so a caller woken by the outcome sees it counted
                self._finish(w, Outcome(False, error="timeout"))
        self._shrink(batches)

    def _assign(self, batches: list[_Batch]) -> None:
        """Hand free workers to the callers with the fewest tasks running."""
        while True:
            waiting = [b for b in batches if b.pending]
            if not waiting:
                return
            b = min(waiting, key=lambda x: x.running)
            free = [w for w in self._workers if w.ready and w.job is None]
            if not free and b.running == 0:
                ready = [k for k, s in enumerate(self._spares) if s.ready]
                if not ready:
                    return
                self._workers.append(self._spares.pop(ready[0]))  # burst: an extra worker
                free = [self._workers[-1]]
            if not free:
                return
            w, j = free[0], b.pending.popleft()
            w.job, w.batch, w.deadline = j, b, time.monotonic() + b.tasks[j].timeout_s
            b.running += 1
            try:
                w.send_conn.send_bytes(b.payloads[j])
            except OSError:  # it died between calls: the task is reported, the worker replaced
                self._replace(self._workers.index(w))
                self._finish(w, Outcome(False, error="worker_died"))

    def _finish(self, w: _Worker, outcome: Outcome) -> None:
        b = w.batch
        assert b is not None and w.job is not None
        b.results[w.job] = outcome
        b.running -= 1
        w.job, w.batch = None, None
        if b.finished():
            with self._lock:
                if b in self._batches:
                    self._batches.remove(b)
            b.done.set()

    def _receive(self, i: int, w: _Worker) -> None:
        try:
            raw = w.conn.recv_bytes()
        except (EOFError, OSError):
            if not w.ready:
                self._died_starting()
            self._replace(i)
            if w.job is not None:
                self._finish(w, Outcome(False, error="worker_died"))
            return
        try:
            kind, payload = pickle.loads(raw)
        except Exception as e:  # a reply nested too deeply: that call's error, not the pool's
            kind, payload = "err", f"error: the result cannot be read ({type(e).__name__})"
        if kind == "ready":
            w.started(payload)
            self._ever_ready, self._start_deaths = True, 0
        elif w.job is not None:
            ok = kind in ("ok", "ok-last")
            if kind.endswith("-last"):  # it grew too large and exits (zygote.RETIRE_GROWTH_MB)
                self._replace(i)
            self._finish(w, Outcome(ok, payload if ok else None, "" if ok else payload))

    def _shrink(self, batches: list[_Batch]) -> None:
        """Back to ``n`` workers once the burst is over (extra ones become spares again)."""
        if len(self._workers) <= self._n or any(b.pending for b in batches):
            return
        for k, w in enumerate(self._workers):
            if w.job is None and len(self._workers) > self._n:
                extra = self._workers.pop(k)
                if len(self._spares) < self._n_spares:
                    self._spares.append(extra)
                else:
                    extra.kill()
                return

    def _replace(self, i: int) -> None:
        self._workers[i].kill()
        if self._spares:
            ready = [k for k, w in enumerate(self._spares) if w.ready]
            self._workers[i] = self._spares.pop(ready[0] if ready else 0)
            self._spares.append(self._new_worker())
        else:
            self._workers[i] = self._new_worker()
        self.replaced += 1

    def _poll_spares(self, ready_conns: list[Any]) -> None:
        for w in self._spares:
            if w.conn in ready_conns:
                try:
                    _, pid = w.conn.recv()
                    w.started(pid)
                    self._ever_ready, self._start_deaths = True, 0
                except (EOFError, OSError):
                    self._died_starting()
                    w.kill()
                    self._spares[self._spares.index(w)] = self._new_worker()

    def _died_starting(self) -> None:
        """A worker died before it was ready. Fatal (every caller hears it) when workers
        cannot start at all: before any was ever ready (an import error), or
        ``START_DEATHS`` times in a row; not when its zygote was killed by a signal (from
        outside), nor otherwise: then it is replaced like any other."""
        assert self._zygote is not None
        try:
            rc = self._zygote.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            rc = None
        if rc is not None and rc < 0 and self._ever_ready:
            return
        self._start_deaths += 1
        if not self._ever_ready or self._start_deaths >= START_DEATHS:
            raise RuntimeError(
                "a verifier worker died while starting (import error?); "
                "run `python -c 'import recipe_arena.rewards.math_answer'` to see why"
            )

    def close(self) -> None:
        with self._lock:
            if self._shut:
                return
            self._shut = self._closed = True
        self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=30)
        everyone = self._workers + self._spares
        for w in everyone:
            with contextlib.suppress(OSError):
                w.send_conn.send(None)
        # A worker that took its None exits and its pipe reads EOF; one that has not
        # within 2 s (busy with a call, or hung) is killed.
        pending = {w.conn: w for w in everyone if not w.conn.closed}
        until = time.monotonic() + 2.0
        while pending and time.monotonic() < until:
            for ready in wait(list(pending), timeout=max(0.0, until - time.monotonic())):
                w = pending[ready]  # type: ignore[index]
                try:
                    w.conn.recv()  # a late reply or "ready": keep waiting for the EOF
                except (EOFError, OSError):
                    pending.pop(w.conn)
        for w in everyone:
            with contextlib.suppress(OSError):
                w.kill()
        if self._zygote is not None:
            self._zygote.close()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
