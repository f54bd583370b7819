"""The seccomp filter the code sandbox installs through bubblewrap (``sandbox``): a
classic-BPF program that refuses the system calls below on x86_64 and aarch64. Apart
from ``sandbox`` so that the list of refused calls reads on its own."""

from __future__ import annotations

import functools
import platform
import struct

# System calls the sandbox refuses (EPERM): memory that RLIMIT_AS does not count (SysV
# shared memory and message queues, memfd, keyrings, userfaultfd, and extended
# attributes: tmpfs keeps a file's ``user.*`` attributes and POSIX ACLs in kernel
# memory that neither RLIMIT_AS nor the size of ``/tmp`` counts, so ``setxattr`` of
# 64 KB values on one empty file of ``/tmp`` held 1.6 GB of the host's memory after
# 3 s), new namespaces (a user namespace could mount a tmpfs of any size), and
# reaching other processes (ptrace, process_vm_*, pidfd_getfd, kcmp), io_uring (its
# operations bypass this filter), bpf, perf, mounts and modules, and watching files
# (inotify, fanotify: what the host does in the folders bound into the sandbox), and
# Linux AIO contexts (``io_setup``: the host's aio-max-nr, 65,536 events by default, is
# one count for every process of the host, and one program reserved all of it for its
# whole run, so the host's other programs got EAGAIN; glibc's POSIX AIO and asyncio
# use threads and epoll, not this call).
# ``clone`` is refused only with a namespace flag; ``clone3`` gets ENOSYS so that libc
# falls back to ``clone``. ``socket`` and ``socketpair`` are allowed for the address
# families in ``SOCKET_FAMILIES`` only (a whitelist): every other family (AF_VSOCK,
# AF_NETLINK, AF_PACKET, AF_ALG, ...) gets EAFNOSUPPORT, and an AF_INET or AF_INET6
# socket for the protocols in ``INET_PROTOCOLS`` only (others get EPROTONOSUPPORT).
# ``ioctl`` is refused for one request only, ``TIOCSETD``, and ``fcntl`` for one,
# ``F_SETPIPE_SZ``.
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
    "io_setup",
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
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "setxattrat",
]
_SYSCALLS: dict[str, tuple[int | None, int | None]] = {  # name -> (x86_64, aarch64)
    "shmget": (29, 194), "msgget": (68, 186), "semget": (64, 190), "mq_open": (240, 180),
    "memfd_create": (319, 279), "memfd_secret": (447, 447), "userfaultfd": (323, 282),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218),
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "pidfd_getfd": (438, 438), "kcmp": (312, 272), "process_madvise": (440, 440),
    "io_uring_setup": (425, 425), "io_setup": (206, 0), "bpf": (321, 280), "perf_event_open": (298, 241),
    "unshare": (272, 97), "setns": (308, 268), "mount": (165, 40), "umount2": (166, 39),
    "pivot_root": (155, 41), "chroot": (161, 51), "fsopen": (430, 430),
    "fsmount": (432, 432), "move_mount": (429, 429), "open_tree": (428, 428),
    "kexec_load": (246, 104), "init_module": (175, 105), "finit_module": (313, 273),
    "delete_module": (176, 106), "swapon": (167, 224), "swapoff": (168, 225),
    "reboot": (169, 142), "acct": (163, 89), "open_by_handle_at": (304, 265),
    "inotify_init": (253, None), "inotify_init1": (294, 26), "fanotify_init": (300, 262),
    "setxattr": (188, 5), "lsetxattr": (189, 6), "fsetxattr": (190, 7), "setxattrat": (463, 463),
    "clone": (56, 220), "clone3": (435, 435), "socket": (41, 198), "socketpair": (53, 199),
    "ioctl": (16, 29), "fcntl": (72, 25),
}  # fmt: skip
_ARCHES = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7)}
_CLONE_NS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
_CLONE_NS |= 0x40000000 | 0x00000080  # NEWNET, NEWTIME
SOCKET_FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10}
"""The only socket address families the program may open. Its network namespace has
no interface but a down loopback, so INET sockets reach nothing; they stay allowed
because ordinary library code creates them (and fails cleanly on connect)."""
INET_PROTOCOLS = {"default": 0, "IPPROTO_TCP": 6, "IPPROTO_UDP": 17}
"""The only protocols an AF_INET or AF_INET6 socket may name (0 picks TCP or UDP by the
socket's type): asking for another one (``socket(AF_INET, SOCK_STREAM, 132)``, SCTP;
33, DCCP; 115, L2TP) makes the host's kernel load its module where it is not built in,
code no program needs and the source of several privilege escalations; UDP-Lite (136)
and MPTCP (262), built in, were opened."""
TIOCSETD = 0x5423
"""The ``ioctl`` request that sets a terminal's line discipline, refused: the program may
open a pseudo-terminal of its own (``/dev/ptmx``), and setting a line discipline on it
reached kernel code that no program here needs (N_NULL was set; on a host with
``dev.tty.ldisc_autoload=1``, Debian's default, asking for N_HDLC, N_SLIP, N_AX25 and
the like makes the host's kernel load their modules, the source of several privilege
escalations). Reading the discipline (TIOCGETD) stays allowed."""


F_SETPIPE_SZ = 1031
"""The ``fcntl`` command that grows a pipe's buffer, refused: a pipe's buffer is kernel
memory that RLIMIT_AS does not count, and a program holding 29 pipes (its RLIMIT_NOFILE
of 64) each grown to 1 MB and filled held 29 MB of it; at their default size, 64 KB,
they hold 1.9 MB. Reading the size (``F_GETPIPE_SZ``) stays allowed."""


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
    eafnosupport, eprotonosupport = 0x00050000 | 97, 0x00050000 | 93
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
    prog.append((jeq, "IOCTL", 0, nr["ioctl"]))  # type: ignore[arg-type]
    prog.append((jeq, "FCNTL", 0, nr["fcntl"]))  # type: ignore[arg-type]
    prog.append((ret, 0, 0, allow))
    prog += ["CLONE", (ld, 0, 0, 16)]  # low 32 bits of args[0] (clone flags)
    prog.append((jset, "DENY", "ALLOW", _CLONE_NS))
    prog += ["SOCKET", (ld, 0, 0, 16)]  # args[0]: the address family
    for name, family in sorted(SOCKET_FAMILIES.items()):
        prog.append((jeq, "INET" if name.startswith("AF_INET") else "ALLOW", 0, family))
    prog.append((ret, 0, 0, eafnosupport))
    prog += ["INET", (ld, 0, 0, 32)]  # low 32 bits of args[2]: the protocol (an int)
    for protocol in sorted(INET_PROTOCOLS.values()):
        prog.append((jeq, "ALLOW", 0, protocol))
    prog.append((ret, 0, 0, eprotonosupport))
    prog += ["IOCTL", (ld, 0, 0, 24)]  # low 32 bits of args[1]: the request (an int)
    prog.append((jeq, "DENY", "ALLOW", TIOCSETD))
    prog += ["FCNTL", (ld, 0, 0, 24)]  # low 32 bits of args[1]: the command (an int)
    prog.append((jeq, "DENY", "ALLOW", F_SETPIPE_SZ))
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
