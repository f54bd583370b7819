"""A test helper called once per case and reached through a variable, attacked through
the real sandbox (``check_code``, as a verifier worker calls it): the program is right
on the first case and raises or hangs on the next, before the helper is entered."""

from __future__ import annotations

from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox import Limits
from recipe_arena.rewards.sandbox_split import split_tests
from tests.hostile_tally import record, record_all_scored_0
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

T = "def t(r, b):\n    assert r == b"
REACHED = {  # the helper's name is not in the statement that calls it
    "alias": (T, "u = t", "u(dbl(1), 2)", "u(dbl(2), 4)"),
    "defined_in_an_if": ("if True:\n    def t(r, b):\n        assert r == b", "t(dbl(1), 2)", "t(dbl(2), 4)"),
    "defined_in_a_try": (
        "try:\n    def t(r, b):\n        assert r == b\nexcept Exception:\n    pass",
        "t(dbl(1), 2)",
        "t(dbl(2), 4)",
    ),
    "dict_of_checks": (T, "checks = {'eq': t}", "checks['eq'](dbl(1), 2)", "checks['eq'](dbl(2), 4)"),
    "instance_method": (
        "class C:\n    def eq(self, r, b):\n        assert r == b",
        "c = C()",
        "c.eq(dbl(1), 2)",
        "c.eq(dbl(2), 4)",
    ),
    "bound_method": (
        "class C:\n    def eq(self, r, b):\n        assert r == b",
        "eq = C().eq",
        "eq(dbl(1), 2)",
        "eq(dbl(2), 4)",
    ),
    "partial": ("from functools import partial", T, "u = partial(t)", "u(dbl(1), 2)", "u(dbl(2), 4)"),
    "lambda": (T, "u = lambda r, b: t(r, b)", "u(dbl(1), 2)", "u(dbl(2), 4)"),
    "namespace": ("import types", T, "ns = types.SimpleNamespace(t=t)", "ns.t(dbl(1), 2)", "ns.t(dbl(2), 4)"),
}  # fmt: skip
RAISES = "def dbl(x):\n    if x == 1:\n        return 2\n    raise ValueError('no')"
HANGS = "import time\ndef dbl(x):\n    if x == 1:\n        return 2\n    time.sleep(60)"
RIGHT = "def dbl(x):\n    return 2 * x"


@needs_full
def test_a_helper_reached_through_a_variable_fails_when_a_later_case_fails() -> None:
    """``def t(r, b): assert r == b``, ``u = t``, then ``u(dbl(1), 2)`` and ``u(dbl(2),
    4)``: a program right on the first case that raised on the second scored 1.0 under
    both rewards. The second statement fails before ``t`` is entered, and it names no
    test function (``u`` is a variable), so nothing failed the ``R i 1`` of the first.
    Likewise for a helper defined inside an ``if`` or a ``try``, held in a dict, a
    ``partial``, a lambda or a ``SimpleNamespace``, or a method of a test class called on an instance or bound
    to a name; and for a program
    that hangs on the second case instead (the time limit ends the run). A statement
    that does not finish now also fails the asserts of the test functions its variables
    hold (``sandbox_harness.reached``): each such program scores 0, the right one 1."""
    raises = {k: check_code(list(t), fenced(RAISES), False)[0] for k, t in REACHED.items()}
    lim = Limits(wall_s=2.0)  # each hanging run waits out its 2 s
    hangs = {
        k: check_code(list(REACHED[k]), fenced(HANGS), False, lim)[0]
        for k in ("alias", "instance_method")
    }
    got = {
        **{("raises", k): s for k, s in raises.items()},
        **{("hangs", k): s for k, s in hangs.items()},
    }
    record_all_scored_0("code sandbox: a helper reached through a variable", got)
    for name, tests in REACHED.items():
        assert check_code(list(tests), fenced(RIGHT)) == (1.0, "passed 1/1"), name
    plan = split_tests(list(REACHED["alias"]))
    assert plan["reads"][1:] == [["t"], ["u"], ["u"]]
    assert plan["stmts"][0][0].startswith("@_ra_mark(0, 1)\ndef t(r, b):")


GEN = "def gen():\n    for x, y in [(1, 2), (2, 4)]:\n        assert dbl(x) == y\n        yield"
RESUMED = {  # a generator of a test function, resumed by a later statement
    "next": (GEN, "g = gen()", "next(g)", "next(g)"),
    "for_loop": (GEN, "g = gen()", "next(g)", "for _ in g:\n    pass"),
}


@needs_full
def test_a_test_generator_resumed_later_fails_when_its_next_case_fails() -> None:
    """``def gen()`` holding ``assert dbl(x) == y`` for two cases and a ``yield``;
    ``g = gen()``, ``next(g)``, ``next(g)``: a program right on the first case that
    raised on the second scored 1.0. The second ``next(g)`` resumes the generator past
    its start, where the function named its asserts, and reads only ``g``, a generator
    that ``reached`` did not look into: the first ``R i 1`` stood. A generator of a
    test function now counts as that function: each such program (raising, or hanging
    to the time limit) scores 0, the right one 1."""
    lim = Limits(wall_s=2.0)
    got = {}
    for name, tests in RESUMED.items():
        got["raises", name] = check_code(list(tests), fenced(RAISES), False)[0]
        got["hangs", name] = check_code(list(tests), fenced(HANGS), False, lim)[0]
    record_all_scored_0("code sandbox: a test generator resumed later", got)
    for name, tests in RESUMED.items():
        assert check_code(list(tests), fenced(RIGHT)) == (1.0, "passed 1/1"), name


LAZY = {  # a lazy iterator of the tests that calls the helper, resumed by a later statement
    "generator_expression": (T, "g = (t(dbl(x), 2 * x) for x in [1, 2])", "next(g)", "next(g)"),
    "map": (T, "m = map(lambda x: t(dbl(x), 2 * x), [1, 2])", "next(m)", "next(m)"),
    "starmap": (
        "import itertools",
        T,
        "m = itertools.starmap(lambda x: t(dbl(x), 2 * x), [(1,), (2,)])",
        "next(m)",
        "next(m)",
    ),
    "iter_of_a_callable": (
        T,
        "xs = iter([1, 2])",
        "c = iter(lambda: (lambda x: t(dbl(x), 2 * x))(next(xs)), 0)",
        "next(c)",
        "next(c)",
    ),
}


@needs_full
def test_a_lazy_iterator_resumed_later_fails_when_its_next_case_fails() -> None:
    """``g = (t(dbl(x), 2 * x) for x in [1, 2])`` (or a ``map``, an itertools
    ``starmap`` or an ``iter(f, sentinel)`` of a lambda calling ``t``), then ``next(g)``
    twice: a program right on
    the first case that raised on the second scored 1.0, since the second ``next``
    fails before ``t`` is entered and reads only ``g``, which ``reached`` did not look
    into. A generator now counts as the names its code reads and the values its frame
    holds, and a lazy builtin iterator as what it holds: each scores 0, the right
    program 1."""
    got = {k: check_code(list(t), fenced(RAISES), False)[0] for k, t in LAZY.items()}
    record_all_scored_0("code sandbox: a lazy iterator resumed later", got)
    for name, tests in LAZY.items():
        assert check_code(list(tests), fenced(RIGHT)) == (1.0, "passed 1/1"), name


HELD = {  # the helper held in a container that is not a plain list, tuple, set or dict
    "deque": ("from collections import deque", "c = deque([t])", "c[0](dbl(1), 2)", "c[0](dbl(2), 4)"),
    "ordered_dict": ("from collections import OrderedDict", "c = OrderedDict(eq=t)", "c['eq'](dbl(1), 2)", "c['eq'](dbl(2), 4)"),
    "namedtuple": ("from collections import namedtuple", "c = namedtuple('C', 'eq')(t)", "c.eq(dbl(1), 2)", "c.eq(dbl(2), 4)"),
}  # fmt: skip


@needs_full
def test_a_helper_held_in_a_deque_or_namedtuple_fails_when_a_later_case_fails() -> None:
    """``c = deque([t])`` (or an ``OrderedDict``, a namedtuple), then ``c[0](dbl(1),
    2)`` and ``c[0](dbl(2), 4)``: a program right on the first case that raised on the
    second scored 1.0, since ``reached`` looked into exact lists, tuples, sets and
    dicts only. Subclasses of those and a ``deque`` are now looked into: 0, and the
    right program 1."""
    got = {k: check_code([T, *t], fenced(RAISES), False)[0] for k, t in HELD.items()}
    record_all_scored_0("code sandbox: a helper held in another container", got)
    for name, tests in HELD.items():
        assert check_code([T, *tests], fenced(RIGHT)) == (1.0, "passed 1/1"), name


@needs_full
def test_a_helper_held_as_a_lambdas_default_fails_when_a_later_case_fails() -> None:
    """``u = lambda r, b, f=t: f(r, b)``, then ``u(dbl(1), 2)`` and ``u(dbl(2), 4)``:
    a program right on the first case that raised on the second scored 1.0, since
    ``reached`` looked into a lambda's closure and the names its code reads but not
    its default values, where ``t`` was. Defaults are now looked into: 0, the right
    program 1."""
    tests = [T, "u = lambda r, b, f=t: f(r, b)", "u(dbl(1), 2)", "u(dbl(2), 4)"]
    got = check_code(tests, fenced(RAISES), False)[0]
    record("code sandbox: a helper held as a lambda's default", 1, int(got == 0.0))
    assert got == 0.0
    assert check_code(tests, fenced(RIGHT)) == (1.0, "passed 1/1")


COMPUTED = {  # the helper reached by a name the statement computes
    "globals": (T, "t(dbl(1), 2)", "globals()['t'](dbl(2), 4)"),
    "eval": (T, "t(dbl(1), 2)", "eval('t')(dbl(2), 4)"),
}


@needs_full
def test_a_helper_reached_by_a_computed_name_fails_when_a_later_case_fails() -> None:
    """``t(dbl(1), 2)`` then ``globals()['t'](dbl(2), 4)`` (or ``eval('t')(...)``) with
    a ``dbl`` that raises on 2: the second statement names neither ``t`` nor a
    variable holding it, so nothing failed the ``R 0 1`` of the first: 1.0 ("passed
    1/1"), listed as not covered. A statement reading ``globals``, ``eval``,
    ``getattr`` and the like now has every name of the tests looked into for the
    test functions it may reach (``sandbox_split.BY_NAME``): 0.0, the right program
    1.0."""
    got = {k: check_code(list(t), fenced(RAISES), True) for k, t in COMPUTED.items()}
    record_all_scored_0("code sandbox: a helper reached by a computed name", got)
    for name, tests in COMPUTED.items():
        assert check_code(list(tests), fenced(RIGHT)) == (1.0, "passed 1/1"), name
    assert split_tests(list(COMPUTED["globals"]))["reads"] == [["b", "r"], ["t"], ["b", "r", "t"]]
