"""The worker side of the verifier pool (``rewards.pool``): the tasks a worker can run,
the zygote that loads them once and forks workers, and the worker loop.

The zygote is a fresh interpreter started with ``subprocess`` (never a fork of the
caller, which may hold threads and torch state; not ``multiprocessing``'s spawn, which
re-runs the caller's ``__main__``). It imports the task modules and runs their warm-up
once, then, holding no thread, forks one worker per request and never runs a task
itself. So every worker, a replacement after a timeout too, starts from the same clean,
warmed state in milliseconds, where a fresh interpreter spent about 1.5 s of CPU
importing SymPy and the checkers (``benchmarks/verifier_workers.py`` measures both).

Lifetime: the kernel ends both, whatever ends the owner (SIGKILL included) and whatever
a worker is busy with (a tower of powers in SymPy holds the GIL, so no watcher thread
could run). The zygote is started by the pool's dispatcher thread, which lives as long
as the pool, and asks for SIGKILL when that thread ends (``PR_SET_PDEATHSIG``); each
worker asks for SIGKILL when the zygote, its single-threaded parent, ends. Each checks
right after asking that its parent is still the one that started it (the parent may
have died just before). A worker runs a math or IFEval check under an address-space
limit (``TASK_MEMORY_MB``).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from recipe_arena.domains import POOLED_DOMAINS, VERIFIERS

# Task name -> "module:function" run inside a worker: each pooled domain's check
# (``domains.VERIFIERS``) and a test task. A plain dict: the worker resolves the function
# itself, so nothing has to be pickled but the arguments. A worker also runs the task's
# WARM function at start-up (before it says ready), so slow first-call initialisation is
# never charged to a call's deadline.
TASKS: dict[str, str] = {d: str(VERIFIERS[d].check) for d in POOLED_DOMAINS}
TASKS["sleep"] = "recipe_arena.rewards.zygote:_sleep"  # for tests of the pool itself
WARM: dict[str, str] = {d: v.warm for d, v in VERIFIERS.items() if v.warm}


def _sleep(seconds: float) -> float:
    """Test task: sleeps, so tests can trip the timeout deterministically."""
    time.sleep(seconds)
    return seconds


TASK_MEMORY_MB: dict[str, int] = {d: v.memory_mb for d, v in VERIFIERS.items() if v.memory_mb}
"""Address-space limit (RLIMIT_AS soft limit, MiB) while a task of that name runs
(``Verifier.memory_mb``): a math check that builds a huge number, or an IFEval check
whose keyword (a regular expression to lm-eval's checkers) makes a huge list of matches,
fails with MemoryError instead of taking the machine's memory. A warmed worker (SymPy
loaded) maps about 0.2 GiB; an IFEval check of a 1 MB response about 0.1 GiB more."""


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent (thread) ends; exit now if ``parent`` is
    already gone (this process was re-parented before asking)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(0)


def _limited(name: str, fn: Any, args: tuple[Any, ...]) -> Any:
    """``fn(*args)`` under the task's address-space limit (soft; restored after)."""
    mb = TASK_MEMORY_MB.get(name)
    if mb is None:
        return fn(*args)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = mb << 20
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        return fn(*args)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def load_tasks(preload: tuple[str, ...]) -> dict[str, Any]:
    """Import the ``preload`` tasks' functions and run their warm-up functions."""
    funcs: dict[str, Any] = {}
    for name in preload:
        mod, _, fn = TASKS[name].partition(":")
        funcs[name] = getattr(importlib.import_module(mod), fn)
        if name in WARM:
            mod, _, fn = WARM[name].partition(":")
            getattr(importlib.import_module(mod), fn)()
    return funcs


RETIRE_GROWTH_MB = 256
"""A worker whose address space grew by more than this (MiB) since it started answers
its call with a ``-last`` kind (``ok-last``, ``err-last``) and exits; the pool puts a
fresh one in its place. A hostile answer leaves hundreds of MB in SymPy's and
math-verify's caches (``2^{2^{29}}``: about 280 MB), which ``TASK_MEMORY_MB`` would
count against every later call of that worker: a few such answers made a correct one
fail."""


def _address_space_mb() -> int:
    """This process's address space (what RLIMIT_AS counts), MiB; 0 when unknown."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE") >> 20
    except (OSError, ValueError, IndexError):
        return 0


def _serve(inbox: Connection, outbox: Connection, funcs: dict[str, Any]) -> None:
    """Worker loop: say ready (with the pid), then answer calls until EOF or None (or a
    call leaves it ``RETIRE_GROWTH_MB`` larger: that answer is its last). A call that
    cannot be read (nested too deeply to unpickle) is answered with an error."""
    outbox.send(("ready", os.getpid()))
    start_mb = _address_space_mb()
    while True:
        try:
            raw = inbox.recv_bytes()
        except EOFError:
            return
        try:
            msg = pickle.loads(raw)
        except Exception as e:
            del raw
            outbox.send(("err", f"error: the task could not be read ({type(e).__name__})"))
            continue
        del raw
        if msg is None:
            return
        name, args = msg
        try:
            if name not in funcs:
                mod, _, fn = TASKS[name].partition(":")
                funcs[name] = getattr(importlib.import_module(mod), fn)
            value = _limited(name, funcs[name], args)
            del args, msg
            last = _address_space_mb() > start_mb + RETIRE_GROWTH_MB
            outbox.send(("ok-last" if last else "ok", value))
        except Exception as e:  # the verifier's own failure is a result, not a crash
            args = msg = None
            tb = traceback.format_exc(limit=3)
            last = _address_space_mb() > start_mb + RETIRE_GROWTH_MB
            text = f"exception: {type(e).__name__}: {e}"[:500] + "\n" + tb[-800:]
            outbox.send(("err-last" if last else "err", text))
        if last:
            return


_FORK, _KILL = b"f", b"k"
"""Requests to the zygote: fork a worker (with its two pipe ends attached), or kill the
worker whose pid follows (8 bytes, little-endian)."""


def zygote_main(ctl_fd: int, preload: tuple[str, ...], owner: int | None = None) -> None:
    """The zygote: load the tasks, then serve fork and kill requests on the control
    socket until the parent closes it or dies. Children are reaped here, and a kill is
    sent only to a pid not yet reaped, so it never reaches a process that reused the
    pid of a dead worker. ``owner``: the pid that started it (it dies with it)."""
    if owner is not None:
        die_with_parent(owner)
    funcs = load_tasks(preload)
    if threading.active_count() != 1:  # forking a threaded process can copy held locks
        raise RuntimeError(f"verifier warm-up left threads running: {threading.enumerate()}")
    ctl = socket.socket(fileno=ctl_fd)
    parent = os.getppid()
    me = os.getpid()
    alive: set[int] = set()
    while os.getppid() == parent:
        with contextlib.suppress(ChildProcessError):
            while alive:
                pid, _ = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                alive.discard(pid)
        if not select.select([ctl], [], [], 1.0)[0]:
            continue
        msg, fds, _, _ = socket.recv_fds(ctl, 64, 2)
        if not msg:  # the parent closed the pool, or died
            return
        if msg[:1] == _KILL:
            pid = int.from_bytes(msg[1:9], "little")
            if pid in alive:
                os.kill(pid, signal.SIGKILL)
            continue
        pid = os.fork()
        if pid == 0:  # the worker
            try:
                die_with_parent(me)
                ctl.close()
                _serve(
                    Connection(fds[0], writable=False), Connection(fds[1], readable=False), funcs
                )
            finally:
                os._exit(0)
        alive.add(pid)
        for fd in fds:
            os.close(fd)


_PKG_PARENT = str(Path(__file__).resolve().parents[2])


class Zygote:
    """The parent's side of a zygote: starts it, asks it for workers and kills. Start
    it (and call ``fork``, which may start it again) from a thread that lives as long
    as its workers should: the zygote dies with that thread."""

    def __init__(self, preload: tuple[str, ...]) -> None:
        self._preload = preload
        self._lock = threading.Lock()
        self._start()

    def _start(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        code = (
            "from recipe_arena.rewards.zygote import zygote_main; "
            f"zygote_main({theirs.fileno()}, {self._preload!r}, {os.getpid()})"
        )
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PKG_PARENT, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], pass_fds=(theirs.fileno(),), env=env
        )
        theirs.close()
        self._ctl = mine

    def fork(self, fds: tuple[int, int]) -> None:
        """A new worker reading ``fds[0]`` and writing ``fds[1]``; a zygote that has died
        (killed from outside) is started again first."""
        with self._lock:
            try:
                socket.send_fds(self._ctl, [_FORK], list(fds))
            except OSError:
                self._ctl.close()
                with contextlib.suppress(OSError):
                    self.proc.kill()
                self.proc.wait()
                self._start()
                socket.send_fds(self._ctl, [_FORK], list(fds))

    def kill(self, pid: int) -> None:
        with self._lock, contextlib.suppress(OSError):
            self._ctl.send(_KILL + pid.to_bytes(8, "little"))

    def close(self) -> None:
        """Close the control socket (the zygote exits; its workers follow it)."""
        with self._lock:
            self._ctl.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
