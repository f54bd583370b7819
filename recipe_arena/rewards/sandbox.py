"""Run untrusted Python in a sandbox that cannot see out, keep anything, or outlive its limit.

Modes, strongest first (chosen once per process by probing what works):

- ``bwrap`` (running as root, bubblewrap installed; what ``make setup`` gives on
  Debian): a new mount, PID, network, IPC, UTS and cgroup namespace. The root is an
  empty read-only tree holding only the interpreter, its shared libraries and its
  standard library (read-only), a fresh ``/proc`` of the sandbox's own PID namespace,
  a minimal ``/dev`` and a size-capped tmpfs ``/tmp`` as the only writable place.
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
import platform
import py_compile
import re
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

_HERE = Path(__file__).parent
HARNESS = (_HERE / "sandbox_split.py").read_text() + (
    _HERE / "sandbox_harness.py"
).read_text().replace("from __future__ import annotations\n", "", 1)  # allowed once, at the top
HARNESS_INSIDE = "/harness.pyc"
UID_BASE = 1_500_000_000
"""Sandbox uids start here: far above any login or container-mapped uid."""

MISSING = {
    "bwrap_user": "not running as root, so the program keeps the caller's uid and its "
    "process count (and with it total memory) is not capped",
    "none": "bubblewrap (bwrap) is not installed or does not work here: the program would "
    "see the host's files, processes and network (run `make setup`, or apt-get install "
    "bubblewrap)",
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
    try:
        with _seccomp_fd() as fd:
            probe = subprocess.run(
                [*_bwrap_argv(mode, Limits(), seccomp_fd=fd), *_python(), "-c", "pass"],
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
    mode: str, lim: Limits, harness_fd: int | None = None, seccomp_fd: int | None = None
) -> list[str]:
    """bwrap's arguments. The harness is copied in from ``harness_fd`` (``--file``), not
    bound: a bind mount would show its host path (the cache folder, hence the home
    folder) in the sandbox's /proc/self/mountinfo."""
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
        "--perms", "1777", "--size", str(lim.tmpfs_mb << 20), "--tmpfs", "/tmp",
        "--remount-ro", "/",
        "--chdir", "/tmp",
        "--clearenv", "--setenv", "LANG", "C.UTF-8", "--setenv", "PATH", "/usr/bin",
        "--",
    ]  # fmt: skip


# ----------------------------------------------------------------------------- seccomp
# System calls the sandbox refuses (EPERM): memory that RLIMIT_AS does not count (SysV
# shared memory and message queues, memfd, keyrings, userfaultfd), new namespaces (a
# user namespace could mount a tmpfs of any size), and reaching other processes
# (ptrace, process_vm_*, pidfd_getfd, kcmp), io_uring (its operations bypass this
# filter), bpf, perf, mounts and modules, and watching files (inotify, fanotify: what
# the host does in the folders bound into the sandbox). ``clone`` is refused only with
# a namespace flag; ``clone3`` gets ENOSYS so that libc falls back to ``clone``.
# ``socket`` and ``socketpair`` are allowed for the address families in
# ``SOCKET_FAMILIES`` only (a whitelist): every other family (AF_VSOCK, AF_NETLINK,
# AF_PACKET, AF_ALG, ...) gets EAFNOSUPPORT.
_DENY = [
    "shmget",
    "msgget",
    "semget",
    "mq_open",
    "memfd_create",
    "memfd_secret",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "process_madvise",
    "io_uring_setup",
    "bpf",
    "perf_event_open",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsmount",
    "move_mount",
    "open_tree",
    "kexec_load",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "open_by_handle_at",
    "inotify_init",
    "inotify_init1",
    "fanotify_init",
]
_SYSCALLS: dict[str, tuple[int | None, int | None]] = {  # name -> (x86_64, aarch64)
    "shmget": (29, 194), "msgget": (68, 186), "semget": (64, 190), "mq_open": (240, 180),
    "memfd_create": (319, 279), "memfd_secret": (447, 447), "userfaultfd": (323, 282),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218),
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "pidfd_getfd": (438, 438), "kcmp": (312, 272), "process_madvise": (440, 440),
    "io_uring_setup": (425, 425), "bpf": (321, 280), "perf_event_open": (298, 241),
    "unshare": (272, 97), "setns": (308, 268), "mount": (165, 40), "umount2": (166, 39),
    "pivot_root": (155, 41), "chroot": (161, 51), "fsopen": (430, 430),
    "fsmount": (432, 432), "move_mount": (429, 429), "open_tree": (428, 428),
    "kexec_load": (246, 104), "init_module": (175, 105), "finit_module": (313, 273),
    "delete_module": (176, 106), "swapon": (167, 224), "swapoff": (168, 225),
    "reboot": (169, 142), "acct": (163, 89), "open_by_handle_at": (304, 265),
    "inotify_init": (253, None), "inotify_init1": (294, 26), "fanotify_init": (300, 262),
    "clone": (56, 220), "clone3": (435, 435), "socket": (41, 198), "socketpair": (53, 199),
}  # fmt: skip
_ARCHES = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7)}
_CLONE_NS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
_CLONE_NS |= 0x40000000 | 0x00000080  # NEWNET, NEWTIME
SOCKET_FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10}
"""The only socket address families the program may open. Its network namespace has
no interface but a down loopback, so INET sockets reach nothing; they stay allowed
because ordinary library code creates them (and fails cleanly on connect)."""


@functools.cache
def seccomp_filter() -> bytes | None:
    """The classic-BPF program bwrap installs (None on other architectures)."""
    arch = _ARCHES.get(platform.machine())
    if arch is None:
        return None
    col, audit_arch = arch
    ld, jeq, jset, jge, ret = 0x20, 0x15, 0x45, 0x35, 0x06
    allow, kill = 0x7FFF0000, 0x80000000
    eperm, enosys = 0x00050000 | 1, 0x00050000 | 38
    eafnosupport = 0x00050000 | 97
    # Instructions with symbolic jump targets (labels), resolved below; jumps only go
    # forward, as classic BPF requires.
    prog: list[tuple[int, str | int, str | int, int] | str] = []
    nr = {n: v[col] for n, v in _SYSCALLS.items()}
    prog.append((ld, 0, 0, 4))  # arch
    prog.append((jeq, 0, "KILL", audit_arch))
    prog.append((ld, 0, 0, 0))  # syscall number
    if col == 0:  # the x32 ABI shares this arch value: its numbers have bit 30 set
        prog.append((jge, "DENY", 0, 0x40000000))
    for name in _DENY:
        if nr[name] is not None:
            prog.append((jeq, "DENY", 0, nr[name]))  # type: ignore[arg-type]
    prog.append((jeq, "CLONE", 0, nr["clone"]))  # type: ignore[arg-type]
    prog.append((jeq, "ENOSYS", 0, nr["clone3"]))  # type: ignore[arg-type]
    prog.append((jeq, "SOCKET", 0, nr["socket"]))  # type: ignore[arg-type]
    prog.append((jeq, "SOCKET", 0, nr["socketpair"]))  # type: ignore[arg-type]
    prog.append((ret, 0, 0, allow))
    prog += ["CLONE", (ld, 0, 0, 16)]  # low 32 bits of args[0] (clone flags)
    prog.append((jset, "DENY", "ALLOW", _CLONE_NS))
    prog += ["SOCKET", (ld, 0, 0, 16)]  # args[0]: the address family
    for family in sorted(SOCKET_FAMILIES.values()):
        prog.append((jeq, "ALLOW", 0, family))
    prog.append((ret, 0, 0, eafnosupport))
    prog += ["DENY", (ret, 0, 0, eperm), "ENOSYS", (ret, 0, 0, enosys)]
    prog += ["KILL", (ret, 0, 0, kill), "ALLOW", (ret, 0, 0, allow)]
    at: dict[str, int] = {}
    code: list[tuple[int, str | int, str | int, int]] = []
    for item in prog:
        if isinstance(item, str):
            at[item] = len(code)
        else:
            code.append(item)

    def rel(target: str | int, i: int) -> int:
        j = target if isinstance(target, int) else at[target] - i - 1
        assert 0 <= j < 256, (target, j)
        return j

    return b"".join(
        struct.pack("=HBBI", c, rel(jt, i), rel(jf, i), k) for i, (c, jt, jf, k) in enumerate(code)
    )


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
    tmp = None
    if iso == "none":
        tmp = tempfile.mkdtemp(prefix="recipe_arena_sbx_")
        argv = [*_python(), harness, json.dumps(spec)]
    with contextlib.ExitStack() as stack:
        fds: tuple[int, ...] = ()
        if iso != "none":
            fd = stack.enter_context(_seccomp_fd())
            hfd = os.open(harness, os.O_RDONLY | os.O_CLOEXEC)
            stack.callback(os.close, hfd)
            argv = [*_bwrap_argv(iso, lim, hfd, fd), *_python(), HARNESS_INSIDE]
            argv.append(json.dumps(spec))
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
