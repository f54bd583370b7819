"""A run the time limit cuts short between two calls of a test helper, attacked through
the real sandbox (``check_code``, as a verifier worker calls it): the program is right
on the first case and never returns from a statement that names no assert, so the
statements that would call the helper again never run."""

from __future__ import annotations

from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox import Limits
from recipe_arena.rewards.sandbox_split import split_tests
from tests.hostile_tally import record, record_all_scored_0
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

T = "def t(r, b):\n    assert r == b"
CUT = {  # the statement that never returns names no assert; a later one calls t again
    "setup": (T, "t(dbl(1), 2)", "r = dbl(2)", "t(r, 4)"),
    "bare_call": (T, "t(dbl(1), 2)", "dbl(2)", "t(dbl(2), 4)"),
    "printed": (T, "t(dbl(1), 2)", "print(dbl(2))", "t(dbl(3), 6)"),
    "alias_later": (T, "t(dbl(1), 2)", "x = dbl(2)", "u = t", "u(x, 4)"),
}
HANGS = "import time\ndef dbl(x):\n    if x == 1:\n        return 2\n    time.sleep(60)"
RIGHT = "def dbl(x):\n    return 2 * x"


@needs_full
def test_a_run_cut_before_a_helpers_later_call_fails_its_asserts() -> None:
    """``def t(r, b): assert r == b``, ``t(dbl(1), 2)``, ``r = dbl(2)``, ``t(r, 4)``
    with a ``dbl`` right on 1 that sleeps on 2: it scored 1.0 ("passed 1/1") under
    ``all_pass``, since ``t(dbl(1), 2)`` reported ``t``'s assert passed, ``r =
    dbl(2)`` names no assert (nothing to fail when the 2 s limit cut it), and ``t(r,
    4)`` never ran. Likewise for a bare ``dbl(2)``, a ``print(dbl(2))``, and a helper
    called later through a variable (``u = t``). An assert inside a test function
    now counts only when the run reaches its end or no statement left could call it
    again: 0.0 ("passed 0/1") under both rewards. The right ``dbl`` still scores 1, and
    a run cut in a last statement that calls no helper keeps the helper's credit:
    ``check(dbl)`` then ``assert dbl(2) == 4`` cut short is 1 of 2 (0.5)."""
    lim = Limits(wall_s=2.0)  # each run waits out its 2 s
    got = {
        (k, all_pass): check_code(list(t), fenced(HANGS), all_pass, lim)
        for k, t in CUT.items()
        for all_pass in ((True, False) if k == "setup" else (True,))
    }
    record_all_scored_0("code sandbox: a run cut before a helper's later call", got)
    assert got["setup", True] == (0.0, "passed 0/1; timed out after 2s")
    for name, tests in CUT.items():
        assert check_code(list(tests), fenced(RIGHT)) == (1.0, "passed 1/1"), name
    finished = ["def check(c):\n    assert c(1) == 2", "check(dbl)", "assert dbl(2) == 4"]
    assert check_code(finished, fenced(HANGS), False, lim)[0] == 0.5
    assert split_tests(finished)["settled"] == [[], [], [0]]
    assert split_tests(list(CUT["setup"]))["settled"] == [[], [], [], []]


@needs_full
def test_a_run_cut_before_a_call_by_a_computed_name_fails_the_helper() -> None:
    """``t(dbl(1), 2)``, ``dbl(2)`` (never returns), then ``globals()['t'](dbl(2),
    4)``: the last statement names neither ``t`` nor a variable, so ``t``'s assert was
    listed as one no statement left could run (``K``) before the cut, and the
    ``R 0 1`` of the first call stood: 1.0 ("passed 1/1") under ``all_pass``. A
    statement reading ``globals``, ``eval``, ``getattr`` and the like now keeps every
    helper's asserts pending: 0.0 ("passed 0/1"), and no ``K`` is planned."""
    tests = [T, "t(dbl(1), 2)", "dbl(2)", "globals()['t'](dbl(2), 4)"]
    got = check_code(tests, fenced(HANGS), True, Limits(wall_s=2.0))
    record("code sandbox: a run cut before a call by a computed name", 1, int(got[0] == 0.0))
    assert got == (0.0, "passed 0/1; timed out after 2s")
    assert split_tests(tests)["settled"] == [[], [], [], []]
    assert check_code(tests, fenced(RIGHT)) == (1.0, "passed 1/1")


@needs_full
def test_a_helper_held_by_a_variable_fails_when_an_object_stalls_the_run() -> None:
    """``u = t``, ``u(1, 2)`` (passes), ``p = eval(make(1))`` (an object of a class a
    string of the program's made, whose every attribute lookup never returns), then
    ``u(2, 4 if p else 4)`` with ``dbl(2)`` wrong: looking into ``p`` for the test
    functions the statement reaches stalled the check side to the 3 s limit before
    ``t``'s assert was named, and the ``R 0 1`` of ``u(1, 2)`` stood: 1.0 ("passed
    1/1"), listed as not covered. The run never reached its end and the statement
    reads variables, so ``t``'s assert is not kept: 0.0 ("passed 0/1")."""
    made = (
        "type('A', (), {'__getattribute__': lambda s, n: any(x is None for x in iter(int, 1))})()"
    )
    program = f"def make(x):\n    return {made!r}\ndef dbl(a):\n    return 2 if a == 1 else 0"
    tests = ["def t(a, b):\n    assert dbl(a) == b", "u = t", "u(1, 2)", "p = eval(make(1))"]
    got = check_code([*tests, "u(2, 4 if p else 4)"], fenced(program), True, Limits(wall_s=3.0))
    record("code sandbox: a helper held by a variable, the run stalled", 1, int(got[0] == 0.0))
    assert got == (0.0, "passed 0/1; timed out after 3s")
