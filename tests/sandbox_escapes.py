"""The hostile programs of the sandbox catalogue that test the host's boundary: escapes,
whose tests assert that the host is out of reach (score 1 means contained), and
resource exhaustion. Part of ``ATTACKS`` in tests/sandbox_attacks.py."""

from __future__ import annotations

from pathlib import Path

from tests.sandbox_attack_base import ABSTRACT, HOST_DIR, MARK, SOCK, Attack

ESCAPES: dict[str, Attack] = {
    "socket_families_other_than_unix_and_inet": Attack(
        "escape",
        """
        import errno, socket
        def opened(family, pair=False):
            kind = socket.SOCK_DGRAM if family in (16, 17) else socket.SOCK_STREAM
            try:
                (socket.socketpair if pair else socket.socket)(family, kind)
                return True
            except OSError as e:
                return e.errno != errno.EAFNOSUPPORT
        """,
        (
            # AF_VSOCK (issue), AF_NETLINK, AF_PACKET, AF_KEY, AF_ALG, AF_BLUETOOTH,
            # AF_CAN, AF_TIPC, AF_XDP, AF_RDS, AF_LLC: refused; AF_UNIX, AF_INET(6) open
            "assert not opened(40) and not opened(40, pair=True)",
            "assert not opened(16) and not opened(17) and not opened(15)",
            "assert not any(opened(f) for f in (38, 31, 29, 30, 44, 21, 26))",
            "assert opened(1) and opened(1, pair=True) and opened(2) and opened(10)",
        ),
        want=1.0,
    ),
    "inotify_and_fanotify_refused": Attack(
        "escape",
        """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        def watch():
            fd = libc.inotify_init1(0)
            return fd if fd < 0 else libc.inotify_add_watch(fd, b'/usr/lib', 0xfff)
        def fan():
            return libc.fanotify_init(0, 0)
        """,
        ("assert watch() == -1", "assert fan() == -1"),
        want=1.0,
    ),
    "mountinfo_shows_no_home_or_cache": Attack(
        "escape",
        """
        import os
        def info():
            return open('/proc/self/mountinfo').read() + open('/proc/1/mountinfo').read()
        """,
        (
            "m = info()",
            "assert '.cache' not in m and 'recipe_arena' not in m and 'harness-' not in m",
        ),
        want=1.0,
    ),
    "sees_only_own_processes": Attack(
        "escape",
        "import os\ndef pids(): return sorted(int(p) for p in os.listdir('/proc') if p.isdigit())",
        ("assert len(pids()) <= 3 and max(pids()) < 16",),
        want=1.0,
    ),
    "host_files_invisible": Attack(
        "escape",
        f"""
        import os
        def readable():
            out = []
            for p in ('/etc/passwd', '/etc/hostname', '/work', '/home', '/var/lib', '/var/log',
                      '/sys/kernel', '/root/.bashrc', '/proc/1/environ', '{HOST_DIR}/tests.jsonl',
                      '/run'):
                try:
                    if os.path.isdir(p):
                        os.listdir(p)
                    else:
                        open(p, 'rb').read(1)
                    out.append(p)
                except OSError:
                    pass
            return out
        """,
        ("assert readable() == []",),
        want=1.0,
    ),
    "nothing_writable_but_tmp": Attack(
        "escape",
        f"""
        import os, sys
        def writable():
            out = []
            for d in ('/', '/usr', '/var', '/run/lock', '/dev/shm', '/root', '/proc/sys/kernel',
                      os.path.dirname(os.__file__), '/lib', '/dev'):
                try:
                    with open(os.path.join(d, 'w_{MARK}'), 'wb') as f:
                        f.write(b'x' * 1024)
                    out.append(d)
                except OSError:
                    pass
            for path in ('/proc/sys/kernel/hostname', '/harness.pyc', sys.executable):
                try:
                    open(path, 'wb').close()
                    out.append(path)
                except OSError:
                    pass
            return out
        """,
        ("assert writable() == []",),
        want=1.0,
        host_ok=lambda: (
            not any(
                Path(d, f"w_{MARK}").exists() for d in ("/var/tmp", "/run/lock", "/dev/shm", "/")
            )
        ),
    ),
    "host_unix_socket": Attack(
        "escape",
        f"""
        import socket
        def reach():
            try:
                socket.socket(socket.AF_UNIX).connect('{SOCK}')
                return 'connected'
            except OSError as e:
                return 'failed'
        """,
        ("assert reach() == 'failed'",),
        want=1.0,
    ),
    "host_abstract_socket": Attack(
        "escape",
        f"""
        import socket
        def reach():
            try:
                socket.socket(socket.AF_UNIX).connect('\\0{ABSTRACT}')
                return 'connected'
            except OSError:
                return 'failed'
        """,
        ("assert reach() == 'failed'",),
        want=1.0,
    ),
    "no_network_interfaces": Attack(
        "escape",
        """
        import socket
        def reach():
            for host in ('127.0.0.1', '10.0.0.1', '8.8.8.8'):
                try:
                    socket.create_connection((host, 22), timeout=0.5)
                    return host
                except OSError:
                    pass
            return 'failed'
        """,
        ("assert reach() == 'failed'",),
        want=1.0,
    ),
    "setup_line_runs_sandboxed (issue)": Attack(
        "escape",
        "def add(a, b): return a + b",
        (
            "import math",
            f"assert math.__loader__.__init__.__globals__['_os'].mkdir('/tmp/m_{MARK}') is None",
            "assert add(1, 2) == 3",  # a row must read the program to judge one
        ),
        want=1.0,
        host_ok=lambda: not Path(f"/tmp/m_{MARK}").exists(),
    ),
    "test_code_sees_no_host_files": Attack(
        "escape",
        "def add(a, b): return a + b",
        (
            "import os",
            "assert not os.path.exists('/etc/passwd') and not os.path.exists('/work')",
            "assert add(1, 2) == 3",  # a row must read the program to judge one
        ),
        want=1.0,
    ),
    "nested_namespaces_refused": Attack(
        "escape",
        """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        def tries():
            return [libc.unshare(0x10000000), libc.unshare(0x00020000), libc.shmget(0, 1 << 20, 0o1600),
                    libc.memfd_create(b'm', 0), libc.ptrace(0, 0, 0, 0)]
        """,
        ("assert tries() == [-1, -1, -1, -1, -1]",),
        want=1.0,
    ),
}
"""Programs whose tests assert that the host is out of reach: want 1."""

RESOURCES: dict[str, Attack] = {
    "fork_bomb": Attack(
        "resources",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
    ),
    "memory_bomb": Attack("resources", "x = bytearray(8 * 1024**3)\ndef add(a, b): return a + b"),
    "memory_in_six_processes (issue)": Attack(
        "resources",
        """
        import os
        def spawned():
            n = 0
            for _ in range(6):
                try:
                    if os.fork() == 0:
                        x = bytearray(900 * 1024**2)
                        import time; time.sleep(30)
                        os._exit(0)
                    n += 1
                except OSError:
                    pass
            return n
        """,
        ("assert spawned() == 0",),
        want=1.0,
    ),
    "threads": Attack(
        "resources",
        """
        import threading, time
        def started():
            n = 0
            for _ in range(8):
                try:
                    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
                    n += 1
                except RuntimeError:
                    pass
            return n
        """,
        ("assert started() == 0",),
        want=1.0,
    ),
    "fill_tmp": Attack(
        "resources",
        """
        def filled():
            total = 0
            try:
                for i in range(400):
                    with open(f'f{i}', 'wb') as f:  # its folder: its own tmpfs
                        f.write(b'0' * (1 << 20))
                    total += 1
            except OSError:
                pass
            return total
        """,
        ("assert filled() <= 64",),
        want=1.0,
    ),
    "one_huge_file": Attack(
        "resources",
        "def wrote():\n    try:\n        open('big', 'wb').write(b'0' * (20 << 20))\n"
        "        return 'yes'\n    except OSError:\n        return 'no'",
        ("assert wrote() == 'no'",),
        want=1.0,
    ),
    "infinite_output": Attack("resources", "while True:\n    print('y' * 10000)"),
    "spin_forever": Attack("resources", "while True:\n    pass"),
    "huge_value_back (issue)": Attack(
        "resources", "def rep(n): return 10**9", ("assert 'ab' * rep(2) == 'abab'",)
    ),
    "huge_string_back": Attack("resources", "def add(a, b): return 'x' * (200 << 20)"),
    "deeply_nested_value": Attack(
        "resources",
        "def add(a, b):\n    v = []\n    for _ in range(100000):\n        v = [v]\n    return v",
    ),
}
"""Programs that try to exhaust the sandbox's processes, memory, disk, output, time
or the size of what comes back."""
