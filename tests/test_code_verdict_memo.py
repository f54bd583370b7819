"""A scorer runs a code program against the same tests once (``Scorer._verdicts``).

Held-out evaluations check the same greedy programs every few RL steps, and each check
starts two interpreters in bubblewrap. The scorer keeps each verdict that the same
program and tests always get, keyed by ``code.verdict_key``, and hands it out again.
The tests go through the real scorer, pool and sandbox. A program whose verdict is a
coin toss (``os.urandom``) shows whether the sandbox ran again: kept, twelve scorings
agree; run again, all twelve agree with probability 2 * 2**-12.
"""

from __future__ import annotations

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import Message, PromptRow
from recipe_arena.rewards.code import verdict_key, verdict_repeats
from recipe_arena.rewards.sandbox import Limits, isolation_mode
from recipe_arena.rewards.scorer import build_scorer

pytestmark = pytest.mark.skipif(
    isolation_mode() == "none", reason="needs bubblewrap for the code sandbox"
)

COIN = "```python\nimport os\ndef add(a, b):\n    return a + b + (os.urandom(1)[0] & 1)\n```"
"""Right (``add(1, 2) == 3``) on half of its runs, whatever it is asked."""
RIGHT = "```python\ndef add(a, b):\n    return a + b\n```"


def _row(tests: list[str]) -> PromptRow:
    return PromptRow(
        id="add",
        messages=[Message(role="user", content="Write add.")],
        ground_truth=tests,
        domain="code",
    )


def test_a_program_met_again_is_not_run_again() -> None:
    """Twelve scorings of the coin-toss program by one scorer, one call each: the first
    runs it, the other eleven reuse its verdict, so all twelve reasons are one (run each
    time, they would differ but with probability 2 * 2**-12). The counters count twelve
    checks either way, so a run's ``reward/code/checks`` does not depend on the memo."""
    row = _row(["assert add(1, 2) == 3"])
    with build_scorer(RewardsConfig(workers=1)) as scorer:
        got = [scorer.score([row], [COIN])[0] for _ in range(12)]
        assert scorer.counts["code/checks"] == 12
    assert len({(r.score, r.reason) for r in got}) == 1
    assert got[0].reason in ("passed 1/1", "passed 0/1")


def test_what_the_verdict_depends_on_is_the_key() -> None:
    """Prose outside the fenced block does not change the key (the sandbox runs only the
    block); another test list, program, scoring rule or limit does. No block: no key."""
    tests = ["assert add(1, 2) == 3"]
    base = verdict_key(tests, RIGHT, True, Limits())
    assert base is not None and len(base) == 64
    assert verdict_key(tests, "Here it is.\n" + RIGHT + "\nDone.", True, Limits()) == base
    assert verdict_key(["assert add(2, 2) == 4"], RIGHT, True, Limits()) != base
    assert verdict_key(tests, RIGHT.replace("a + b", "b + a"), True, Limits()) != base
    assert verdict_key(tests, RIGHT, False, Limits()) != base
    assert verdict_key(tests, RIGHT, True, Limits(wall_s=1.0)) != base
    assert verdict_key(tests, "no code here", True, Limits()) is None


@pytest.mark.parametrize(
    ("reason", "kept"),
    [
        ("passed 2/2", True),
        ("passed 0/2; AssertionError", True),
        ("passed 1/2; timed out after 5s", False),
        ("passed 3/5; row time limit (20s) reached after 3 of 5 tests", False),
        ("error: timed out after 5s (killed)", False),
        ("error: sandbox failed", False),
        ("no fenced python block", False),
    ],
)
def test_only_verdicts_that_repeat_are_kept(reason: str, kept: bool) -> None:
    """A count of passed asserts is kept; one cut by a time limit is not (a program near
    its limit may pass on a quieter machine), nor an error of the sandbox or the row."""
    assert verdict_repeats(reason) is kept


def test_a_timed_out_verdict_is_checked_again() -> None:
    """A program past its wall-clock limit, scored twice by one scorer: nothing is kept,
    so the second scoring runs it again, and each verdict names the limit."""
    row = _row(["assert add(1, 2) == 3"])
    slow = "```python\nimport time\ndef add(a, b):\n    time.sleep(30)\n    return a + b\n```"
    cfg = RewardsConfig(workers=1, code_wall_s=1.0)
    with build_scorer(cfg) as scorer:
        first, second = (scorer.score([row], [slow])[0] for _ in range(2))
        assert list(scorer._verdicts.values()) == [None]  # marked: checked every time
    assert first.score == second.score == 0.0
    assert "timed out" in first.reason and "timed out" in second.reason


LUCKY = """
import os, time
seen = []
def dbl(x):
    seen.append(x)
    if x == 10 and seen[:-1] != [0, 1, 2, 3]:
        time.sleep(60)
    if x == 1:
        return 2 if os.getuid() // 2 % 2 else 3
    return 2 * x
"""
"""Right on ``dbl(1)`` only in a sandbox whose uid is odd once halved (a new one per
run, the next in turn: every other run of a worker, a stand-in for chance), and
hanging on ``dbl(10)`` when the loop of the tests stopped early, which tells it that
it failed."""


def test_a_program_that_hangs_when_it_failed_keeps_no_lucky_pass() -> None:
    """``for x in range(4): assert dbl(x) == 2 * x`` then ``assert dbl(10) == 20``,
    scored six times by one scorer (one worker, 1 s limit) with ``LUCKY``: its first
    run is wrong on 1 (the worker's first uid halves to an even number), so the loop
    stops and ``dbl(10)`` hangs; that verdict was not kept, the second run passed and
    was kept, and the other four reused it: 0, 1, 1, 1, 1, 1 (five passes where
    checking each time gives three). A key that once got a verdict not kept is now
    checked every time: 0, 1, 0, 1, 0, 1, what a scorer without kept verdicts gives."""
    row = _row(["for x in range(4):\n    assert dbl(x) == 2 * x", "assert dbl(10) == 20"])
    cfg = RewardsConfig(workers=1, code_wall_s=1.0)
    with build_scorer(cfg) as scorer:
        got = [scorer.score([row], ["```python" + LUCKY + "```"])[0] for _ in range(6)]
    assert [r.score for r in got] == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    assert got[0].reason == "passed 0/2; timed out after 1s"
    assert got[1].reason == "passed 2/2"
