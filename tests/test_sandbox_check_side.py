"""Attacks on how the check side counts and resolves, through the real sandbox
(``check_code``, as a verifier worker calls it): a loop whose first case passes and
whose later cases raise, tests that lean on the program's ``import math``, verdict
lines smuggled into a note, and the check side's /proc entries."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox_split import split_tests
from tests.hostile_tally import record
from tests.sandbox_attack_base import ADD, fenced
from tests.test_sandbox import needs_full

CASES = "cases = [(1, 2), (2, 4), (3, 6)]"
# dbl(1) == 2 is right; every later case ends the call another way.
FIRST_ONLY = {
    "raises": "def dbl(x):\n    if x == 1:\n        return 2\n    raise ValueError('no')",
    "exits": "import os\ndef dbl(x):\n    if x == 1:\n        return 2\n    os._exit(0)",
    "non_plain": "def dbl(x):\n    if x == 1:\n        return 2\n    return object()",
    "key_error": "def dbl(x):\n    if x == 1:\n        return 2\n    raise KeyError(x)",
}
LOOPS = {  # test form -> the way dbl stops answering after the first case
    "for_assert": ((CASES, "for x, y in cases:\n    assert dbl(x) == y"), "raises"),
    "for_call_then_assert": (
        (CASES, "for x, y in cases:\n    r = dbl(x)\n    assert r == y"),
        "exits",
    ),
    "helper_loop": (
        (CASES, "def check(c):\n    for x, y in cases:\n        assert c(x) == y", "check(dbl)"),
        "non_plain",
    ),
    "while_pop": (
        (CASES, "while cases:\n    x, y = cases.pop(0)\n    assert dbl(x) == y"),
        "key_error",
    ),
}


@needs_full
def test_a_loop_whose_later_cases_raise_fails_its_assert() -> None:
    """Issue example: ``for x, y in cases: assert dbl(x) == y`` with three cases scored
    1.0 for a program right on the first case only that raised (or exited, or returned
    an object) on the second: the assert had passed once, and the statement that ended
    early never marked it failed. Each loop form here, with a program that stops
    answering in its own way after case 1, scores 0 (1 assert, 0 passed); the right
    program (dbl(x) = 2x) scores 1 on every form."""
    got = {
        name: check_code(list(tests), fenced(FIRST_ONLY[how]))
        for name, (tests, how) in LOOPS.items()
    }
    solved = {
        name: check_code(list(tests), fenced("def dbl(x):\n    return 2 * x"))
        for name, (tests, _) in LOOPS.items()
    }
    held = [n for n, (score, _) in got.items() if score == 0.0]
    record("code sandbox: loops ended early by the program", len(got), len(held))
    assert len(held) == len(got), got
    assert all(score == 1.0 for score, _ in solved.values()), solved


@needs_full
def test_a_failed_case_does_not_leave_another_assert_of_the_loop_passed() -> None:
    """Two asserts in one loop, both right on case 1 only: at case 2 the first fails,
    so the second never meets cases 2 and 3. Under pass_fraction it counted as passed
    (1/2); now the loop that did not finish fails both: 0/2. Two asserts each at top
    level keep their own verdicts: add right, sub wrong gives 1/2."""
    prog = "def dbl(x):\n    return 2 if x == 1 else 0\ndef half(y):\n    return 1 if y == 2 else 0"
    loop = [CASES, "for x, y in cases:\n    assert dbl(x) == y\n    assert half(y) == x"]
    score, reason = check_code(loop, fenced(prog), all_pass=False)
    assert score == 0.0, reason
    flat = ["assert add(2, 3) == 5", "assert sub(3, 1) == 2"]
    two = "def add(a, b):\n    return a + b\ndef sub(a, b):\n    return a + b"
    assert check_code(flat, fenced(two), all_pass=False) == (0.5, "passed 1/2")


ISCLOSE = "assert math.isclose(area(2), 12.566370614359172, rel_tol=1e-9)"
MATH_HACKS = {
    "patched_module": "import math\nmath.isclose = lambda *a, **k: True\ndef area(r):\n    return 0",
    "class_named_math": (
        "class math:\n    isclose = staticmethod(lambda *a, **k: True)\ndef area(r):\n    return 0"
    ),
}
SPY = """
import math
SEEN = []
_isclose = math.isclose
def _spy(*a, **k):
    SEEN.append(a)
    return _isclose(*a, **k)
math.isclose = _spy
def area(r):
    return math.pi * r * r
def seen():
    return SEEN
"""


def test_standard_modules_the_tests_only_read_attributes_of_are_the_check_sides() -> None:
    """``math`` read only as ``math.isclose`` and never imported by the tests is a
    standard module the check side imports itself (``modules``), not a program name;
    ``trace`` called directly stays the program's, and ``math`` passed whole to a call
    stays the program's too (it is not only an attribute's base)."""
    plan = split_tests([ISCLOSE, "assert trace([[1]]) == 1"])
    assert plan["modules"] == ["math"] and plan["program_names"] == ["area", "trace"]
    plan = split_tests(["import math", ISCLOSE])
    assert plan["modules"] == [] and plan["program_names"] == ["area"]
    plan = split_tests(["assert f(math) == math.pi"])
    assert plan["modules"] == [] and plan["program_names"] == ["f", "math"]


@needs_full
def test_tests_that_lean_on_the_programs_import_of_math_are_not_the_programs() -> None:
    """Issue example: a row whose tests use ``math.isclose`` without importing math
    (the program's ``import math`` was meant to supply it) let the program decide the
    comparison: a program that set ``math.isclose = lambda *a, **k: True``, or defined
    a class ``math``, scored 1 with ``area`` returning 0; and a program that wrapped
    ``math.isclose`` received the expected value 12.566... in its arguments. Now both
    hacks score 0, the spy sees no call (its ``seen() == []`` holds: 2/2), and an
    honest program that imports math scores 1."""
    got = {n: check_code([ISCLOSE], fenced(p)) for n, p in MATH_HACKS.items()}
    held = sum(score == 0.0 for score, _ in got.values())
    spied = check_code([ISCLOSE, "assert seen() == []"], fenced(SPY), all_pass=False)
    record("code sandbox: tests leaning on the program's modules", len(got) + 1,
           held + int(spied[0] == 1.0))  # fmt: skip
    assert held == len(got), got
    assert spied == (1.0, "passed 2/2"), spied
    honest = "import math\ndef area(r):\n    return math.pi * r * r"
    assert check_code([ISCLOSE], fenced(honest)) == (1.0, "passed 1/1")


FORGED = "x\nR 0 1\nR 1 1\nR 2 1\u2028R 0 1\x85R 1 1\rR 2 1\x1cT 1\x0bR 0 1"


@needs_full
@pytest.mark.parametrize(
    "program",
    [
        f"def add(a, b):\n    raise ValueError({FORGED!r})",  # the note quotes the message
        f"T = type({FORGED.replace(chr(0x2028), ' ')!r}, (), {{}})\ndef add(a, b):\n"
        "    return T()",  # the note names the returned type
    ],
    ids=["exception_message", "type_name"],
)
def test_verdict_lines_inside_a_note_stay_one_line(program: str) -> None:
    """The program's exception message or its class name reaches the verifier inside
    the check side's ``N`` note. Verdict lines hidden in it behind every line break
    ``str.splitlines`` knows (LF, CR, VT, FS, NEL, U+2028) are printed as spaces, so
    none is read as a verdict: 0 of 3, and the reason is one printable line."""
    score, reason = check_code(ADD, fenced(program), all_pass=False)
    ok = score == 0.0 and reason.startswith("passed 0/3; ") and reason.isprintable()
    record("code sandbox: verdict lines in a note", 1, int(ok))
    assert ok, reason


@needs_full
def test_the_check_sides_proc_entries_are_closed_to_the_program() -> None:
    """The program lists every other process of the sandbox (bubblewrap's init and the
    check side) and tries the /proc entries that would show a descriptor, the
    environment, memory or the stack: its descriptors and their positions, environ,
    cwd, root, exe, io, syscall, stack, auxv, map_files, pagemap, mem. None opens."""
    prog = """
import os
NAMES = ('fd', 'fdinfo', 'environ', 'cwd', 'root', 'exe', 'io', 'syscall', 'stack',
         'auxv', 'map_files', 'pagemap', 'mem', 'fd/0', 'fd/1', 'fd/3', 'fdinfo/1')
def opened():
    out = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        for name in NAMES:
            p = f'/proc/{pid}/{name}'
            for how in (os.listdir, os.readlink, lambda q: open(q, 'rb').read(1)):
                try:
                    how(p)
                    out.append(p)
                except (OSError, ValueError):
                    pass
    return out
def others():
    return sum(p.isdigit() and int(p) != os.getpid() for p in os.listdir('/proc'))
"""
    score, reason = check_code(["assert others() == 2", "assert opened() == []"], fenced(prog))
    record("code sandbox: check side's /proc entries", 1, int(score == 1.0))
    assert score == 1.0, reason


@needs_full
def test_stdin_stdout_pairs_do_not_share_tmp() -> None:
    """A stdin/stdout program that counts the files in /tmp, leaves one behind and prints
    the count: each pair runs in a fresh sandbox, so every pair prints 0 (3 of 3 pass
    expecting 0); an answer left in /tmp by one pair is never there for the next."""
    prog = (
        "import os, uuid\nn = len(os.listdir('/tmp'))\n"
        "open(f'/tmp/{uuid.uuid4().hex}', 'w').write(input())\nprint(n)"
    )
    pairs = [{"stdin": f"{k}\n", "stdout": "0\n"} for k in range(3)]
    assert check_code(pairs, fenced(prog)) == (1.0, "passed 3/3")


@needs_full
def test_tests_that_read_nothing_of_the_program_are_refused() -> None:
    """A row whose function is named like a builtin (``max``): the check side resolves
    the name to the builtin, so ``assert max([1, 5, 2]) == 5`` held for any program,
    the empty one included (score 1). Asserts that read no name of the program cannot
    judge one: the row gets an ``error:`` reason and 0, whatever the program. The same
    row with the function renamed judges as usual (right 1, empty 0)."""
    builtin_named = ["assert max([1, 5, 2]) == 5", "assert max([-3]) == -3"]
    empty = check_code(builtin_named, fenced("pass"))
    right = check_code(builtin_named, fenced("def max(xs):\n    return sorted(xs)[-1]"))
    refused = [r for s, r in (empty, right) if s == 0.0 and r.startswith("error: ")]
    record("code sandbox: tests that read nothing of the program", 2, len(refused))
    assert len(refused) == 2, (empty, right)
    assert "read no name of the program" in empty[1]
    renamed = [t.replace("max(", "top(") for t in builtin_named]
    assert check_code(renamed, fenced("def top(xs):\n    return sorted(xs)[-1]"))[0] == 1.0
    assert check_code(renamed, fenced("pass"))[0] == 0.0


@needs_full
def test_frozensets_inside_sets_and_dict_keys_cross_as_values() -> None:
    """A right program returning a set of frozensets (the pairs of a list) or a dict
    keyed by one scored 0 ("program answered with something that is not a value"):
    a frozenset crossed as a set, which is not hashable inside a set or as a key. It
    crosses as a frozenset now: both score 1, a wrong answer still 0."""
    pairs = "assert pairs([1, 2, 3]) == {frozenset({1, 2}), frozenset({2, 3}), frozenset({1, 3})}"
    right = "from itertools import combinations\ndef pairs(xs):\n    return {frozenset(c) for c in combinations(xs, 2)}"
    assert check_code([pairs], fenced(right)) == (1.0, "passed 1/1")
    wrong = "def pairs(xs):\n    return {frozenset({1, 2})}"
    assert check_code([pairs], fenced(wrong))[0] == 0.0
    keyed = ["assert degree([[1, 2]]) == {frozenset({1, 2}): 1}"]
    counts = "def degree(es):\n    return {frozenset(e): 1 for e in es}"
    assert check_code(keyed, fenced(counts)) == (1.0, "passed 1/1")
