"""The verifier process pool: hard timeouts from outside, worker replacement, order."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from recipe_arena.rewards.pool import Task, WorkerPool
from tests.hostile_tally import record


def test_timeout_kills_only_the_slow_call_and_pool_recovers() -> None:
    """Tasks sleep 0.1, 30, 0.1, 0.2 s with a 1.5 s limit on 2 workers: the 30 s one
    times out, the others return their argument in order; the whole run ends well
    before 30 s, one worker was replaced, and the next run works."""
    with WorkerPool(2, preload=("sleep",)) as pool:
        tasks = [Task("sleep", (s,), 1.5) for s in (0.1, 30.0, 0.1, 0.2)]
        t0 = time.monotonic()
        out = pool.run(tasks)
        assert time.monotonic() - t0 < 20.0
        assert [o.ok for o in out] == [True, False, True, True]
        assert out[1].error == "timeout"
        assert [out[i].value for i in (0, 2, 3)] == [0.1, 0.1, 0.2]
        assert pool.replaced == 1
        assert pool.run([Task("sleep", (0.0,), 5.0)])[0].value == 0.0


def test_deadline_enforced_from_a_non_main_thread() -> None:
    """The same timeout works when run() is called from a worker thread (no signals)."""
    got: list = []
    with WorkerPool(1, preload=("sleep",)) as pool:
        th = threading.Thread(target=lambda: got.extend(pool.run([Task("sleep", (30.0,), 1.0)])))
        t0 = time.monotonic()
        th.start()
        th.join(timeout=20)
        assert time.monotonic() - t0 < 15.0
    assert got and got[0].error == "timeout"


def test_a_worker_killed_from_outside_is_reported_and_replaced() -> None:
    """SIGKILL the worker while it sleeps (a real crash): that call reports worker_died,
    the pool replaces the worker and serves the next call."""
    with WorkerPool(1, preload=("sleep",)) as pool:
        pool.run([Task("sleep", (0.0,), 5.0)])  # the worker is up
        pid = pool._workers[0].pid
        threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
        out = pool.run([Task("sleep", (5.0,), 20.0)])
        assert out[0].error == "worker_died"
        assert pool.run([Task("sleep", (0.0,), 5.0)])[0].ok


def test_exceptions_come_back_as_errors() -> None:
    """sleep(-1) raises ValueError inside the worker: an error outcome, no crash."""
    with WorkerPool(1, preload=("sleep",)) as pool:
        out = pool.run([Task("sleep", (-1,), 5.0)])
        assert not out[0].ok and "ValueError" in out[0].error


def test_concurrent_callers_each_get_their_own_results() -> None:
    """Two threads share one pool (as actors share a scorer): each gets back exactly its
    own arguments, in its own order."""
    got: dict[str, list[float]] = {}
    with WorkerPool(2, preload=("sleep",)) as pool:

        def call(name: str, values: list[float]) -> None:
            got[name] = [o.value for o in pool.run([Task("sleep", (v,), 10.0) for v in values])]

        a = threading.Thread(target=call, args=("a", [0.01, 0.02, 0.03]))
        b = threading.Thread(target=call, args=("b", [0.04, 0.05]))
        a.start()
        b.start()
        a.join()
        b.join()
    assert got == {"a": [0.01, 0.02, 0.03], "b": [0.04, 0.05]}


def test_workers_started_by_a_thread_that_has_exited_keep_working() -> None:
    """The spare worker is started during the first run(), here called from a short-lived
    thread. After that thread exits, a timeout swaps the spare in, and it must still
    answer: workers exit with the parent *process*, not with the thread that started
    them (a parent-death signal fires on the thread's exit and kills them)."""
    with WorkerPool(1, preload=("sleep",), spares=1) as pool:
        th = threading.Thread(target=lambda: pool.run([Task("sleep", (0.5,), 10.0)]))
        th.start()
        th.join()
        time.sleep(1.5)
        out = pool.run([Task("sleep", (30.0,), 1.0), Task("sleep", (0.0,), 10.0)])
        assert out[0].error == "timeout"
        assert out[1].ok and out[1].value == 0.0


def test_a_slow_caller_does_not_stall_another() -> None:
    """Thread A sends 8 calls that hang (sleep 60 s, limit 4 s) to a 2-worker pool; while
    both workers are stuck, thread B sends 50 calls of 1 ms. B must not wait for A: a
    serialised pool would give B its first worker after A's 8 / 2 * 4 = 16 s; here B gets
    a warm spare at once and finishes before A's first timeout (4 s)."""
    with WorkerPool(2, preload=("sleep",), spares=1) as pool:
        pool.run([Task("sleep", (0.0,), 30.0)])
        deadline = time.monotonic() + 60
        while not (pool._spares and pool._spares[0].ready) and time.monotonic() < deadline:
            time.sleep(0.05)
        got: dict[str, float] = {}

        def call(name: str, tasks: list[Task]) -> None:
            t0 = time.monotonic()
            out = pool.run(tasks)
            got[name] = time.monotonic() - t0
            got[name + "_ok"] = sum(o.ok for o in out)

        a = threading.Thread(target=call, args=("a", [Task("sleep", (60.0,), 4.0)] * 8))
        a.start()
        time.sleep(0.3)  # A holds both workers
        call("b", [Task("sleep", (0.001,), 10.0)] * 50)
        assert got["b_ok"] == 50
        assert got["b"] < 4.0, got
        a.join(timeout=120)
        assert got["a_ok"] == 0


def _parent_of(pid: int) -> int | None:
    """The parent pid of a live process (None once it is gone; a zombie has state Z)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return None
    status = dict(line.split(":\t", 1) for line in text.splitlines())
    return None if status["State"].startswith("Z") else int(status["PPid"])


def _gone(pid: int, within_s: float = 10.0) -> bool:
    """Whether ``/proc/pid`` disappears within ``within_s`` (dead and reaped, not a zombie)."""
    deadline = time.monotonic() + within_s
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    return not os.path.exists(f"/proc/{pid}")


def test_workers_are_forks_of_the_pools_zygote_and_are_reaped() -> None:
    """Every worker, the spare and a replacement after a timeout too, is a child of the
    pool's zygote (forked from its warmed state, not a fresh interpreter); the worker
    killed for the timeout is reaped by the zygote, not left a zombie; closing the pool
    ends the zygote and every worker."""
    with WorkerPool(2, preload=("sleep",), spares=1) as pool:
        pool.run([Task("sleep", (0.0,), 30.0)] * 2)
        deadline = time.monotonic() + 60
        while not (pool._spares and pool._spares[0].ready) and time.monotonic() < deadline:
            time.sleep(0.05)
        zygote = pool._zygote.proc.pid
        first = [w.pid for w in pool._workers + pool._spares]
        assert None not in first and len(set(first)) == 3
        assert [_parent_of(p) for p in first] == [zygote] * 3  # type: ignore[arg-type]
        out = pool.run([Task("sleep", (30.0,), 1.0), Task("sleep", (0.0,), 10.0)])
        assert out[0].error == "timeout" and pool.replaced == 1
        killed = [p for p in first if p not in {w.pid for w in pool._workers + pool._spares}]
        assert len(killed) == 1 and _gone(killed[0])
        pool.run([Task("sleep", (0.0,), 30.0)] * 2)
        now = [w.pid for w in pool._workers]
        assert [_parent_of(p) for p in now] == [zygote] * 2  # type: ignore[arg-type]
    assert pool._zygote.proc.poll() is not None
    assert all(_gone(p) for p in now)


def test_a_zygote_killed_from_outside_is_started_again() -> None:
    """SIGKILL the zygote: its workers exit (they watch their parent), the calls in
    flight report worker_died, and the next workers come from a new zygote."""
    with WorkerPool(1, preload=("sleep",)) as pool:
        pool.run([Task("sleep", (0.0,), 5.0)])
        old, worker = pool._zygote.proc.pid, pool._workers[0].pid
        threading.Timer(0.5, os.kill, (old, signal.SIGKILL)).start()
        out = pool.run([Task("sleep", (5.0,), 20.0)])
        assert out[0].error == "worker_died"
        assert _gone(worker)
        assert pool.run([Task("sleep", (0.0,), 5.0)])[0].ok
        assert pool._zygote.proc.pid != old
        assert _parent_of(pool._workers[0].pid) == pool._zygote.proc.pid  # type: ignore[arg-type]


def test_a_zygote_that_cannot_load_its_tasks_fails_the_call() -> None:
    """A task name the zygote cannot load (here one that does not exist; in practice an
    import error) ends the zygote before any worker is forked: the caller gets a
    RuntimeError that says so, instead of waiting for a worker that never starts."""
    pool = WorkerPool(1, preload=("no_such_task",))
    try:
        with pytest.raises(RuntimeError, match="died while starting"):
            pool.run([Task("sleep", (0.0,), 5.0)])
    finally:
        pool.close()


# ---------------------------------------------------------------- owner death, bad inputs
OWNER = """
import sys, threading, time
from recipe_arena.rewards.pool import Task, WorkerPool
from tests.hostile_tally import record
pool = WorkerPool(2, preload=("math",), spares=1)
pool.run([Task("math", ("1", "\\\\boxed{1}"), 60.0)] * 2)
deadline = time.monotonic() + 60
while not (pool._spares and pool._spares[0].ready) and time.monotonic() < deadline:
    time.sleep(0.05)
pids = [pool._zygote.proc.pid] + [w.pid for w in pool._workers + pool._spares]
print(" ".join(map(str, pids)), flush=True)
tower = Task("math", ("1", "\\\\boxed{9^{9^{9^{9}}}}"), 600.0)
threading.Thread(target=pool.run, args=([tower, tower],), daemon=True).start()
time.sleep(600)
"""


def _busy(pid: int) -> bool:
    """Whether ``pid`` is running (state R) or has used CPU in the last 0.3 s."""

    def ticks() -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    before = ticks()
    time.sleep(0.3)
    return ticks() > before


def _address_limit(pid: int) -> str:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max address space"):
            return line.split()[3]
    return ""


@pytest.mark.parametrize("how", ["sigkill", "sigkill_zygote_first", "os_exit"])
def test_workers_die_with_their_owner_whatever_kills_it(how: str, tmp_path: Path) -> None:
    """An owner process runs two math checks of 9^{9^{9^9}} (a tower of powers: minutes
    of CPU in SymPy) on 2 workers plus a spare. While both workers compute (each under
    the math address-space limit, 1024 MiB = 1073741824 bytes in /proc/PID/limits), the
    owner is ended: by SIGKILL; by SIGKILL after its zygote was SIGKILLed (the workers'
    end must not need the zygote); or by os._exit from a thread (no close(), no atexit).
    Within 5 s the zygote, both busy workers and the spare are gone."""
    script = OWNER
    if how == "os_exit":
        script = script.replace("time.sleep(600)", "time.sleep(1.5)\nimport os\nos._exit(3)")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True
    )
    pids: list[int] = []
    try:
        assert proc.stdout is not None
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 4, pids
        zygote, workers = pids[0], pids[1:3]
        deadline = time.monotonic() + 30
        while not all(_busy(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(_busy(w) for w in workers)
        assert [_address_limit(w) for w in workers] == ["1073741824"] * 2
        if how == "sigkill_zygote_first":
            os.kill(zygote, signal.SIGKILL)
            os.kill(proc.pid, signal.SIGKILL)
        elif how == "sigkill":
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        gone = all(_gone(p, within_s=5.0) for p in pids)
        record("verifier pool: owner killed during a check", 1, int(gone))
        assert gone, [p for p in pids if not _gone(p, 0)]
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        for p in pids:  # leave nothing running if the test failed
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)


def test_a_frozen_zygote_does_not_stop_a_timeout_kill() -> None:
    """The zygote is stopped (SIGSTOP: alive, but it answers nothing) while a call that
    sleeps 30 s runs under a 1 s limit: the pool still kills that worker itself (through
    a pidfd), the call reports timeout, and the worker is gone within 5 s."""
    with WorkerPool(1, preload=("sleep",), spares=0) as pool:
        pool.run([Task("sleep", (0.0,), 5.0)])
        zygote, worker = pool._zygote.proc.pid, pool._workers[0].pid
        os.kill(zygote, signal.SIGSTOP)
        try:
            out = pool.run([Task("sleep", (30.0,), 1.0)])
            assert out[0].error == "timeout"
            deadline = time.monotonic() + 5
            while _parent_of(worker) is not None and time.monotonic() < deadline:
                time.sleep(0.05)
            dead = _parent_of(worker) is None  # dead (a zombie until the zygote reaps it)
            record("verifier pool: timeout kill with a frozen zygote", 1, int(dead))
            assert dead
        finally:
            os.kill(zygote, signal.SIGCONT)


def _nested(depth: int) -> list:
    v: list = []
    for _ in range(depth):
        v = [v]
    return v


@pytest.mark.parametrize("depth", [500, 3_000, 200_000])
def test_an_unsendable_task_costs_only_its_own_row(depth: int) -> None:
    """A math ground truth nested ``depth`` lists deep (the issue's ~500 and deeper),
    and a ground truth that does not pickle at all (a lambda), sent in one batch with
    two good checks while another thread runs its own batch: the bad tasks get an
    ``error:`` outcome, the good ones and the other caller get their scores (1/2 = 0.5
    is correct), and the pool serves the next call. Nothing raises."""
    good = Task("math", ("\\frac{1}{2}", "\\boxed{0.5}"), 60.0)
    other: list = []
    with WorkerPool(1, preload=("math",)) as pool:
        th = threading.Thread(target=lambda: other.extend(pool.run([good] * 3)))
        th.start()
        out = pool.run(
            [good, Task("math", (_nested(depth), "\\boxed{1}"), 60.0),
             Task("math", (lambda: 1, "\\boxed{1}"), 60.0), good]
        )  # fmt: skip
        th.join(timeout=120)
        fine = [o.ok for o in out] == [True, False, False, True] and len(other) == 3
        record("verifier pool: unsendable tasks", 2, 2 * int(fine))
        assert [o.ok for o in out] == [True, False, False, True], out
        assert out[0].value[0] == 1.0 and out[3].value[0] == 1.0
        assert all(o.error.startswith(("error:", "exception:")) for o in out[1:3]), out
        assert [o.value[0] for o in other] == [1.0] * 3
        assert pool.run([good])[0].value[0] == 1.0


def test_zygotes_killed_again_and_again_do_not_close_the_pool() -> None:
    """The zygote is SIGKILLed five times, each time as soon as its replacement exists
    (while it may still be importing, with a worker waiting on it), while a caller runs
    short calls: every call ends ok or ``worker_died``, never a RuntimeError that closes
    the pool, and the pool serves a call afterwards."""
    outcomes: list = []
    errors: list = []
    with WorkerPool(1, preload=("sleep",), spares=1) as pool:
        pool.run([Task("sleep", (0.0,), 10.0)])
        stop = threading.Event()

        def caller() -> None:
            while not stop.is_set():
                try:
                    outcomes.extend(pool.run([Task("sleep", (0.05,), 20.0)]))
                except Exception as e:  # what must not happen
                    errors.append(e)
                    return

        th = threading.Thread(target=caller)
        th.start()
        killed = set()
        try:
            for _ in range(5):
                deadline = time.monotonic() + 30
                while pool._zygote.proc.pid in killed and time.monotonic() < deadline:
                    time.sleep(0.001)
                pid = pool._zygote.proc.pid
                killed.add(pid)
                os.kill(pid, signal.SIGKILL)
                time.sleep(0.3)
        finally:
            stop.set()
            th.join(timeout=60)
        record("verifier pool: zygote killed while starting", 5, 5 * int(not errors))
        assert not errors, errors
        assert {o.error for o in outcomes} <= {"", "worker_died"}
        assert pool.run([Task("sleep", (0.0,), 20.0)])[0].ok
