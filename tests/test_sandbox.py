"""Code sandbox, as an attacker would try it: every attack is a real program run for real.

The hostile suite (``ATTACKS`` in tests/sandbox_attacks.py) is scored in one batch by a 2-worker scorer; each attack
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
import threading
import time
from pathlib import Path

import pytest

from recipe_arena.config import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox import Limits, isolation_mode, run_harness
from recipe_arena.rewards.sandbox_split import split_tests
from tests.sandbox_attacks import (
    ABSTRACT,
    ADD,
    ATTACKS,
    CORRECT,
    HOST_DIR,
    SOCK,
    fenced,
    sandbox_processes,
)

FULL = isolation_mode() == "bwrap"
# In CI (root, after `make setup`) the full mode is what the README documents: there a
# missing bubblewrap fails these tests instead of skipping them.
IN_CI = os.environ.get("CI") == "true"
needs_full = pytest.mark.skipif(not FULL and not IN_CI, reason="needs root and bubblewrap")


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
    leftovers = sandbox_processes()
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
    mine = [os.getpid()]  # check_code runs here: its sandboxes get this process's uids
    before = set(sandbox_processes(mine))
    score, _ = check_code(ADD, fenced(code), limits=Limits(wall_s=2.0, nproc=4))
    assert score == 0.0
    time.sleep(1.0)
    assert set(sandbox_processes(mine)) - before == set()


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
    mine = [proc.pid]  # only the sandboxes this verifier started, not a neighbour's
    deadline = time.monotonic() + 30
    while not sandbox_processes(mine) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sandbox_processes(mine), "the sandbox never started"
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 3
    while sandbox_processes(mine) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sandbox_processes(mine) == []


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
