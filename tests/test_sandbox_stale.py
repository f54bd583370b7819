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


@needs_full
def test_a_later_assert_never_judges_what_a_failed_statement_left() -> None:
    """``r = srt([3, 1, 2])``, ``assert r == [1, 2, 3]``, ``r = srt([2, 3, 1])``,
    ``assert r == [1, 2, 3]`` with ``srt`` answering ``[1, 2, 3]`` once and raising
    after: the third statement holds no assert, so its ``ValueError`` failed nothing,
    ``r`` kept the first answer and both asserts passed: 1.0 ("passed 2/2"), where
    plain Python stops at the raise. Likewise ``n += ...``, an item ``d['a'] = ...``,
    ``out.extend(...)`` and a loop variable left as the first call made them (1.0,
    "passed 1/1"). The check side now unbinds the variables a statement that does not
    finish assigns or reads, so the assert reading one raises ``NameError``: 0.0 each,
    the first ``assert r == ...`` still passed ("passed 1/2"), the others "passed
    0/1", and a right ``srt`` scores 1."""
    got = {k: check_code(list(t), fenced(ONCE)) for k, t in STALE.items()}
    record_all_scored_0("code sandbox: a variable a failed statement left", got)
    assert got["rebound"] == (0.0, "passed 1/2; test raised ValueError: no")
    for name in ("added_to", "item_of", "appended_to", "loop_variable"):
        assert got[name] == (0.0, "passed 0/1; test raised ValueError: no"), name
    for name, tests in STALE.items():
        assert check_code(list(tests), fenced(RIGHT))[0] == 1.0, name


def test_the_variables_a_statement_may_leave_half_made() -> None:
    """What ``split_tests`` plans to unbind per statement (``stale``): what it assigns,
    the variable under an item or attribute it assigns, and, but for an assert, the
    variables it reads where it could change them: the object of a method call
    (``out.extend``), a call's argument (``fill(out)``), the variable under either
    (``cases[0].pop()``). A loop over ``cases`` or an index into it changes nothing, so
    ``cases`` stays bound (an implementation unbinding every name read would list it
    there). Never a test function or an import, nor a name bound only inside a test
    function."""
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
        "out = []",
        "out.extend(f(2))",
        "cases[0].pop()",
        "fill(out)",
        "for a, b in cases:\n    assert f(a) == b",
    ]
    assert split_tests(tests)["stale"] == [
        [], [], ["cases"], ["x", "y"], ["d"], ["d"], [], ["w"], [], ["out"], ["out"],
        ["cases"], ["out"], ["a", "b"],
    ]  # fmt: skip


@needs_full
def test_a_case_list_a_failed_loop_only_read_keeps_its_later_credit() -> None:
    """Under ``pass_fraction``, ``cases = [(1, 2), (3, 6)]``, ``for a, b in cases:
    assert f(a) == b``, ``assert f(cases[0][0]) == 2``, ``assert f(5) == 10`` with an
    ``f`` wrong only on 3: the loop fails its assert and stops, but only read
    ``cases``, so the second assert still reads it and passes, as does the third:
    "passed 2/3", 2/3. Unbinding every name the loop read made the second assert raise
    ``NameError``: 1/3."""
    tests = ["cases = [(1, 2), (3, 6)]", "for a, b in cases:\n    assert f(a) == b",
             "assert f(cases[0][0]) == 2", "assert f(5) == 10"]  # fmt: skip
    wrong_on_3 = "def f(x):\n    return 0 if x == 3 else 2 * x"
    score, reason = check_code(tests, fenced(wrong_on_3), all_pass=False)
    assert (score, reason.split(";")[0]) == (2 / 3, "passed 2/3")
