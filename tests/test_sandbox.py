"""Code sandbox, as an attacker would try it: every attack is a real program run for real.

The hostile suite (``ATTACKS``) is scored in one batch by a 2-worker scorer; each attack
states what *contained* means for it (score 0 for a program that tries to earn reward
without computing; score 1 for a program whose tests assert that the host is out of
reach; plus checks on the host afterwards). Its summary line reads
``hostile sandbox suite: N attempts, M contained, K failed``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from recipe_arena.config import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox import UID_BASE, Limits, isolation_mode, run_harness
from recipe_arena.rewards.sandbox_split import split_tests

FULL = isolation_mode() == "bwrap"
# In CI (root, after `make setup`) the full mode is what the README documents: there a
# missing bubblewrap fails these tests instead of skipping them.
IN_CI = os.environ.get("CI") == "true"
needs_full = pytest.mark.skipif(not FULL and not IN_CI, reason="needs root and bubblewrap")
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


def _sandbox_processes() -> list[int]:
    """Host pids owned by a sandbox uid (>= UID_BASE)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                uid = os.stat(d).st_uid
            except OSError:
                continue
            if uid >= UID_BASE:
                out.append(int(d.name))
    return out


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


def _row(tests: tuple[str, ...]) -> PromptRow:
    return PromptRow(
        id="c", messages=[{"role": "user", "content": "q"}], ground_truth=list(tests), domain="code"
    )


@pytest.fixture(scope="module")
def scorer():
    cfg = RewardsConfig(code_wall_s=3.0, code_cpu_s=3, code_memory_mb=512, workers=2)
    with build_scorer(cfg) as s:
        yield s


@pytest.fixture
def host_listeners():
    """A Unix socket on the host filesystem and an abstract one, both listening, with a
    list of the connections they accepted."""
    HOST_DIR.mkdir(exist_ok=True)
    HOST_DIR.chmod(0o755)
    (HOST_DIR / "tests.jsonl").write_text(json.dumps({"ground_truth": ADD}))
    accepted: list[str] = []
    servers = []
    for addr in (str(SOCK), "\0" + ABSTRACT):
        srv = socket.socket(socket.AF_UNIX)
        srv.bind(addr)
        if not addr.startswith("\0"):
            os.chmod(addr, 0o777)  # connectable by any uid, like many sockets under /run
        srv.listen(4)
        srv.settimeout(0.2)
        servers.append(srv)

    stop = threading.Event()

    def serve(srv: socket.socket) -> None:
        while not stop.is_set():
            try:
                srv.accept()
                accepted.append(str(srv.getsockname()))
            except OSError:
                continue

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in servers]
    for t in threads:
        t.start()
    yield accepted
    stop.set()
    for s in servers:
        s.close()
    for p in HOST_DIR.iterdir():
        p.unlink()
    HOST_DIR.rmdir()


@needs_full
def test_hostile_suite_every_attack_is_contained(scorer, host_listeners) -> None:
    """Every attack of ATTACKS and every correct program of CORRECT, scored at once by 2
    workers (3 s wall limit): each gets its ``want`` score, the host checks hold, no
    socket on the host accepted a connection, no sandbox process outlives the batch,
    and a correct program still scores 1 afterwards."""
    suite = {**ATTACKS, **CORRECT}
    names = list(suite)
    t0 = time.monotonic()
    results = scorer.score(
        [_row(suite[n].tests) for n in names], [fenced(suite[n].program) for n in names]
    )
    elapsed = time.monotonic() - t0
    time.sleep(0.5)
    failed = {}
    for name, res in zip(names, results, strict=True):
        a = suite[name]
        if res.score != a.want or (a.host_ok is not None and not a.host_ok()):
            failed[name] = (res.score, res.reason)
    if host_listeners:
        failed["host sockets"] = (len(host_listeners), "accepted a connection")
    leftovers = _sandbox_processes()
    if leftovers:
        failed["leftover processes"] = (len(leftovers), str(leftovers))
    n = len(names)
    print(
        f"\nhostile sandbox suite: {n} attempts, {n - len(failed)} contained, {len(failed)} failed"
    )
    assert not failed, failed
    assert elapsed < 120.0
    good = scorer.score([_row(tuple(ADD))], [fenced("def add(a, b):\n    return a + b")])
    assert good[0].score == 1.0, good[0].reason


@pytest.mark.skipif(not IN_CI, reason="checks CI's set-up")
def test_ci_runs_the_full_sandbox() -> None:
    """CI runs as root after `make setup` (which installs bubblewrap): the full mode."""
    assert isolation_mode() == "bwrap"


def test_expected_values_never_reach_the_program_side() -> None:
    """The split of ``expected = [7, 8, 9]`` / ``assert f(data) == expected`` /
    ``assert g(2) == 987654321``: the program side gets ``data = [3, 1, 2]`` (its probe
    needs it) and the probes ``f(data)`` and ``g(2)``, never ``expected`` nor 987654321."""
    plan = split_tests(
        ["data = [3, 1, 2]", "expected = [7, 8, 9]", "assert f(data) == expected",
         "assert g(2) == 987654321"]
    )  # fmt: skip
    to_program = json.dumps({"p": plan["p"], "probes": plan["probes"]})
    assert plan["p"] == [[0, "data = [3, 1, 2]"]]
    assert [p[1] for p in plan["probes"]] == ["f(data)", "g(2)"]
    assert "expected" not in to_program and "987654321" not in to_program
    assert "[7, 8, 9]" not in to_program
    assert plan["n_asserts"] == 2


def test_loop_variables_travel_as_data() -> None:
    """In ``for x, y in cases: assert sq(x) == y`` the probe is ``sq(x)`` with x sent
    along as data; ``cases`` (which holds the expected y) stays on the check side."""
    plan = split_tests(["cases = [(2, 4)]", "for x, y in cases:\n    assert sq(x) == y"])
    assert plan["probes"] == [[1, "sq(x)", ["x"]]]
    assert plan["p"] == []


@needs_full
def test_pass_fraction_counts_tests_before_a_hang() -> None:
    """add(1,1) is right (2), add(2,2) loops forever: pass_fraction = 1/2 once the wall
    clock (2 s) kills the sandbox; all-pass gives 0."""
    code = "def add(a, b):\n    while a == 2:\n        pass\n    return a + b"
    tests = ["assert add(1, 1) == 2", "assert add(2, 2) == 4"]
    lim = Limits(wall_s=2.0, cpu_s=5)
    assert check_code(tests, fenced(code), all_pass=False, limits=lim)[0] == 0.5
    assert check_code(tests, fenced(code), all_pass=True, limits=lim)[0] == 0.0


@needs_full
def test_stdin_stdout_tests() -> None:
    """Doubles its input: 3 -> 6 and 5 -> 10 pass; the third pair expects 11 for 5 and
    fails: pass fraction 2/3. ``open(0)`` sees the whole input; stderr is not output."""
    code = "import sys\nn = int(open(0).read())\nprint(n * 2)\nprint('noise', file=sys.stderr)"
    pairs = [
        {"stdin": "3\n", "stdout": "6\n"},
        {"stdin": "5", "stdout": "10"},
        {"stdin": "5", "stdout": "11"},
    ]
    score, reason = check_code(pairs, fenced(code), all_pass=False)
    assert score == pytest.approx(2 / 3), reason


@needs_full
def test_a_detached_child_dies_with_the_sandbox() -> None:
    """Issue example: with 4 processes allowed, the program forks a child that calls
    setsid(), closes its descriptors and sleeps 300 s, then hangs itself. At the 2 s
    wall limit the sandbox is killed; 1 s later no process of a sandbox uid is left."""
    code = """
    import os, time
    if os.fork() == 0:
        os.setsid()
        os.closerange(0, 1024)
        time.sleep(300)
    def add(a, b):
        time.sleep(300)
    """
    before = set(_sandbox_processes())
    score, _ = check_code(ADD, fenced(code), limits=Limits(wall_s=2.0, nproc=4))
    assert score == 0.0
    time.sleep(1.0)
    assert set(_sandbox_processes()) - before == set()


@needs_full
def test_the_sandbox_dies_when_the_verifier_is_killed(tmp_path: Path) -> None:
    """A verifier process scores a program that sleeps (60 s wall limit); 1.5 s in, the
    verifier gets SIGKILL. Within 3 s no process of a sandbox uid is left on the host."""
    script = (
        "from recipe_arena.rewards.code import check_code\n"
        "from recipe_arena.rewards.sandbox import Limits\n"
        "check_code(['assert f() == 1'], '```python\\nimport time\\ndef f():\\n    time.sleep(300)\\n```',"
        " limits=Limits(wall_s=60, cpu_s=60))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, "-c", script], env=env)
    deadline = time.monotonic() + 30
    while not _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sandbox_processes(), "the sandbox never started"
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 3
    while _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sandbox_processes() == []


@needs_full
def test_private_scratch_directory_per_run() -> None:
    """Two runs: the first writes /tmp/left_behind, the second does not see it."""
    first = check_code(
        ["assert mark() == 1"],
        fenced("def mark():\n    open('/tmp/left_behind', 'w').write('x')\n    return 1"),
    )
    second = check_code(
        ["assert seen() == False"],
        fenced("import os\ndef seen(): return os.path.exists('/tmp/left_behind')"),
    )
    assert first[0] == 1.0 and second[0] == 1.0, (first, second)


def test_weaker_sandbox_is_refused_unless_allowed(monkeypatch) -> None:
    """With bubblewrap unavailable ($RECIPE_ARENA_BWRAP pointing at nothing: the mode is
    'none'), a code check is refused with a line naming what is missing; with
    rewards.allow_weak_sandbox (Limits.allow_weak) it runs and the right program passes."""
    from recipe_arena.rewards import sandbox

    monkeypatch.setenv("RECIPE_ARENA_BWRAP", "/nonexistent/bwrap")
    sandbox.isolation_mode.cache_clear()
    try:
        assert sandbox.isolation_mode() == "none"
        score, reason = check_code(ADD, fenced("def add(a, b): return a + b"))
        assert score == 0.0 and "bubblewrap" in reason and "allow_weak_sandbox" in reason
        score, reason = check_code(
            ADD, fenced("def add(a, b): return a + b"), limits=Limits(allow_weak=True)
        )
        assert score == 1.0, reason
    finally:
        monkeypatch.delenv("RECIPE_ARENA_BWRAP")
        sandbox.isolation_mode.cache_clear()


def test_allow_weak_sandbox_reaches_the_check() -> None:
    """rewards.allow_weak_sandbox=true is what the scorer passes as Limits.allow_weak."""
    from recipe_arena.rewards.scorer import POOLED

    row = _row(tuple(ADD))
    for flag in (False, True):
        task = POOLED["code"](row, "x", RewardsConfig(allow_weak_sandbox=flag))
        assert task.args[3].allow_weak is flag


@needs_full
def test_harness_values_round_trip() -> None:
    """Values of every plain type cross the boundary exactly: a tuple, a dict, nan,
    a complex, bytes, a frozenset and a 20,000-digit integer compare equal on the check
    side; a custom object does not cross (that assert fails, the others pass: 7/8)."""
    code = "class O: pass\ndef v(k): return [(1, 'a'), {'k': [1.5]}, float('nan'), 1+2j, b'\\x00', frozenset({1}), 3**41000, O()][k]"
    tests = [
        "assert v(0) == (1, 'a')",
        "assert v(1) == {'k': [1.5]}",
        "assert v(2) != v(2)",
        "assert v(3) == 1+2j",
        "assert v(4) == b'\\x00'",
        "assert v(5) == {1}",
        "assert v(6) == 3**41000",
        "assert v(7) is not None",
    ]
    score, reason = check_code(tests, fenced(code), all_pass=False)
    assert score == 7 / 8, reason


def test_run_harness_reports_unparsable_tests() -> None:
    """Tests that are not Python: the check side reports an error line, no traceback."""
    lim = Limits(wall_s=10, allow_weak=True)
    run = run_harness("asserts", json.dumps({"code": "", "tests": ["assert ("]}).encode(), lim)
    assert run.stdout.startswith(b"E ") and b"not valid Python" in run.stdout
