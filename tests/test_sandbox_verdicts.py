"""How the check side reaches a verdict, attacked through the real sandbox
(``check_code``, as a verifier worker calls it): a program that returns the test's own
expected object, a test helper called once per case whose later cases the program
ends, and ``isclose``/``pi`` left to the program's import; and the micro world's code
references, which must still pass."""

from __future__ import annotations

from recipe_arena.data.micro import generate_examples
from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox import Limits
from recipe_arena.rewards.sandbox_split import split_tests
from tests.hostile_tally import record
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

NODE = """
class ListNode:
    def __init__(self, val=0, next=None):
        self.val, self.next = val, next
        MADE.append(self)
MADE = []
"""
REVERSE = (
    NODE
    + """
def reverse_list(h):
    prev = None
    while h:
        h.next, prev, h = prev, h, h.next
    return prev
"""
)
# The test built its expected list first (ListNode(1), ListNode(2, ...), ListNode(3, ...)):
# the cheat hands that very object back without reversing anything.
RETURN_EXPECTED = NODE + "def reverse_list(h):\n    return MADE[2]"
BUILT_EXPECTED = (
    "expected = ListNode(3, ListNode(2, ListNode(1)))",
    "head = ListNode(1, ListNode(2, ListNode(3)))",
    "assert reverse_list(head) == expected",
)
# A name the tests use to compare (``Counter``, left to the program's import) that hands
# back one object whatever it is given: both sides of the comparison are that object.
SAME_COUNTER = "class Counter:\n    pass\nONE = Counter()\ndef Counter(*a):\n    return ONE\n"


@needs_full
def test_returning_the_tests_own_object_does_not_make_it_equal() -> None:
    """Issue example: ``expected = ListNode(3, ListNode(2, ListNode(1)))`` then ``assert
    reverse_list(head) == expected``. The expected list is the program's object (the
    test built it with the program's class), and a handle equalled itself, so a
    ``reverse_list`` that returned the test's ``expected`` node unchanged scored 1,
    where the right one (a new list, equal by its own ``__eq__``, which the check side
    never asks) scored 0. Likewise ``Counter(f(x)) == Counter([...])`` with a program
    ``Counter`` that returns one object for everything. ``==`` on a handle now fails,
    itself included: both cheats score 0. ``is`` still compares identity, so a stack
    that gives back the node pushed scores 1, and the right ``reverse_list`` scores 1
    where the test reads the values."""
    cheats = {
        "return_expected": check_code(list(BUILT_EXPECTED), fenced(RETURN_EXPECTED)),
        "same_counter": check_code(
            ["assert Counter(words('a b a')) == Counter(['a', 'a', 'b'])"],
            fenced(SAME_COUNTER + "def words(s):\n    return 0"),
        ),
    }
    held = [n for n, (score, _) in cheats.items() if score == 0.0]
    record("code sandbox: the test's own object returned", len(cheats), len(held))
    assert len(held) == len(cheats), cheats
    read = [
        *BUILT_EXPECTED[1:2],
        "r = reverse_list(head)",
        "assert (r.val, r.next.val, r.next.next.val, r.next.next.next) == (3, 2, 1, None)",
    ]
    assert check_code(read, fenced(REVERSE)) == (1.0, "passed 1/1")
    stack = (
        "class Stack:\n    def __init__(self): self.xs = []\n"
        "    def push(self, x): self.xs.append(x)\n    def pop(self): return self.xs.pop()\n"
    )
    pushed = ["s = Stack()", "n = ListNode(7)", "s.push(n)", "assert s.pop() is n"]
    assert check_code(pushed, fenced(NODE + stack)) == (1.0, "passed 1/1")


FIRST_ONLY = {  # dbl(1) == 2 is right; every later case ends the call another way
    "raises": "def dbl(x):\n    if x == 1:\n        return 2\n    raise ValueError('no')",
    "exits": "import os\ndef dbl(x):\n    if x == 1:\n        return 2\n    os._exit(0)",
    "non_plain": "def dbl(x):\n    if x == 1:\n        return 2\n    return object()",
}
CALLS = ("t(1, 2)", "t(2, 4)", "t(3, 6)")
HELPERS = {  # a helper whose assert is where the program stops, or after it
    "assert_calls": ("def t(a, b):\n    assert dbl(a) == b", *CALLS),
    "call_then_assert": ("def t(a, b):\n    r = dbl(a)\n    assert r == b", *CALLS),
    "value_in_the_call": ("def t(r, b):\n    assert r == b", "t(dbl(1), 2)", "t(dbl(2), 4)"),
    "method_of_a_test_class": (
        "class C:\n    def eq(self, r, b):\n        assert r == b",
        "C().eq(dbl(1), 2)",
        "C().eq(dbl(2), 4)",
    ),
    "documented_helper": (
        "def t(a, b):\n    '''One case.'''\n    r = dbl(a)\n    assert r + 0 == b",
        *CALLS,
    ),
}


@needs_full
def test_a_helper_called_once_per_case_fails_when_a_later_case_ends_the_program() -> None:
    """Issue example: ``def t(a, b): assert dbl(a) == b`` then ``t(1, 2)``, ``t(2, 4)``,
    ``t(3, 6)``, each call its own top-level statement. A program right on the first
    case that raised (or exited, or returned an object) on the second scored 1.0 under
    both rewards: ``t(1, 2)`` reported the assert passed, and the statements that did
    not finish had run no assert to fail (the program stopped before ``_ra_assert`` was
    reached; in ``t(dbl(2), 4)`` it stops before ``t`` is even entered). A statement
    that does not finish now also fails the asserts of the test functions it called or
    names (a test class's methods too): every such program scores 0, with ``all_pass``
    and with ``pass_fraction``; the right ``dbl`` scores 1 in every form."""
    got = {
        (form, how, all_pass): check_code(list(tests), fenced(FIRST_ONLY[how]), all_pass)[0]
        for form, tests in HELPERS.items()
        for how in FIRST_ONLY
        for all_pass in (True, False)
    }
    held = [k for k, score in got.items() if score == 0.0]
    record("code sandbox: a helper's later cases ended by the program", len(got), len(held))
    assert len(held) == len(got), got
    right = fenced("def dbl(x):\n    return 2 * x")
    assert all(check_code(list(t), right) == (1.0, "passed 1/1") for t in HELPERS.values())


AREA = "assert isclose(area(2), 4 * pi, rel_tol=1e-9)"
LEANING = {  # programs that decide a test leaning on their ``from math import isclose, pi``
    "true_isclose": (
        "from math import pi\ndef isclose(*a, **k):\n    return True\ndef area(r):\n    return 0"
    ),
    "zero_pi": "from math import isclose\npi = 0\ndef area(r):\n    return 0",
    "spy": (
        "import math\nSEEN = []\ndef isclose(*a, **k):\n    SEEN.append(a)\n"
        "    return math.isclose(*a, **k)\npi = math.pi\ndef area(r):\n    return pi * r * r\n"
        "def seen():\n    return SEEN"
    ),
}


@needs_full
def test_isclose_and_pi_left_to_the_programs_import_are_the_standard_librarys() -> None:
    """The open item of earlier rounds: ``assert isclose(area(2), 4 * pi)``, where the
    row left ``from math import isclose, pi`` to the program, let the program decide:
    an ``isclose`` that returns True, or ``pi = 0`` with ``area`` returning 0, scored 1,
    and a spying ``isclose`` received the expected value. The check side now binds
    ``isclose``, ``pi``, ``e``, ``tau``, ``inf`` and ``nan`` itself when the tests read
    another name of the program: both hacks score 0 and the spy sees nothing (its
    ``seen() == []`` holds: 2/2). An honest program scores 1, and a row testing
    ``isclose`` itself (its only program name) still judges the program's: math's
    passes, a wrong one fails."""
    got = {
        n: check_code([AREA, "assert seen() == []"] if n == "spy" else [AREA], fenced(p), False)
        for n, p in LEANING.items()
    }
    held = sum(got[n][0] == 0.0 for n in ("true_isclose", "zero_pi")) + int(got["spy"][0] == 1.0)
    record("code sandbox: isclose and pi left to the program", len(got), held)
    assert held == len(got), got
    honest = "from math import isclose, pi\ndef area(r):\n    return pi * r * r"
    assert check_code([AREA], fenced(honest)) == (1.0, "passed 1/1")
    own = ["assert isclose(1.0, 1.0 + 1e-12)", "assert not isclose(1.0, 2.0)"]
    assert check_code(own, fenced("from math import isclose")) == (1.0, "passed 2/2")
    assert check_code(own, fenced("def isclose(a, b):\n    return True"))[0] == 0.0


@needs_full
def test_micro_world_code_references_still_split_and_pass() -> None:
    """What the check side's rules must not cost: each of 24 micro-world code rows
    (train and heldout) splits with its function as the one program name and no
    check-side name, its reference answer scores 1 through the sandbox, and a body
    returning None scores 0."""
    for split in ("train", "heldout"):
        for ex in generate_examples("code", split, 12, seed=3):
            tests = list(ex.row.ground_truth)
            name = tests[0].removeprefix("assert ").split("(")[0]
            plan = split_tests(tests)
            assert plan["program_names"] == [name] and plan["check_names"] == [], plan
            assert check_code(tests, ex.response) == (1.0, f"passed {len(tests)}/{len(tests)}")
            wrong = fenced(f"def {name}(*a):\n    return None")
            assert check_code(tests, wrong)[0] == 0.0


HANGS = "import time\ndef dbl(x):\n    if x == 1:\n        return 2\n    time.sleep(60)"
"""Right on dbl(1) == 2; every later case never returns (the time limit ends the run)."""


@needs_full
def test_a_helper_whose_later_case_runs_out_of_time_fails() -> None:
    """``def t(a, b): assert dbl(a) == b`` then ``t(1, 2)``, ``t(2, 4)``, ``t(3, 6)``: a
    program right on the first case that sleeps on the second scored 1.0 under both
    rewards ("passed 1/1"), as the one that raised on it did before: ``t(1, 2)``
    reported the helper's assert passed, and the time limit killed the check side
    while ``t(2, 4)`` ran, so nothing failed it. The check side now names the asserts
    a statement may run before it starts, and the verifier fails those of a statement
    that never finished: 0 in every helper form with ``pass_fraction`` (and the first
    with ``all_pass``). A statement that finished keeps its credit (``check(dbl)`` then
    a plain assert that times out: 1 of 2), and the right ``dbl`` scores 1."""
    lim = Limits(wall_s=2.0)
    # each hanging run waits out its 2 s: every form under partial credit (where any
    # assert kept would show), the first also under all_pass
    got = {
        (form, all_pass): check_code(list(tests), fenced(HANGS), all_pass, lim)[0]
        for form, tests in HELPERS.items()
        for all_pass in ((True, False) if form == "assert_calls" else (False,))
    }
    held = [k for k, score in got.items() if score == 0.0]
    record("code sandbox: a helper's later case out of time", len(got), len(held))
    assert len(held) == len(got), got
    finished_first = ["def check(c):\n    assert c(1) == 2", "check(dbl)", "assert dbl(2) == 4"]
    assert check_code(finished_first, fenced(HANGS), False, lim)[0] == 0.5
    right = fenced("def dbl(x):\n    return 2 * x")
    assert all(
        check_code(list(t), right, True, lim) == (1.0, "passed 1/1") for t in HELPERS.values()
    )


IN_CONTAINERS = (  # the expected node inside a container: Python tries identity first
    "assert [reverse_list(head)] == [expected]",
    "assert reverse_list(head) in [expected]",
    "assert (reverse_list(head), 1) == (expected, 1)",
    "assert {'r': reverse_list(head)} == {'r': expected}",
    "assert [expected].count(reverse_list(head)) == 1",
)


@needs_full
def test_the_tests_own_object_inside_a_container_is_not_equal() -> None:
    """The open item of the earlier round: ``[reverse_list(head)] == [expected]`` (or
    ``in [expected]``, a tuple, a dict value, ``.count``) passed the program that
    handed back the test's own ``expected`` node: the check side held one handle per
    program object, and a list compares its items by identity before ``==``. Each
    answer now brings a new handle, so every such form scores 0, and ``is`` asks
    whether two handles name one object: a stack that gives back the node pushed
    scores 1 under ``is`` and ``is not``, and the right ``reverse_list`` scores 1 where
    the test reads the values."""
    got = {
        form: check_code([*BUILT_EXPECTED[:2], form], fenced(RETURN_EXPECTED))[0]
        for form in IN_CONTAINERS
    }
    held = [f for f, score in got.items() if score == 0.0]
    record("code sandbox: the test's own object inside a container", len(got), len(held))
    assert len(held) == len(got), got
    stack = (
        "class Stack:\n    def __init__(self): self.xs = []\n"
        "    def push(self, x): self.xs.append(x)\n    def pop(self): return self.xs.pop()\n"
        "    def top(self): return self.xs[-1]\n"
    )
    pushed = [
        "s = Stack()",
        "n, m = ListNode(7), ListNode(8)",
        "s.push(n)",
        "assert s.top() is n and s.top() is not m",
        "assert s.pop() is n",
    ]
    assert check_code(pushed, fenced(NODE + stack)) == (1.0, "passed 2/2")
    read = [
        BUILT_EXPECTED[1],
        "r = reverse_list(head)",
        "assert [r.val, r.next.val, r.next.next.val] == [3, 2, 1]",
    ]
    assert check_code(read, fenced(REVERSE)) == (1.0, "passed 1/1")


MANY = "def t(a, r):\n" + "    assert r == r\n" * 2000 + "    assert r == 2 * a"
"""A test helper of 2001 asserts: each statement that calls it reports 2001 lines."""


@needs_full
def test_a_report_cut_at_its_size_limit_fails_every_assert() -> None:
    """``t(i, dbl(i))`` for i = 1..200 with a 2001-assert helper: the check side's
    report passed the verifier's 1 MB cap around the 60th statement, so the
    ``R i 0`` lines of the last one, where the program is wrong, were cut and the
    ``R i 1`` lines of the first ones stood: 1.0. The cap is now 4 MB and a report
    that reaches it fails every assert (the right program too, on a row this large);
    the right program scores 1 where its report fits."""
    tests = [MANY, *(f"t({i}, dbl({i}))" for i in range(1, 201))]
    wrong = fenced("def dbl(x):\n    return 0 if x == 200 else 2 * x")
    got = check_code(tests, wrong, True, Limits(wall_s=30.0))
    record("code sandbox: a report cut at its size limit", 1, int(got[0] == 0.0))
    assert got[0] == 0.0 and "report longer than" in got[1], got
    right = fenced("def dbl(x):\n    return 2 * x")
    assert check_code(tests[:21], right, True, Limits(wall_s=30.0)) == (1.0, "passed 2001/2001")


# Right on dbl(1) only; ``ok`` hands back an object whose truth raises ValueError.
BOOL_RAISES = (
    "class B:\n    def __bool__(self):\n        raise ValueError('no')\n"
    "def ok(x):\n    return B()\n"
    "def dbl(a):\n    return 2 if a == 1 else 0"
)
CAUGHT = (
    "def t(a, b):\n    assert dbl(a) == b",
    "t(1, 2)",
    "try:\n    assert ok(1)\nexcept ValueError:\n    pass",
    "t(2, 4)",
)


@needs_full
def test_an_assert_whose_truth_raises_is_failed_and_the_tests_go_on() -> None:
    """``t(1, 2)`` passes the helper's assert; then ``try: assert ok(1)`` ``except
    ValueError: pass`` with an ``ok`` whose value's ``__bool__`` raises: the assert was
    counted as run but got no outcome, so reporting it raised KeyError and ended the
    check side before ``t(2, 4)`` could fail the helper's assert, which stood (0.5 for
    a ``dbl`` wrong on 2). An assert whose truth raises now counts as failed, and the
    tests go on: 0."""
    got = check_code(list(CAUGHT), fenced(BOOL_RAISES), all_pass=False)
    record("code sandbox: an assert whose truth raises", 1, int(got[0] == 0.0))
    assert got == (0.0, "passed 0/2"), got
    right = BOOL_RAISES.replace("2 if a == 1 else 0", "2 * a").replace(
        "raise ValueError('no')", "return True"
    )
    assert check_code(list(CAUGHT), fenced(right)) == (1.0, "passed 2/2")
