"""Run untrusted Python in a sandboxed subprocess.

Isolation, strongest mode first (chosen once per process by probing what works):

- ``namespaces`` (running as root, ``unshare`` available): new network namespace
  (no interface but a down loopback: no network), new PID namespace (the program
  cannot see or signal anything outside; when its init dies, all of it dies), new
  mount namespace with a fresh tmpfs on /tmp and /dev/shm (the working directory;
  nothing written there reaches the host), and the program runs under an unused
  uid (``setpriv``), so it cannot write host files or signal host processes, and
  RLIMIT_NPROC binds (it does not for root).
- ``userns`` (not root, unprivileged user namespaces allowed): the same namespaces
  inside a user namespace; the program keeps the caller's uid on the host, so host
  files of that user stay writable: a weaker mode.
- ``plain`` (neither works): a fresh temporary directory, resource limits and a
  new session only. The network is *not* isolated. Use this mode only for trusted
  code; the verifier says so in a warning when it falls back to it.

In every mode: RLIMIT_CPU, RLIMIT_AS, RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_NOFILE,
no core files, a wall-clock timeout that kills the whole process group, and the
parent-death signal so a killed verifier worker takes its sandbox with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

NS_PREFIX = ["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount"]
TMPFS_MB = 64
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Limits:
    """Per-run limits. ``wall_s`` counts from start to kill; ``cpu_s`` is RLIMIT_CPU."""

    wall_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int = 1024
    nproc: int = 32
    fsize_mb: int = 16
    nofile: int = 256


@dataclass(frozen=True)
class SandboxRun:
    returncode: int | None  # None when killed on the wall-clock timeout
    stdout: bytes
    stderr: bytes
    timed_out: bool


def _probe(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.cache
def isolation_mode() -> str:
    """'namespaces', 'userns' or 'plain' (see the module docstring)."""
    if shutil.which("unshare") is None:
        mode = "plain"
    elif os.geteuid() == 0 and shutil.which("setpriv") and _probe(NS_PREFIX + ["true"]):
        mode = "namespaces"
    elif _probe(["unshare", "--user", "--map-root-user", *NS_PREFIX[1:], "true"]):
        mode = "userns"
    else:
        mode = "plain"
    if mode == "plain":
        warnings.warn(
            "code sandbox: network/PID namespaces are unavailable here; running untrusted "
            "code with resource limits only (no network isolation)",
            stacklevel=2,
        )
    return mode


def _world_usable(path: str) -> bool:
    """True when an unprivileged uid can reach ``path`` (every parent world-searchable)."""
    p = Path(path).resolve()
    return p.exists() and all(os.stat(d).st_mode & 0o001 for d in p.parents)


@functools.cache
def sandbox_python() -> str:
    """The interpreter sandboxed programs run on (standard library only).

    The verifier's own interpreter when the unprivileged sandbox uid can read it and
    its standard library; otherwise the system ``python3`` (a Python installed under
    a private home directory, e.g. by pyenv under /root, is unreadable to that uid).
    """
    mine = [sys.executable, os.path.join(sys.base_prefix, "lib")]
    if os.geteuid() != 0 or all(_world_usable(p) for p in mine):
        return sys.executable
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if _world_usable(cand):
            return cand
    raise RuntimeError("code sandbox: no Python interpreter readable by an unprivileged uid")


def _sandbox_uid() -> int:
    # One unused uid per verifier process, so RLIMIT_NPROC (counted per uid) of one
    # sandbox is not eaten by a fork bomb in a sandbox running next to it.
    return 200_000 + os.getpid() % 100_000


def _preexec(lim: Limits) -> None:
    """Runs in the child between fork and exec: limits and parent-death signal."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    mb = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (lim.cpu_s, lim.cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_AS, (lim.memory_mb * mb, lim.memory_mb * mb))
    resource.setrlimit(resource.RLIMIT_NPROC, (lim.nproc, lim.nproc))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim.fsize_mb * mb, lim.fsize_mb * mb))
    resource.setrlimit(resource.RLIMIT_NOFILE, (lim.nofile, lim.nofile))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _command(py_args: list[str], mode: str) -> tuple[list[str], str | None]:
    """(argv, host temp dir or None) that runs ``python -I -S *py_args`` in ``mode``."""
    python = [sandbox_python() if mode == "namespaces" else sys.executable, "-I", "-S", *py_args]
    if mode == "plain":
        return python, tempfile.mkdtemp(prefix="recipe_arena_sbx_")
    mounts = (
        f"mount -t tmpfs -o size={TMPFS_MB}m,mode=1777 none /tmp && "
        'mount -t tmpfs -o size=1m,mode=1777 none /dev/shm && cd /tmp && exec "$@"'
    )
    if mode == "namespaces":
        uid = _sandbox_uid()
        inner = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", *python]
        return [*NS_PREFIX, "--", "sh", "-c", mounts, "sh", *inner], None
    userns = ["unshare", "--user", "--map-root-user", *NS_PREFIX[1:]]
    return [*userns, "--", "sh", "-c", mounts, "sh", *python], None


def run_python(
    py_args: list[str], stdin: bytes, lim: Limits, max_output: int = 1 << 20
) -> SandboxRun:
    """Run ``python -I -S *py_args`` sandboxed; stdout/stderr are truncated to ``max_output``."""
    mode = isolation_mode()
    argv, tmp = _command(py_args, mode)
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp or "/",
        env=env,
        start_new_session=True,
        preexec_fn=functools.partial(_preexec, lim),
    )
    try:
        out, err, timed_out = _pump(proc, stdin, lim.wall_s, max_output)
    finally:
        _kill_group(proc)
        proc.wait()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return SandboxRun(None if timed_out else proc.returncode, out, err, timed_out)


def _pump(
    proc: subprocess.Popen[bytes], stdin: bytes, wall_s: float, cap: int
) -> tuple[bytes, bytes, bool]:
    """Feed stdin and drain stdout/stderr until exit or deadline, keeping at most ``cap``
    bytes of each (a program that prints forever must not fill the verifier's memory)."""
    assert proc.stdin and proc.stdout and proc.stderr
    deadline = time.monotonic() + wall_s
    fd_in, fd_out, fd_err = proc.stdin.fileno(), proc.stdout.fileno(), proc.stderr.fileno()
    bufs: dict[int, bytearray] = {fd_out: bytearray(), fd_err: bytearray()}
    sel = selectors.DefaultSelector()
    for f in (proc.stdout, proc.stderr):
        os.set_blocking(f.fileno(), False)
        sel.register(f.fileno(), selectors.EVENT_READ)
    pending = memoryview(stdin)
    if pending:
        os.set_blocking(fd_in, False)
        sel.register(fd_in, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    open_reads = 2
    while open_reads:
        left = deadline - time.monotonic()
        if left <= 0:
            return bytes(bufs[fd_out]), bytes(bufs[fd_err]), True
        for key, _ in sel.select(timeout=left):
            fd = key.fd
            if fd == fd_in:
                try:
                    pending = pending[os.write(fd, pending[:65536]) :]
                except BlockingIOError:
                    pass
                except BrokenPipeError:  # the program stopped reading: fine
                    pending = pending[:0]
                if not pending:
                    sel.unregister(fd)
                    proc.stdin.close()
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                sel.unregister(fd)
                open_reads -= 1
            elif len(bufs[fd]) < cap:
                bufs[fd] += chunk[: cap - len(bufs[fd])]
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return bytes(bufs[fd_out]), bytes(bufs[fd_err]), True
    return bytes(bufs[fd_out]), bytes(bufs[fd_err]), False


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
