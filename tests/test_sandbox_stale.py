"""A setup statement that does not finish leaves the tests' variables as they were,
attacked through the real sandbox (``check_code``, as a verifier worker calls it): the
program is right on its first call and raises on every later one, so the later setup
statements fail without holding an assert, and the asserts after them judge the value
the first call left."""

from __future__ import annotations

from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox_split import split_tests
from tests.hostile_tally import record_all_scored_0
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

ONCE = """
calls = 0
def srt(xs):
    global calls
    calls += 1
    if calls > 1:
        raise ValueError("no")
    return [1, 2, 3]
"""
"""Right on the first call of each test below (``[1, 2, 3]``), raising on every later
one: a wrong ``srt``."""
LATER_WRONG = ONCE.replace('raise ValueError("no")', "return [3, 2, 1]")
"""Right on the first call, wrong (not raising) on every later one."""
RIGHT = "def srt(xs):\n    return sorted(xs)"
STALE = {  # each later assert holds for the value the first call left
    "rebound": ("r = srt([3, 1, 2])", "assert r == [1, 2, 3]", "r = srt([2, 3, 1])",
                "assert r == [1, 2, 3]"),
    "added_to": ("n = len(srt([3, 1, 2]))", "n += len(srt([]))", "assert n == 3"),
    "item_of": ("d = {'a': srt([3, 1, 2])}", "d['a'] = srt([2, 3, 1])",
                "assert d['a'] == [1, 2, 3]"),
    "appended_to": ("out = [srt([3, 1, 2])]", "out.extend(srt([]))",
                    "assert out == [[1, 2, 3]]"),
    "loop_variable": ("for r in [srt([3, 1, 2])]:\n    pass", "for r in [srt([2, 3, 1])]:\n"
                      "    pass", "assert r == [1, 2, 3]"),
}  # fmt: skip
UNASSERTED = {  # checks written without assert, which the first call passes
    "raise_assertion": ("assert srt([3, 1, 2]) == [1, 2, 3]",
                        "if srt([2, 3, 1]) != [1, 2, 3]:\n    raise AssertionError"),
    "raise_exception": ("assert srt([3, 1, 2]) == [1, 2, 3]",
                        "r = srt([2, 3, 1])\nif r != [1, 2, 3]:\n    raise Exception('no')"),
}  # fmt: skip


@needs_full
def test_a_statement_holding_no_assert_that_raises_fails_the_tests() -> None:
    """``r = srt([3, 1, 2])``, ``assert r == [1, 2, 3]``, ``r = srt([2, 3, 1])``,
    ``assert r == [1, 2, 3]`` with ``srt`` answering ``[1, 2, 3]`` once and raising
    after: the third statement holds no assert, so its ``ValueError`` failed nothing,
    ``r`` kept the first answer and both asserts passed: 1.0 ("passed 2/2"), where
    plain Python stops at the raise. Likewise ``n += ...``, an item ``d['a'] = ...``,
    ``out.extend(...)`` and a loop variable left as the first call made them (1.0,
    "passed 1/1"), and checks the tests write without ``assert`` (``if srt(...) !=
    [1, 2, 3]: raise AssertionError``, or ``raise Exception``) that a program right
    only on its first call failed (1.0). A statement that holds no assert and
    raises now fails every assert, as plain Python's run fails there: 0.0 each, and a
    right ``srt`` scores 1."""
    got = {k: check_code(list(t), fenced(ONCE)) for k, t in STALE.items()}
    got |= {k: check_code(list(t), fenced(LATER_WRONG)) for k, t in UNASSERTED.items()}
    record_all_scored_0("code sandbox: a statement holding no assert that raises", got)
    assert got["rebound"] == (0.0, "passed 0/2; test raised ValueError: no")
    for name in ("added_to", "item_of", "appended_to", "loop_variable"):
        assert got[name] == (0.0, "passed 0/1; test raised ValueError: no"), name
    assert got["raise_assertion"] == (0.0, "passed 0/1; test raised AssertionError: ")
    assert got["raise_exception"] == (0.0, "passed 0/1; test raised Exception: no")
    for name, tests in (STALE | UNASSERTED).items():
        assert check_code(list(tests), fenced(RIGHT)) == (
            1.0,
            f"passed {len(tests) // 2}/{len(tests) // 2}",
        ), name


@needs_full
def test_a_later_assert_never_judges_what_a_failed_statement_left() -> None:
    """Under ``pass_fraction``: ``for xs in [[3, 1, 2], [2, 3, 1]]: r = srt(xs);
    assert len(r) == 3`` then ``assert r == [1, 2, 3]``, with ``srt`` answering ``[1,
    2, 3]`` once and raising after: the loop's assert failed on its second case and
    ``r`` kept the first answer, so the second assert passed: 0.5 ("passed 1/2"). The
    check side now unbinds the variables a statement that does not finish assigns, so
    that assert raises ``NameError``: 0.0 ("passed 0/2"); a right ``srt`` scores 1."""
    tests = ["for xs in [[3, 1, 2], [2, 3, 1]]:\n    r = srt(xs)\n    assert len(r) == 3",
             "assert r == [1, 2, 3]"]  # fmt: skip
    got = check_code(tests, fenced(ONCE), False)
    record_all_scored_0("code sandbox: a variable a failed statement left", {"loop": got})
    assert got == (0.0, "passed 0/2; test raised ValueError: no")
    assert check_code(tests, fenced(RIGHT), False) == (1.0, "passed 2/2")


def test_the_variables_a_statement_may_leave_half_made() -> None:
    """What ``split_tests`` plans to unbind per statement (``stale``): what it assigns,
    the variable under an item or attribute it assigns, and, but for an assert, the
    variables it reads (an assert's own failure already counts); never a test function
    or an import, nor a name bound only inside a test function."""
    tests = [
        "import math",
        "def t(a, b):\n    x = a\n    assert x == b",
        "cases = [(1, 2)]",
        "for x, y in cases:\n    t(f(x), y)",
        "d = {}",
        "d['k'][0] = f(1)",
        "assert f(cases[0][0]) == d",
        "assert (w := f(1)) == 2",
        "math.isclose(f(1), 2.0)",
    ]
    assert split_tests(tests)["stale"] == [
        [], [], ["cases"], ["cases", "x", "y"], ["d"], ["d"], [], ["w"], []
    ]  # fmt: skip
