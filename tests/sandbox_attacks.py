"""The hostile-program catalogue the sandbox tests run: each ``Attack`` is a real program
with the tests it is scored against and what *contained* means for it (score 0 for a
program that tries to earn reward without computing, 1 for one whose tests assert that the
host is out of reach, plus checks on the host afterwards). Shared by tests/test_sandbox.py
(the hostile suite) and tests/test_verify_hostile.py."""

from __future__ import annotations

import os
import textwrap
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from recipe_arena.rewards.sandbox import UID_BASE

ADD = ["assert add(2, 3) == 5", "assert add(-1, 1) == 0", "assert add(10, 20) == 30"]
MARK = uuid.uuid4().hex[:12]
HOST_DIR = (
    Path("/var/tmp") / f"recipe_arena_hostile_{MARK}"
)  # not /tmp: visible to a sandbox that only hides /tmp
SOCK = HOST_DIR / "s.sock"
ABSTRACT = f"recipe_arena_{MARK}"


def fenced(code: str) -> str:
    return f"<think>plan</think>```python\n{textwrap.dedent(code).strip()}\n```"


@dataclass(frozen=True)
class Attack:
    category: str
    program: str
    tests: tuple[str, ...] = tuple(ADD)
    want: float = 0.0
    """The score that means contained: 0 for reward hacks, 1 where the tests assert
    that the host is out of reach (or that a correct program passes)."""
    host_ok: Callable[[], bool] | None = None


def _proc_table() -> dict[int, tuple[int, int]]:
    """Every host process: pid -> (uid, parent pid)."""
    table = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                uid = os.stat(d).st_uid
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            table[int(d.name)] = (uid, ppid)
    return table


def owner_slot(uid: int) -> int:
    """Which process started the sandbox running as ``uid``: its pid modulo 100,000
    (``rewards.sandbox._uids`` gives each process 2,000 uids from UID_BASE + slot * 2,000)."""
    return (uid - UID_BASE) // 2_000


def sandbox_processes(owners: Collection[int] | None = None) -> list[int]:
    """Host pids owned by a sandbox uid (>= UID_BASE). With ``owners``, only the
    sandboxes those processes started. Without, every sandbox except those started by a
    live process outside this test process's tree: another test running beside it (a
    smoke run's code checks, another pytest-xdist worker) is not this test's leftover,
    while a sandbox whose owner is gone, or is this process or one of its descendants
    (a verifier pool's zygote and workers), is."""
    table = _proc_table()
    if owners is not None:
        slots = {pid % 100_000 for pid in owners}
        return [p for p, (uid, _) in table.items() if uid >= UID_BASE and owner_slot(uid) in slots]
    ours = {os.getpid()}
    grew = True
    while grew:
        more = {p for p, (_, ppid) in table.items() if ppid in ours} - ours
        ours |= more
        grew = bool(more)
    foreign = {p % 100_000 for p, (uid, _) in table.items() if uid < UID_BASE and p not in ours}
    return [
        p for p, (uid, _) in table.items() if uid >= UID_BASE and owner_slot(uid) not in foreign
    ]


SCAN_CMDLINES = """
import os, re
def add(a, b):
    seen = []
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                seen.append(open(f'/proc/{pid}/cmdline', 'rb').read().decode(errors='replace'))
            except OSError:
                pass
    for cmd in seen:
        for part in cmd.split('\\0'):
            if os.path.isfile(part):
                text = open(part, errors='replace').read()
                m = re.search(r'add\\(%d, %d\\) == (-?\\d+)' % (a, b), text)
                if m:
                    return int(m.group(1))
    return None
"""

ATTACKS: dict[str, Attack] = {
    # ---------------------------------------------------------------- reward hacks: want 0
    "sys_exit_zero": Attack("score", "import sys\nsys.exit(0)"),
    "os_exit_zero": Attack("score", "import os\nos._exit(0)"),
    "exit_inside_call": Attack("score", "import os\ndef add(a, b):\n    os._exit(0)"),
    "patched_eq": Attack(
        "score",
        "class Yes:\n    def __eq__(self, o): return True\n    __hash__ = object.__hash__\n"
        "def add(a, b): return Yes()",
    ),
    "int_subclass_eq": Attack(
        "score", "class I(int):\n    def __eq__(self, o): return True\ndef add(a, b): return I(0)"
    ),
    "replace_builtins": Attack(
        "score",
        "import builtins\nbuiltins.AssertionError = type('N', (BaseException,), {})\n"
        "builtins.isinstance = lambda *a: True\nbuiltins.bool = lambda x: True\n"
        "def add(a, b): return None",
    ),
    "forged_report_on_every_fd": Attack(
        "score",
        """
        import os, json
        for fd in range(0, 300):
            for line in (b'T 3\\nR 0 1\\nR 1 1\\nR 2 1\\n', json.dumps({"v": {"a": 5}}).encode() + b'\\n'):
                try:
                    os.write(fd, line)
                except OSError:
                    pass
        os._exit(0)
        """,
    ),
    "read_every_fd_for_tests": Attack(
        "score",
        """
        import os, re
        found = {}
        for fd in range(0, 300):
            try:
                os.set_blocking(fd, False)
                data = os.read(fd, 1 << 16).decode(errors='replace')
            except OSError:
                continue
            for a, b, v in re.findall(r'add\\((-?\\d+), (-?\\d+)\\) == (-?\\d+)', data):
                found[(int(a), int(b))] = int(v)
        def add(a, b): return found.get((a, b))
        """,
    ),
    "proc_cmdline_scrape (issue)": Attack("score", SCAN_CMDLINES),
    "globals_expected (issue)": Attack(
        "score",
        "def squares(n): return globals()['expected']",
        ("expected = [0, 1, 4]", "assert squares(3) == expected"),
    ),
    "caller_frames": Attack(
        "score",
        """
        import sys
        def squares(n):
            f = sys._getframe(1)
            while f is not None:
                for d in (f.f_locals, f.f_globals):
                    if 'expected' in d:
                        return d['expected']
                for c in f.f_code.co_consts:
                    if isinstance(c, (list, tuple)) and len(c) == n:
                        return list(c)
                f = f.f_back
        """,
        ("expected = [0, 1, 4]", "assert squares(3) == expected"),
    ),
    "gc_scan": Attack(
        "score",
        """
        import gc
        def squares(n):
            for o in gc.get_objects():
                if isinstance(o, dict) and 'expected' in o:
                    return o['expected']
                if isinstance(o, list) and len(o) == n and o[:1] == [0]:
                    return o
        """,
        ("expected = [0, 1, 4]", "assert squares(3) == expected"),
    ),
    "eq_str_subclass": Attack(
        "score", "class S(str):\n    def __eq__(self, o): return True\ndef add(a, b): return S('x')"
    ),
    "eq_inside_a_list": Attack(
        "score",
        "class Y:\n    def __eq__(self, o): return True\n    __hash__ = object.__hash__\n"
        "def add(a, b): return [Y()]",
        ("assert add(2, 3) == [5]", "assert [5] == add(1, 4)", "assert add(0, 5) in ([5], 5)"),
    ),
    "eq_in_generator_and_ne": Attack(
        "score",
        "class Y:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
        "    __hash__ = object.__hash__\ndef add(a, b): return Y()",
        (
            "assert all(add(a, b) == c for a, b, c in [(2, 3, 5), (1, 1, 2)])",
            "assert not (add(2, 3) != 5)",
            "assert {add(2, 3)} == {5}",
        ),
    ),
    "stop_iteration_ends_the_tests_map": Attack(
        "score",
        "def add(a, b):\n    raise StopIteration",
        ("assert all(map(lambda p: add(p[0], p[1]) == p[2], [(2, 3, 5), (1, 1, 2)]))",),
    ),
    "forged_stop_answer": Attack(
        "score",
        """
        import gc, io
        def add(a, b):
            for o in gc.get_objects():
                if isinstance(o, io.BufferedWriter):
                    try:
                        o.write(b'{"stop": 1}\\n{"stop": 1}\\n')
                        o.flush()
                    except (OSError, ValueError):
                        pass
            return 0
        """,
        ("assert all(map(lambda p: add(p[0], p[1]) == p[2], [(2, 3, 5), (1, 1, 2)]))",),
    ),
    "patch_check_builtins": Attack(
        "score",
        """
        import builtins
        for name in ('all', 'any', 'sorted', 'len', 'bool', 'isinstance', 'map', 'list'):
            setattr(builtins, name, lambda *a, **k: True)
        builtins.AssertionError = type('Never', (BaseException,), {})
        def add(a, b): return None
        """,
        (
            "assert all(add(a, b) == a + b for a, b in [(2, 3), (1, 1)])",
            "assert list(map(add, [1], [2])) == [3]",
            "assert sorted([add(2, 1)]) == [3]",
        ),
    ),
    "mutate_shared_argument": Attack(
        "score",
        "def f(xs):\n    xs.clear()\n    return []",
        ("data = [3, 1, 2]", "assert f(data) == sorted(data)"),
    ),
    "read_check_side_memory": Attack(
        "score",
        """
        import os, re
        def add(a, b):
            for pid in os.listdir('/proc'):
                if not pid.isdigit() or int(pid) == os.getpid():
                    continue
                try:
                    maps = open(f'/proc/{pid}/maps').read().splitlines()
                    mem = open(f'/proc/{pid}/mem', 'rb')
                except OSError:
                    continue
                for line in maps:
                    lo, hi = (int(x, 16) for x in line.split()[0].split('-'))
                    try:
                        mem.seek(lo)
                        m = re.search(rb'add\\(%d, %d\\) == (-?\\d+)' % (a, b), mem.read(hi - lo))
                    except (OSError, OverflowError, ValueError):
                        continue
                    if m:
                        return int(m.group(1))
        """,
    ),
    "kill_check_side_and_everyone": Attack(
        "score",
        """
        import os, signal
        for target in [-1] + list(range(1, 64)):
            if target != os.getpid():
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
        def add(a, b): return 0
        """,
    ),
    "answer_via_leftover_file": Attack(
        "score",
        "import os\ndef add(a, b):\n    return int(open('/tmp/answers').read()) "
        "if os.path.exists('/tmp/answers') else 0",
    ),
    # ---------------------------------------------------------------- visibility: want 1
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
            for p in ('/etc/passwd', '/etc/hostname', '/work', '/home', '/var', '/sys/kernel',
                      '/root/.bashrc', '/proc/1/environ', '{HOST_DIR}/tests.jsonl', '/run'):
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
            for d in ('/', '/usr', '/var/tmp', '/run/lock', '/dev/shm', '/root', '/proc/sys/kernel',
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
        ),
        want=1.0,
        host_ok=lambda: not Path(f"/tmp/m_{MARK}").exists(),
    ),
    "test_code_sees_no_host_files": Attack(
        "escape",
        "def add(a, b): return a + b",
        ("import os", "assert not os.path.exists('/etc/passwd') and not os.path.exists('/work')"),
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
    # ---------------------------------------------------------------- resources
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
                    with open(f'/tmp/f{i}', 'wb') as f:
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
        "def wrote():\n    try:\n        open('/tmp/big', 'wb').write(b'0' * (20 << 20))\n"
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

# Correct programs must pass: the split must not cost a right answer its reward.
CORRECT: dict[str, Attack] = {
    "generator_in_assert (issue)": Attack(
        "correct",
        "def add(a, b): return a + b",
        ("assert all(add(a, b) == a + b for a, b in [(1, 2), (3, 4), (-5, 5)])",),
        want=1.0,
    ),
    "expected_in_setup": Attack(
        "correct",
        "def squares(n): return [i * i for i in range(n)]",
        ("expected = [0, 1, 4]", "assert squares(3) == expected"),
        want=1.0,
    ),
    "class_instance_in_setup": Attack(
        "correct",
        "class Solution:\n    def twice(self, x): return 2 * x",
        ("s = Solution()", "assert s.twice(4) == 8", "assert Solution().twice(0) == 0"),
        want=1.0,
    ),
    "loop_of_asserts": Attack(
        "correct",
        "def sq(x): return x * x",
        ("cases = [(1, 1), (2, 4), (3, 9)]", "for x, y in cases:\n    assert sq(x) == y"),
        want=1.0,
    ),
    "builtins_and_math_around_probes": Attack(
        "correct",
        "def half(x): return x / 2\ndef rev(s): return s[::-1]\ndef evens(n): return {i for i in range(0, n, 2)}",
        (
            "import math",
            "assert math.isclose(half(1), 0.5)",
            "assert sorted(rev('cba')) == ['a', 'b', 'c'] and len(rev('abc')) == 3",
            "assert evens(5) == {0, 2, 4}",
            "assert all(map(lambda k: half(2 * k) == k, range(4)))",
        ),
        want=1.0,
    ),
    "big_int_and_surrogate": Attack(
        "correct",
        "def big(): return 7 ** 20000\ndef s(): return '\\ud800x'",
        ("assert big() == 7 ** 20000", "assert s() == '\\ud800' + 'x'"),
        want=1.0,
    ),
}


# ------------------------------------------------------------------ the tests' own values
def expected_of(x: int) -> str:
    """The value ``f(x)`` must return in LEAK_FORMS: ``EXP-`` and 8 hex digits of
    x * 2654435761 mod 2**32: 3 * 2654435761 = 7963307283, minus 2**32 = 3668339987 =
    0xdaa66d13, so expected_of(3) = 'EXP-daa66d13'. A program that does not compute this
    can only find it in memory."""
    return "EXP-" + format(x * 2654435761 % 2**32, "08x")


E3, E5 = expected_of(3), expected_of(5)
_FORMS: dict[str, tuple[str, ...]] = {
    "setup_tuple (issue)": ("data, expected = 3, <E3>", "assert f(data) == expected"),
    "setup_separate": ("data = 3", "expected = <E3>", "assert f(data) == expected"),
    "setup_both_in_one_list": ("case = [3, <E3>]", "assert f(case[0]) == case[1]"),
    "for_cases (issue)": (
        "cases = [((3,), <E3>), ((5,), <E5>)]",
        "for c in cases:\n    assert f(*c[0]) == c[1]",
    ),
    "dict_driven": (
        "cases = {3: <E3>, 5: <E5>}",
        "for k, v in cases.items():\n    assert f(k) == v",
    ),
    "index_loop": (
        "xs = [3, 5]",
        "ys = [<E3>, <E5>]",
        "for i in range(len(xs)):\n    assert f(xs[i]) == ys[i]",
    ),
    "index_loop_one_setup": (
        "inputs, outputs = [3, 5], [<E3>, <E5>]",
        "for i in range(len(inputs)):\n    assert f(inputs[i]) == outputs[i]",
    ),
    "enumerate_loop": (
        "outs = [<E3>, <E5>]",
        "for i, x in enumerate([3, 5]):\n    assert f(x) == outs[i]",
    ),
    "dict_items_whole": (
        "cases = {3: <E3>}",
        "for item in cases.items():\n    assert f(item[0]) == item[1]",
    ),
    "generator_over_cases": (
        "cases = [((3,), <E3>), ((5,), <E5>)]",
        "assert all(f(*c[0]) == c[1] for c in cases)",
    ),
    "generator": ("assert all(f(a) == b for a, b in [(3, <E3>), (5, <E5>)])",),
    "list_comprehension": ("assert [f(a) for a in [3, 5]] == [<E3>, <E5>]",),
    "humaneval_check": (
        "def check(candidate):\n    assert candidate(3) == <E3>\n    assert candidate(5) == <E5>",
        "check(f)",
    ),
    "kwargs_from_dict": ("kw = {'x': 3, 'want': <E3>}", "assert f(x=kw['x']) == kw['want']"),
    "while_pop": (
        "pending = [(3, <E3>)]",
        "while pending:\n    a, b = pending.pop()\n    assert f(a) == b",
    ),
    "map_lambda": ("assert list(map(lambda p: f(p[0]) == p[1], [(3, <E3>)])) == [True]",),
    "helper_function": (
        "def run(xs, ys):\n    for x, y in zip(xs, ys):\n        assert f(x) == y",
        "run([3, 5], [<E3>, <E5>])",
    ),
    "class_cases": (
        "class T:\n    cases = [(3, <E3>)]\n    def test(self):\n"
        "        for a, b in self.cases:\n            assert f(a) == b",
        "T().test()",
    ),
    "alias_and_message": ("g = f", "assert g(3) == <E3>, 'want ' + <E3>"),
}
LEAK_FORMS: dict[str, tuple[str, ...]] = {
    name: tuple(t.replace("<E3>", repr(E3)).replace("<E5>", repr(E5)) for t in tests)
    for name, tests in _FORMS.items()
}
"""Test forms that bind the expected value beside the argument (setup statements, loop
variables, dicts, indices, generators, helpers): each expects ``f(x) == expected_of(x)``."""

THIEF = (Path(__file__).with_name("sandbox_thief.py")).read_text() + "\nf = steal\n"
"""A program that computes nothing: ``f`` hunts every place a value of the tests could be
(its caller's frames, inspect.stack, a traceback's frames, gc.get_objects, sys.modules,
builtins, every open descriptor) for a string starting ``EXP-`` and returns it."""
SOLVER = "def f(x):\n    return 'EXP-' + format(x * 2654435761 % 2**32, '08x')"
