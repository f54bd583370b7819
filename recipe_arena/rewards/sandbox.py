"""Run untrusted Python in a sandbox that cannot see out, keep anything, or outlive its limit.

Modes, strongest first (chosen once per process by probing what works):

- ``bwrap`` (running as root, bubblewrap installed; what ``make setup`` gives on
  Debian): a new mount, PID, network, IPC, UTS and cgroup namespace. The root is an
  empty read-only tree holding only the interpreter, its shared libraries and its
  standard library (read-only), a fresh ``/proc`` of the sandbox's own PID namespace,
  a minimal ``/dev`` and tmpfs capped in size and in inodes as the only writable places:
  with assert tests ``/tmp`` is the check side's (mode 0700) and ``/var/tmp`` the
  program's, for stdin/stdout pairs ``/tmp`` is the program's.
  No network (a down loopback of its own; host Unix sockets are not in the tree).
  The program runs under an unused uid with no capabilities, one process (it cannot
  fork or start threads: RLIMIT_NPROC binds for a non-root uid), so its memory is
  bounded by RLIMIT_AS in total. The checks run in a second process of the same
  sandbox under another unused uid (see sandbox_harness.py). bubblewrap's
  ``--die-with-parent``: when the sandbox's init dies (wall-clock kill, or the
  verifier exits for any reason), the kernel kills every process of its PID
  namespace, whatever they did (``setsid``, closed descriptors).
- ``bwrap_user`` (not root, unprivileged user namespaces allowed): the same tree and
  namespaces, but the program keeps the caller's uid: the process count is not capped,
  so its memory is bounded per process only, and the checks share its uid.
- ``none`` (no working bubblewrap): resource limits and a fresh temporary directory;
  the program sees the host's files, processes and network.

Untrusted code runs only in ``bwrap`` unless ``rewards.allow_weak_sandbox=true``;
otherwise every code check is refused with a line naming what is missing.

In every mode: RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NOFILE, no core files, a
wall-clock limit that kills the whole sandbox, and output capped in size. No cgroup is
used (many machines do not delegate the memory controller); total memory is bounded
by capping the process count instead.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import os
import py_compile
import re
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from recipe_arena.rewards.seccomp import seccomp_filter

_HERE = Path(__file__).parent
_FIRST, *_REST = (
    (_HERE / name).read_text()
    for name in (
        "sandbox_split.py",
        "sandbox_wire.py",
        "sandbox_remote.py",
        "sandbox_report.py",
        "sandbox_harness.py",
    )
)
HARNESS = _FIRST + "".join(  # a __future__ import is allowed once, at the top
    part.replace("from __future__ import annotations\n", "", 1) for part in _REST
)
"""The script the sandbox runs: the test splitter, the wire format, the check side's
handles, its report and the two sides."""
HARNESS_INSIDE = "/harness.pyc"
UID_BASE = 1_500_000_000
"""Sandbox uids start here: far above any login or container-mapped uid."""

MISSING = {
    "bwrap_user": "not running as root, so the program keeps the caller's uid and its "
    "process count (and with it total memory) is not capped",
    "none": "bubblewrap (bwrap) is not installed or does not work here: the program would "
    "see the host's files, processes and network (run `make setup`, or apt-get install "
    "bubblewrap; as root util-linux's unshare and mount are needed too)",
}


class SandboxRefused(RuntimeError):
    """The sandbox is weaker than required; the message is one line."""


@dataclass(frozen=True)
class Limits:
    """Per-run limits. ``wall_s`` counts from start to kill; ``cpu_s`` is RLIMIT_CPU."""

    wall_s: float = 10.0
    row_wall_s: float = 60.0
    """Wall-clock limit of all the stdin/stdout runs of one row together (seconds; at
    least ``wall_s``): a row of thousands of small pairs within the 1 MB test cap
    would otherwise take hours."""
    cpu_s: int = 10
    memory_mb: int = 1024
    """RLIMIT_AS of the program (one process in ``bwrap`` mode, so its total)."""
    check_memory_mb: int = 512
    """RLIMIT_AS of the check side, which evaluates the returned values."""
    nproc: int = 1
    """Processes and threads the program may run at once (``bwrap`` mode)."""
    fsize_mb: int = 16
    nofile: int = 64
    tmpfs_mb: int = 64
    """Size of the writable /tmp (``bwrap`` modes)."""
    tmp_inodes: int = 4096
    """Files, folders and links /tmp may hold at once (``bwrap`` mode): tmpfs keeps each
    in about 1 KB of kernel memory that neither RLIMIT_AS nor ``tmpfs_mb`` counts."""
    allow_weak: bool = False
    """Run even when the sandbox is weaker than ``bwrap`` (see MISSING)."""


@dataclass(frozen=True)
class SandboxRun:
    returncode: int | None  # None when killed on the wall-clock timeout
    stdout: bytes
    stderr: bytes
    timed_out: bool


# ----------------------------------------------------------------------------- modes
def bwrap_path() -> str | None:
    """$RECIPE_ARENA_BWRAP, else ``bwrap`` on PATH (None when there is none)."""
    env = os.environ.get("RECIPE_ARENA_BWRAP")
    if env is not None:
        return env if env and os.access(env, os.X_OK) else None
    return shutil.which("bwrap") or (
        "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None
    )


@functools.cache
def isolation_mode() -> str:
    """'bwrap', 'bwrap_user' or 'none' (see the module docstring)."""
    if bwrap_path() is None:
        return "none"
    mode = "bwrap" if os.geteuid() == 0 else "bwrap_user"
    tmp = _mount_points()[0] if mode == "bwrap" else None
    try:
        with _seccomp_fd() as fd:
            argv = [*_bwrap_argv(mode, Limits(), seccomp_fd=fd, tmp_dir=tmp), *_python()]
            probe = subprocess.run(
                [*(_tmp_launcher(Limits(), [(tmp, None)]) if tmp else []), *argv, "-c", "pass"],
                capture_output=True,
                timeout=20,
                pass_fds=() if fd is None else (fd,),
            )
        ok = probe.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return mode if ok else "none"


@contextlib.contextmanager
def _seccomp_fd() -> Iterator[int | None]:
    """A pipe holding the seccomp program for bwrap to read (None: no filter here)."""
    prog = seccomp_filter()
    if prog is None:
        yield None
        return
    r, w = os.pipe()
    try:
        os.write(w, prog)  # a few hundred bytes: fits the pipe buffer
        os.close(w)
        yield r
    finally:
        os.close(r)
        with contextlib.suppress(OSError):
            os.close(w)


def require(allow_weak: bool) -> None:
    """Raise SandboxRefused (one line) unless untrusted code may run here."""
    mode = isolation_mode()
    if mode != "bwrap" and not allow_weak:
        raise SandboxRefused(
            f"code sandbox refused: {MISSING[mode]}; set rewards.allow_weak_sandbox=true "
            "to run untrusted code anyway"
        )


# ----------------------------------------------------------------------------- the tree
def _python() -> list[str]:
    exe = os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)
    return [exe, "-I", "-S", "-X", "utf8"]


@functools.cache
def _tree() -> tuple[str, ...]:
    """bwrap arguments of the read-only root: interpreter, its libraries, stdlib."""
    exe = _python()[0]
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    dynload = os.path.join(stdlib, "lib-dynload")
    objects = [exe] + [str(p) for p in Path(dynload).glob("*.so")]
    libs: set[str] = set()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["ldd", *objects], capture_output=True, text=True, timeout=60).stdout
        libs = set(re.findall(r"(/\S+\.so[^\s:]*)", out))
    if not libs:  # no ldd: the system library folders whole
        libs = {p + "/x" for p in ("/lib", "/lib64", "/usr/lib", "/usr/lib64") if os.path.isdir(p)}
    dirs = {
        os.path.realpath(os.path.dirname(p)) for p in libs if os.path.exists(os.path.dirname(p))
    }
    args: list[str] = []
    made: set[str] = {"/"}
    links: dict[str, str] = {}

    def parents(path: str) -> None:
        for parent in reversed(Path(path).parents):
            p = str(parent)
            if p not in made:
                made.add(p)
                args.extend(["--perms", "0755", "--dir", p])

    for lib in sorted(libs):  # recreate symlinked folders on the way (/lib -> usr/lib)
        for parent in reversed(Path(lib).parents):
            if parent.is_symlink() and str(parent) not in links:
                links[str(parent)] = os.readlink(parent)
    for d in sorted(dirs - {"/"}):
        parents(d)
        args.extend(["--ro-bind", d, d])
        made.add(d)
    for link, target in sorted(links.items()):
        if link not in made:
            parents(link)
            args.extend(["--symlink", target, link])
            made.add(link)
    parents(exe)
    args.extend(["--ro-bind", exe, exe])
    if stdlib not in made:
        parents(stdlib)
        args.extend(["--ro-bind", stdlib, stdlib])
    site = os.path.join(stdlib, "site-packages")
    if os.path.isdir(site):  # the standard library only, not what was installed beside it
        args.extend(["--size", "4096", "--tmpfs", site, "--remount-ro", site])
    return tuple(args)


def _bwrap_argv(
    mode: str,
    lim: Limits,
    harness_fd: int | None = None,
    seccomp_fd: int | None = None,
    tmp_dir: str | None = None,
    scratch: str | None = None,
) -> list[str]:
    """bwrap's arguments. The harness is copied in from ``harness_fd`` (``--file``), not
    bound: a bind mount would show its host path (the cache folder, hence the home
    folder) in the sandbox's /proc/self/mountinfo. ``tmp_dir``: a tmpfs that
    ``_MOUNT_TMP`` mounted, bound as /tmp (its own root, so mountinfo shows no host
    path); None: bubblewrap's own tmpfs, which it can size but not cap in inodes.
    ``scratch``: a second such tmpfs, bound as /var/tmp, the program's own while /tmp is
    the check side's (``run_harness``)."""
    bwrap = bwrap_path()
    assert bwrap is not None
    ns = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    ns += ["--unshare-cgroup-try", "--hostname", "sandbox"]
    if mode == "bwrap":  # the launcher may switch uid, nothing else
        ns += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        ns += ["--unshare-user"]
    return [
        bwrap,
        *ns,
        "--die-with-parent",
        "--new-session",
        *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
        *_tree(),
        *(["--perms", "0444", "--file", str(harness_fd), HARNESS_INSIDE] if harness_fd else []),
        "--proc", "/proc",
        "--dev", "/dev",
        *(["--bind", tmp_dir, "/tmp"] if tmp_dir else _own_tmpfs(lim)),
        *(["--perms", "0755", "--dir", "/var", "--bind", scratch, "/var/tmp"] if scratch else []),
        "--remount-ro", "/",
        "--chdir", "/" if tmp_dir else "/tmp",  # a side's own folder may be 0700
        "--clearenv", "--setenv", "LANG", "C.UTF-8", "--setenv", "PATH", "/usr/bin",
        "--",
    ]  # fmt: skip


def _own_tmpfs(lim: Limits) -> list[str]:
    """bubblewrap's own /tmp (``bwrap_user`` mode: no mount of our own without root)."""
    return ["--perms", "1777", "--size", str(lim.tmpfs_mb << 20), "--tmpfs", "/tmp"]


_MOUNT_TMP = (
    'while [ "$1" != -- ]; do "$0" -t tmpfs -o "nosuid,nodev,$2" tmpfs "$1" || exit 125; '
    'shift 2; done; shift; exec "$@"'
)
"""Run before bubblewrap (``bwrap`` mode, as root) by ``sh`` under util-linux's
``unshare --mount``: in a mount namespace of its own, mount a tmpfs capped in size and
in inodes (``nr_inodes``, which bubblewrap 0.8 cannot set) on empty folders of the cache
folder (``_mount_points``), then become bubblewrap, which binds them. The mounts are
seen by no other process and go with the sandbox's last process. A shell and
``mount``, not an interpreter: about 8 ms of CPU a check
(``benchmarks/sandbox_cost.py``)."""


def _mount_points() -> tuple[str, str]:
    """Two empty folders of the cache folder that each run's tmpfs are mounted on (the
    check side's or the only one, then the program's), in the run's own mount namespace:
    every other process sees them empty, runs at once do not meet, and they are never
    removed, so a verifier killed during a run leaves nothing behind (made again if
    they went)."""
    from recipe_arena.cache import cache_root

    base = cache_root(None) / "sandbox" / "mnt"
    for k in ("c", "p"):
        (base / k).mkdir(parents=True, exist_ok=True)
    return str(base / "c"), str(base / "p")


def _tmp_launcher(lim: Limits, mounts: list[tuple[str, int | None]]) -> list[str]:
    """The ``_MOUNT_TMP`` prefix of the command line: a tmpfs on each folder of
    ``mounts``, owned by its uid with mode 0700 (None: root's, 1777). Without
    ``unshare`` or ``mount`` the prefix is a command that fails, so the mode probe
    finds ``bwrap`` unusable and the sandbox refuses rather than run uncapped."""
    unshare, mount = shutil.which("unshare"), shutil.which("mount")
    if unshare is None or mount is None:
        return ["/nonexistent/util-linux-unshare-and-mount"]
    size = f"size={lim.tmpfs_mb << 20},nr_inodes={lim.tmp_inodes}"
    args = [unshare, "--mount", "--propagation", "private", "/bin/sh", "-c", _MOUNT_TMP, mount]
    for folder, uid in mounts:
        args += [
            folder,
            f"{size},mode=1777" if uid is None else f"{size},mode=700,uid={uid},gid={uid}",
        ]
    return [*args, "--"]


_RUNS = itertools.count()


def _uids() -> tuple[int, int]:
    """Two unused uids for one run (program, checks); never reused by a run soon after,
    so a dying sandbox's processes cannot count against the next one's RLIMIT_NPROC."""
    base = UID_BASE + (os.getpid() % 100_000) * 2_000 + (next(_RUNS) % 1_000) * 2
    return base, base + 1


@functools.cache
def _harness_file() -> str:
    """HARNESS compiled once to a .pyc in a sealed cache entry (``cache.build_cached``:
    verified on use, built again when corrupt) in the cache folder ($RECIPE_ARENA_CACHE,
    else ~/.cache/recipe_arena), named by a hash of its source and the interpreter
    version: starting a sandbox then skips the compile (about a third of a check's CPU
    time)."""
    from recipe_arena.cache import build_cached, cache_root

    tag = hashlib.sha256(f"{sys.version}\0{HARNESS}".encode()).hexdigest()[:16]

    def build(tmp: Path) -> None:
        src = tmp / "harness.py"
        src.write_text(HARNESS)
        py_compile.compile(str(src), cfile=str(tmp / "harness.pyc"), doraise=True)
        src.unlink()
        os.chmod(tmp / "harness.pyc", 0o644)
        os.chmod(tmp, 0o755)

    return str(build_cached(cache_root(None) / "sandbox" / f"harness-{tag}", build) / "harness.pyc")


# ----------------------------------------------------------------------------- running
def run_harness(mode: str, payload: bytes, lim: Limits, max_output: int = 1 << 20) -> SandboxRun:
    """Run the harness (``mode`` 'asserts' or 'io') on ``payload`` (its stdin) in the
    sandbox. Raises SandboxRefused when the sandbox is too weak for ``lim``."""
    iso = isolation_mode()
    require(lim.allow_weak)
    uid_p, uid_c = _uids() if iso == "bwrap" else (None, None)
    spec = {
        "mode": mode,
        "uid_p": uid_p,
        "uid_c": uid_c,
        "nproc": lim.nproc if iso == "bwrap" else None,
        "check_memory_mb": lim.check_memory_mb,
        "limits": asdict(lim),
        "pdeathsig": iso == "none",
    }
    harness = _harness_file()
    tmp = tempfile.mkdtemp(prefix="recipe_arena_sbx_") if iso == "none" else None
    # In bwrap mode with assert tests /tmp is the check side's (0700): a file the tests
    # write there is out of the program's reach, which cannot plant one or a link at a
    # path they write later either; the program's own tmpfs is /var/tmp (its folder,
    # and where ``tempfile`` looks next). For stdin/stdout pairs /tmp is the program's.
    split = iso == "bwrap" and mode == "asserts"
    spec["cwd_p"] = "/var/tmp" if split else "/tmp" if iso == "bwrap" else None
    if iso == "none":
        argv = [*_python(), harness, json.dumps(spec)]
    with contextlib.ExitStack() as stack:
        fds: tuple[int, ...] = ()
        if iso != "none":
            fd = stack.enter_context(_seccomp_fd())
            hfd = os.open(harness, os.O_RDONLY | os.O_CLOEXEC)
            stack.callback(os.close, hfd)
            on: tuple[str, ...] = _mount_points() if iso == "bwrap" else ()
            mounts: list[tuple[str, int | None]] = [(on[0], None)] if on else []
            if split:  # /tmp the check side's, /var/tmp the program's
                mounts = [(on[0], uid_c), (on[1], uid_p)]
            argv = [*_bwrap_argv(iso, lim, hfd, fd, *[f for f, _ in mounts]), *_python()]
            argv += [HARNESS_INSIDE, json.dumps(spec)]
            if mounts:
                argv[:0] = _tmp_launcher(lim, mounts)
            fds = (hfd,) if fd is None else (hfd, fd)
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp or "/",
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            start_new_session=True,
            pass_fds=fds,
        )
    try:
        out, err, timed_out = _pump(proc, payload, lim.wall_s, max_output)
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
