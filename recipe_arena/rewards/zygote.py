"""The worker side of the verifier pool (``rewards.pool``): the tasks a worker can run,
the zygote that loads them once and forks workers, and the worker loop.

The zygote is a fresh interpreter started with ``subprocess`` (never a fork of the
caller, which may hold threads and torch state; not ``multiprocessing``'s spawn, which
re-runs the caller's ``__main__``). It imports the task modules and runs their warm-up
once, then, holding no thread, forks one worker per request and never runs a task
itself. So every worker, a replacement after a timeout too, starts from the same clean,
warmed state in milliseconds, where a fresh interpreter spent about 1.5 s of CPU
importing SymPy and the checkers (``benchmarks/verifier_workers.py`` measures both). A
worker exits when the zygote dies, and the zygote when its owner dies or closes it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
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

# Task name -> "module:function" run inside a worker. A plain dict: the worker
# resolves the function itself, so nothing has to be pickled but the arguments.
# A worker also runs the task's WARM function at start-up (before it says ready),
# so slow first-call initialisation is never charged to a call's deadline.
WARM: dict[str, str] = {
    "math": "recipe_arena.rewards.math_answer:warm",
    "ifeval": "recipe_arena.rewards.ifeval:registry",
}
TASKS: dict[str, str] = {
    "math": "recipe_arena.rewards.math_answer:check_math",
    "code": "recipe_arena.rewards.code:check_code",
    "ifeval": "recipe_arena.rewards.ifeval:check_ifeval",
    "sleep": "recipe_arena.rewards.zygote:_sleep",  # for tests of the pool itself
}


def _sleep(seconds: float) -> float:
    """Test task: sleeps, so tests can trip the timeout deterministically."""
    time.sleep(seconds)
    return seconds


def _exit_with_parent(poll_s: float = 1.0) -> None:
    """Exit when the parent process dies (the worker is re-parented, so getppid changes).

    Not PR_SET_PDEATHSIG: that fires when the parent *thread* that started the worker
    exits, and workers (spares especially) are started from whatever thread calls
    ``run``, so a short-lived calling thread would kill a healthy worker."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


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


def _serve(inbox: Connection, outbox: Connection, funcs: dict[str, Any]) -> None:
    """Worker loop: say ready (with the pid), then answer calls until EOF or None."""
    outbox.send(("ready", os.getpid()))
    while True:
        try:
            msg = inbox.recv()
        except EOFError:
            return
        if msg is None:
            return
        name, args = msg
        try:
            if name not in funcs:
                mod, _, fn = TASKS[name].partition(":")
                funcs[name] = getattr(importlib.import_module(mod), fn)
            outbox.send(("ok", funcs[name](*args)))
        except Exception as e:  # the verifier's own failure is a result, not a crash
            tb = traceback.format_exc(limit=3)
            outbox.send(("err", f"exception: {type(e).__name__}: {e}"[:500] + "\n" + tb[-800:]))


_FORK, _KILL = b"f", b"k"
"""Requests to the zygote: fork a worker (with its two pipe ends attached), or kill the
worker whose pid follows (8 bytes, little-endian)."""


def zygote_main(ctl_fd: int, preload: tuple[str, ...]) -> None:
    """The zygote: load the tasks, then serve fork and kill requests on the control
    socket until the parent closes it or dies. Children are reaped here, and a kill is
    sent only to a pid not yet reaped, so it never reaches a process that reused the
    pid of a dead worker."""
    funcs = load_tasks(preload)
    if threading.active_count() != 1:  # forking a threaded process can copy held locks
        raise RuntimeError(f"verifier warm-up left threads running: {threading.enumerate()}")
    ctl = socket.socket(fileno=ctl_fd)
    parent = os.getppid()
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
            ctl.close()
            _exit_with_parent()
            _serve(Connection(fds[0], writable=False), Connection(fds[1], readable=False), funcs)
            os._exit(0)
        alive.add(pid)
        for fd in fds:
            os.close(fd)


_PKG_PARENT = str(Path(__file__).resolve().parents[2])


class Zygote:
    """The parent's side of a zygote: starts it, asks it for workers and kills."""

    def __init__(self, preload: tuple[str, ...]) -> None:
        self._preload = preload
        self._lock = threading.Lock()
        self._start()

    def _start(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        code = (
            "from recipe_arena.rewards.zygote import zygote_main; "
            f"zygote_main({theirs.fileno()}, {self._preload!r})"
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
