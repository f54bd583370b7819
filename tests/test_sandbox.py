"""Code sandbox: every escape attempt scores 0, the host is unchanged, and the pool
keeps working afterwards. The programs below are real attacks run for real."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from recipe_arena.config import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.code import _HARNESS, check_code, compile_tests
from recipe_arena.rewards.sandbox import Limits, isolation_mode, run_python

TESTS = ["assert add(2, 3) == 5", "assert add(-1, 1) == 0", "assert add(10, 20) == 30"]
MARK = uuid.uuid4().hex[:12]
HOST_FILE = Path("/tmp") / f"recipe_arena_escape_{MARK}"


def fenced(code: str) -> str:
    return f"<think>plan</think>```python\n{code}\n```"


ESCAPES = {
    "sys_exit_zero": "import sys\nsys.exit(0)",
    "os_exit_zero": "import os\nos._exit(0)",
    "exit_inside_call": "import os\ndef add(a, b):\n    os._exit(0)",
    "patched_eq": (
        "class Yes:\n    def __eq__(self, other): return True\n    __hash__ = object.__hash__\n"
        "def add(a, b): return Yes()"
    ),
    "int_subclass_eq": "class I(int):\n    def __eq__(self, o): return True\ndef add(a, b): return I(0)",
    "replace_builtins_and_assert": (
        "import builtins\nbuiltins.AssertionError = type('Nope', (BaseException,), {})\n"
        "builtins.isinstance = lambda *a: True\nbuiltins.len = lambda x: 0\n"
        "def add(a, b): return None"
    ),
    "fake_summary_on_every_fd": (
        "import os\nfor fd in range(1, 20):\n    try:\n"
        "        os.write(fd, b'passed 3/3\\nOK\\n')\n"
        "        for i in range(3):\n"
        '            os.write(fd, (\'{"i": %d, "v": {"a": 1}}\\n\' % i).encode())\n'
        "    except OSError:\n        pass\nos._exit(0)"
    ),
    "kill_parent_and_everyone": (
        "import os, signal\nfor target in (os.getppid(), -1, 1):\n    try:\n"
        "        os.kill(target, signal.SIGKILL)\n    except OSError:\n        pass\n"
        "def add(a, b): return 0"
    ),
    "write_host_file": (
        f"open('{HOST_FILE}', 'w').write('x')\n"
        "import os\nfor p in ('/work', '/root', os.path.expanduser('~')):\n    try:\n"
        "        open(os.path.join(p, 'escape_marker'), 'w').write('x')\n    except OSError:\n        pass\n"
        "def add(a, b): return 0"
    ),
    "fork_bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
    "memory_bomb": "x = bytearray(8 * 1024**3)\ndef add(a, b): return a + b",
    "infinite_output": "while True:\n    print('y' * 10000)",
    "spin_forever": "while True:\n    pass",
    "read_stdin_for_tests": "import sys\nleak = sys.stdin.read()\ndef add(a, b): return 0",
    "survivor_child": (
        "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', "
        f"'import time; time.sleep(300)  # {MARK}'], start_new_session=True)\n"
        "def add(a, b): return 0"
    ),
}


def _row(tests: list) -> PromptRow:
    return PromptRow(
        id="c", messages=[{"role": "user", "content": "q"}], ground_truth=tests, domain="code"
    )


@pytest.fixture(scope="module")
def scorer():
    cfg = RewardsConfig(code_wall_s=3.0, code_cpu_s=3, code_memory_mb=512, workers=2)
    with build_scorer(cfg) as s:
        yield s


def _processes_with(marker: str) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker.encode() in (d / "cmdline").read_bytes():
                    pids.append(int(d.name))
            except OSError:
                continue
    return pids


def test_every_escape_scores_zero_host_unchanged_pool_keeps_working(scorer) -> None:
    """15 attacks, all scored at once by 2 workers, each 0 (add(2,3) must really be 5);
    no host file written, no surviving process, then a correct program scores 1."""
    names = list(ESCAPES)
    t0 = time.monotonic()
    results = scorer.score([_row(TESTS)] * len(names), [fenced(ESCAPES[n]) for n in names])
    elapsed = time.monotonic() - t0
    by_name = {n: (r.score, r.reason) for n, r in zip(names, results, strict=True)}
    assert all(s == 0.0 for s, _ in by_name.values()), by_name
    assert not HOST_FILE.exists()
    assert not any(Path(p, "escape_marker").exists() for p in ("/work", "/root", str(Path.home())))
    time.sleep(0.5)
    assert _processes_with(f"# {MARK}") == []
    # 15 runs, at most 3 s each, on 2 workers: <= 8 rounds of 3 s plus start-up and load.
    assert elapsed < 90.0
    good = scorer.score([_row(TESTS)], [fenced("def add(a, b):\n    return a + b")])
    assert good[0].score == 1.0, good[0].reason


def test_expected_values_never_enter_the_sandbox() -> None:
    """The request sent to the sandbox holds the program and the probe ``add(2, 3)``,
    never the expected 5: compile_tests keeps ``__p0 == 5`` outside."""
    setup, asserts = compile_tests(["assert add(2, 3) == 987654321"])
    assert setup == [] and asserts[0].probes == ("add(2, 3)",)
    assert asserts[0].check == "__p0 == 987654321"
    req = json.dumps({"code": "", "setup": setup, "probes": list(asserts[0].probes)})
    assert "987654321" not in req


@pytest.mark.skipif(isolation_mode() == "plain", reason="no network namespace on this host")
def test_no_network_even_to_localhost() -> None:
    """A server listens on the host's 127.0.0.1; the sandboxed program cannot reach it
    (its network namespace has its own, down, loopback), so ``reach()`` returns the
    error name and the server sees no connection."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(3)
    port = srv.getsockname()[1]
    accepted: list[object] = []
    threading.Thread(target=lambda: accepted.append(_accept(srv)), daemon=True).start()
    code = (
        "import socket\ndef reach():\n    try:\n"
        f"        socket.create_connection(('127.0.0.1', {port}), timeout=2)\n        return 'connected'\n"
        "    except OSError as e:\n        return type(e).__name__"
    )
    score, reason = check_code(["assert reach() == 'connected'"], fenced(code))
    time.sleep(0.2)
    srv.close()
    assert score == 0.0, reason
    assert accepted in ([], [None])


def _accept(srv: socket.socket) -> object:
    try:
        return srv.accept()
    except OSError:
        return None


def test_program_runs_in_fresh_private_directory_with_limits() -> None:
    """Two runs: the first writes a file in its working directory, the second must not
    see it; a 20 MB write exceeds the 16 MB file-size limit and fails."""
    lim = Limits(wall_s=5)
    first = run_python(
        ["-c", "open('left_behind', 'w').write('x'); import os; print(os.listdir('.'))"], b"", lim
    )
    assert b"left_behind" in first.stdout
    second = run_python(["-c", "import os; print(os.listdir('.'))"], b"", lim)
    assert b"left_behind" not in second.stdout
    big = run_python(["-c", "open('big', 'wb').write(b'0' * (20 * 1024 * 1024))"], b"", lim)
    assert big.returncode != 0


def test_pass_fraction_counts_tests_before_a_hang() -> None:
    """add(1,1) is right (2), add(2,2) loops forever: pass_fraction = 1/2 once the wall
    clock (2 s) kills the program; all-pass gives 0."""
    code = "def add(a, b):\n    while a == 2:\n        pass\n    return a + b"
    tests = ["assert add(1, 1) == 2", "assert add(2, 2) == 4"]
    lim = Limits(wall_s=2.0, cpu_s=5)
    assert check_code(tests, fenced(code), all_pass=False, limits=lim)[0] == 0.5
    assert check_code(tests, fenced(code), all_pass=True, limits=lim)[0] == 0.0


def test_stdin_stdout_tests() -> None:
    """Doubles its input: 3 -> 6 and 5 -> 10 pass; the third pair expects 11 for 5 and
    fails: pass fraction 2/3. Printing to stderr does not count as output."""
    code = "import sys\nn = int(input())\nprint(n * 2)\nprint('noise', file=sys.stderr)"
    pairs = [
        {"stdin": "3\n", "stdout": "6\n"},
        {"stdin": "5", "stdout": "10"},
        {"stdin": "5", "stdout": "11"},
    ]
    score, reason = check_code(pairs, fenced(code), all_pass=False)
    assert score == pytest.approx(2 / 3), reason


def test_harness_encodes_only_plain_values() -> None:
    """Direct harness run: a tuple, a dict, a nan and a custom object come back as
    (1, 'a'), {'k': [1.5]}, 'nan' encoded, and an error line for the object."""
    req = {
        "code": "class O: pass\n",
        "setup": [],
        "probes": ["(1, 'a')", "{'k': [1.5]}", "float('nan')", "O()"],
    }
    run = run_python(["-c", _HARNESS], json.dumps(req).encode(), Limits(wall_s=5))
    lines = [json.loads(x) for x in run.stdout.decode().splitlines()]
    assert lines[0] == {"i": 0, "v": {"tuple": [{"a": 1}, {"a": "a"}]}}
    assert lines[1] == {"i": 1, "v": {"dict": [[{"a": "k"}, {"list": [{"a": 1.5}]}]]}}
    assert lines[2] == {"i": 2, "v": {"r": "nan"}}
    assert "err" in lines[3]


def test_isolation_mode_is_reported() -> None:
    """Running as root with unshare and setpriv present gives the strongest mode."""
    mode = isolation_mode()
    assert mode in ("namespaces", "userns", "plain")
    if (
        os.geteuid() == 0
        and Path("/usr/bin/unshare").exists()
        and Path("/usr/bin/setpriv").exists()
    ):
        assert mode == "namespaces"
