"""What a program in the sandbox could take of the host's kernel: memory outside its own
limits (RLIMIT_AS, the size of ``/tmp``) and kernel code no program needs, attacked
through the real sandbox (``check_code``, as a verifier worker calls it)."""

from __future__ import annotations

from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox import Limits
from tests.hostile_tally import record
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

XATTRS = """
import ctypes, errno, os
def stored():
    # 64 KB values under new names on one empty file: up to 256 MB
    open('f', 'w').close()
    n = 0
    try:
        while n < 4096:
            os.setxattr('f', 'user.a%d' % n, b'x' * 65536)
            n += 1
    except OSError:
        pass
    return n * 64 // 1024
def refused():
    def err(call):
        try:
            call()
            return 0
        except OSError as e:
            return e.errno
    open('g', 'w').close()
    fd = os.open('g', os.O_RDWR)
    acl = bytes.fromhex('02000000' '0100070000000000' '0400050000000000' '2000050000000000')
    libc = ctypes.CDLL(None, use_errno=True)
    value = ctypes.create_string_buffer(b'v')
    args = (ctypes.c_uint64 * 2)(ctypes.addressof(value), 1)  # value, size 1, flags 0
    def at():
        if libc.syscall(463, -100, b'g', 0, b'user.at', args, 16) != 0:
            raise OSError(ctypes.get_errno(), 'setxattrat')
    return [
        err(lambda: os.setxattr('g', 'user.p', b'v')),
        err(lambda: os.setxattr('g', 'user.l', b'v', follow_symlinks=False)),
        err(lambda: os.setxattr(fd, 'user.f', b'v')),
        err(at),
        err(lambda: os.setxattr('g', 'system.posix_acl_access', acl)),
    ]
"""


@needs_full
def test_extended_attributes_cannot_hold_host_memory() -> None:
    """A program stores ``user.*`` extended attributes of 64 KB on an empty file of
    ``/tmp`` (and could set POSIX ACLs, also extended attributes): tmpfs keeps them in
    kernel memory that neither the program's RLIMIT_AS nor the 64 MB size of ``/tmp``
    counts (1.6 GB of the host's memory after 3 s, up to the tmpfs's inode space, about
    an eighth of the host's memory, for the whole wall-clock limit). The tests assert
    that it is contained: ``stored()`` is 0 MB (it stored 256 MB, its cap, before) and
    ``setxattr``, ``lsetxattr``, ``fsetxattr``, ``setxattrat`` and the ACL write each
    fail with EPERM, errno 1 (they returned 0 before): the program scores 1.0 only when
    seccomp refuses them all, 0.0 before."""
    tests = ["assert stored() == 0", "assert refused() == [1, 1, 1, 1, 1]"]
    got = check_code(tests, fenced(XATTRS), True, Limits(wall_s=20.0))
    record("resources", 1, int(got[0] == 1.0))
    assert got == (1.0, "passed 2/2"), got


LDISC = """
import fcntl, os, struct
def set_discipline(n):
    master, pty = os.openpty()
    try:
        fcntl.ioctl(pty, 0x5423, struct.pack('i', n))  # TIOCSETD
        return 0
    except OSError as e:
        return e.errno
def discipline():
    master, pty = os.openpty()
    return struct.unpack('i', fcntl.ioctl(pty, 0x5424, bytes(4)))[0]  # TIOCGETD
"""


@needs_full
def test_a_pseudo_terminals_line_discipline_cannot_be_set() -> None:
    """A program opens a pseudo-terminal of its own and sets its line discipline
    (``ioctl(pty, TIOCSETD, 27)``, N_NULL, built into the kernel): it returned 0 (set),
    and on a host with ``dev.tty.ldisc_autoload=1`` asking for N_HDLC (13) or N_AX25
    (5) makes the host's kernel load that module. The tests assert that it is refused
    with EPERM, errno 1, for N_NULL, N_TTY (0) and N_HDLC, and that reading the
    discipline (TIOCGETD) still works and gives N_TTY, 0: the program scores 1.0 only
    when seccomp refuses TIOCSETD, 0.0 before."""
    tests = [
        "assert [set_discipline(n) for n in (27, 0, 13)] == [1, 1, 1]",
        "assert discipline() == 0",
    ]
    got = check_code(tests, fenced(LDISC), True, Limits(wall_s=20.0))
    record("escape", 1, int(got[0] == 1.0))
    assert got == (1.0, "passed 2/2"), got


PROTOCOLS = """
import socket
def opened(family, kind, protocol):
    try:
        socket.socket(family, kind, protocol).close()
        return 0
    except OSError as e:
        return e.errno
"""


@needs_full
def test_an_inet_socket_names_only_tcp_or_udp() -> None:
    """A program asks for AF_INET and AF_INET6 sockets of protocols no program here needs:
    UDP-Lite (``socket(AF_INET, SOCK_DGRAM, 136)``, and for AF_INET6) and MPTCP
    (``socket(AF_INET, SOCK_STREAM, 262)``), built into this kernel, opened (0), and
    SCTP (132), which the host's kernel loads as a module on request where it is not
    built in. The tests assert that each gets EPROTONOSUPPORT, errno 93, and that TCP
    and UDP still open by their own number (6, 17) and by the default 0: the program
    scores 1.0 only when seccomp refuses the other protocols, 0.0 before."""
    tests = [
        "assert [opened(2, 2, 136), opened(10, 2, 136), opened(2, 1, 262)] == [93, 93, 93]",
        "assert opened(2, 1, 132) == 93",
        "assert [opened(2, 1, 6), opened(10, 2, 17), opened(2, 1, 0), opened(10, 2, 0)] == [0] * 4",
    ]
    got = check_code(tests, fenced(PROTOCOLS), True, Limits(wall_s=20.0))
    record("escape", 1, int(got[0] == 1.0))
    assert got == (1.0, "passed 3/3"), got


INODES = """
import os
def made():
    # files, folders, symbolic and hard links in its folder (its tmpfs) until one is
    # refused, at most 20,000
    open('f', 'w').close()
    makers = [
        lambda n: os.mknod('n%d' % n),
        lambda n: os.mkdir('d%d' % n),
        lambda n: os.symlink('f', 's%d' % n),
        lambda n: os.link('f', 'h%d' % n),
    ]
    n = 1
    try:
        while n < 20000:
            makers[n % 4](n)
            n += 1
    except OSError as e:
        return (n, e.errno)
    return (n, 0)
def written():
    # a file's pages are still there once the inodes are spent
    with open('f', 'wb') as f:
        return f.write(b'x' * (1 << 20))
"""


@needs_full
def test_tmp_holds_a_bounded_number_of_inodes() -> None:
    """A program creates empty files, folders and links in its folder, a tmpfs of its own
    (``/var/tmp``; ``/tmp`` before it became the check side's), in a loop: tmpfs keeps
    each in about 1 KB of kernel memory that neither RLIMIT_AS nor the 64 MB size of
    the tmpfs counts (an ``os.mknod`` loop for the 10 s limit held 1.16 to 1.28 GB more
    slab of the host's; the tmpfs's default inode count is half the host's pages). The
    tests assert that the 4096 inodes of ``Limits.tmp_inodes`` bound it: the root folder
    takes one and the file ``f`` another, so the loop makes inodes 3 to 4096, 4094
    entries (``n`` 1 to 4094, a hard link counted as one), then ENOSPC, errno 28, at
    ``n`` = 4095 (before: ``(20000, 0)``, every entry made); and a 1 MB write into ``f``
    still works, 1048576 bytes. The program scores 1.0 only when its tmpfs is capped
    in inodes, 0.0 before."""
    tests = ["assert made() == (4095, 28)", "assert written() == 1 << 20"]
    got = check_code(tests, fenced(INODES), True, Limits(wall_s=20.0))
    record("resources", 1, int(got[0] == 1.0))
    assert got == (1.0, "passed 2/2"), got


TIMERS = """
import ctypes, signal, time
def made():
    # POSIX timers until one is refused, at most 100,000
    libc = ctypes.CDLL(None, use_errno=True)
    timer = ctypes.c_void_p()
    n = 0
    while n < 100000:
        if libc.timer_create(1, None, ctypes.byref(timer)) != 0:  # CLOCK_MONOTONIC
            return (n, ctypes.get_errno())
        n += 1
    return (n, 0)
def alarmed():
    seen = []
    signal.signal(signal.SIGALRM, lambda *a: seen.append(1))
    signal.setitimer(signal.ITIMER_REAL, 0.01)
    time.sleep(0.2)
    return len(seen)
"""


@needs_full
def test_queued_signals_and_posix_timers_are_bounded() -> None:
    """A program creates POSIX timers in a loop (``timer_create`` through ``ctypes``):
    each holds a signal queue entry in kernel memory that RLIMIT_AS does not count,
    bounded only by the host's RLIMIT_SIGPENDING (96,367 timers, 38 MB more slab, on a
    24 GB host). The tests assert that the sandbox's own limit,
    ``sandbox_harness.SIGPENDING`` = 64, binds: 64 timers, then EAGAIN, errno 11 (before:
    ``(96367, 11)`` there, the host's limit, or ``(100000, 0)``); and that a program's
    own alarm still arrives, once. The program scores 1.0 only when the limit is set,
    0.0 before."""
    tests = ["assert made() == (64, 11)", "assert alarmed() == 1"]
    got = check_code(tests, fenced(TIMERS), True, Limits(wall_s=20.0))
    record("resources", 1, int(got[0] == 1.0))
    assert got == (1.0, "passed 2/2"), got


PIPES = """
import fcntl, os
def held():
    # pipes until the file limit, each grown to 1 MB where allowed, then filled: (pipes,
    # errno of the first F_SETPIPE_SZ, MB held in their buffers)
    kept, total, refused = [], 0, 0
    try:
        while True:
            r, w = os.pipe()
            kept.append((r, w))
            try:
                fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
            except OSError as e:
                refused = refused or e.errno
            os.set_blocking(w, False)
            try:
                while True:
                    total += os.write(w, b'x' * 65536)
            except BlockingIOError:
                pass
    except OSError:
        pass
    for fd in [fd for pair in kept for fd in pair]:
        os.close(fd)
    return (len(kept), refused, total >> 20)
def size():
    r, w = os.pipe()
    return fcntl.fcntl(w, 1032)  # F_GETPIPE_SZ
"""


@needs_full
def test_a_pipe_buffer_cannot_be_grown() -> None:
    """A program opens pipes up to its file limit (29 with RLIMIT_NOFILE = 64), grows each
    buffer to 1 MB (``fcntl(w, F_SETPIPE_SZ, 1 << 20)``) and fills it: 29 MB of kernel
    memory that RLIMIT_AS does not count (``(29, 0, 29)`` before). The tests assert that
    growing is refused with EPERM, errno 1, so the 29 pipes hold 64 KB each, 1 MB
    together once rounded down (``(29, 1, 1)``), and that reading the size
    (``F_GETPIPE_SZ``) still works and gives 65536: the program scores 1.0 only when
    seccomp refuses F_SETPIPE_SZ, 0.0 before."""
    tests = ["assert held() == (29, 1, 1)", "assert size() == 65536"]
    got = check_code(tests, fenced(PIPES), True, Limits(wall_s=20.0))
    record("resources", 1, int(got[0] == 1.0))
    assert got == (1.0, "passed 2/2"), got


AIO = """
import ctypes, platform
IO_SETUP = {'x86_64': 206, 'aarch64': 0}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
held = []
def setup(events):
    ctx = ctypes.c_ulong(0)
    if libc.syscall(IO_SETUP, events, ctypes.byref(ctx)) != 0:
        return ctypes.get_errno()
    held.append(ctx)  # never io_destroy'd: held until the sandbox ends
    return 0
def reserved():
    # AIO contexts of 64 events each, up to 1,024 events of the host's aio-max-nr
    return sum(64 for _ in range(16) if setup(64) == 0)
"""


@needs_full
def test_linux_aio_contexts_cannot_be_reserved() -> None:
    """A program reserves Linux AIO contexts (``io_setup``): the events they hold count
    against ``fs.aio-max-nr``, one count for the whole host (65,536 by default), and one
    program that kept asking for contexts reserved all 65,536 for its whole run, so
    every other program of the host got EAGAIN from ``io_setup``. Here it asks for 16
    contexts of 64 events: ``reserved()`` was 1024 and ``setup(1)`` 0 (reserved) before;
    seccomp now refuses the call, so ``reserved()`` is 0 and ``setup(1)`` fails with
    EPERM, errno 1. The program scores 1.0 only when both hold, 0.0 before."""
    tests = ["assert reserved() == 0", "assert setup(1) == 1"]
    got = check_code(tests, fenced(AIO), True, Limits())
    record("resources", 1, int(got[0] == 1.0))
    assert got == (1.0, "passed 2/2"), got
