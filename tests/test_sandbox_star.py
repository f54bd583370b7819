"""Names the tests bind with ``from math import *`` (or cmath's, string's), attacked
through the real sandbox (``check_code``, as a verifier worker calls it)."""

from __future__ import annotations

from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox_split import split_tests
from tests.hostile_tally import record
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

DIST = ["from math import *", "assert dist(3, 4) == sqrt(25)"]
CHEATS = {  # each program computes nothing: its own "standard" name agrees with it
    "sqrt_returns_what_dist_does": (DIST, "def sqrt(x): return 0\ndef dist(a, b): return 0"),
    "sqrt_through_map": (
        ["from math import *", "assert list(map(sqrt, [4, 9])) == roots([4, 9])"],
        "def sqrt(x): return 1\ndef roots(xs): return [1, 1]",
    ),
    "a_string_constant": (
        ["from string import *", "assert upper_letters() == ascii_uppercase"],
        "ascii_uppercase = 'X'\ndef upper_letters(): return 'X'",
    ),
}
RIGHT = {  # (tests, program, score): what no right program may lose
    "dist_with_maths_sqrt": (DIST, "from math import sqrt, hypot\ndef dist(a, b): return hypot(a, b)"),
    "own_sqrt": (DIST, "def sqrt(x): return x ** 0.5\ndef dist(a, b): return sqrt(a * a + b * b)"),
    "constant": (CHEATS["a_string_constant"][0], "from string import *\ndef upper_letters(): return ascii_uppercase"),
    "own_factorial": (
        ["from math import *", "assert factorial(5) == 120", "assert factorial(3) == 6"],
        "def factorial(n):\n    return 1 if n < 2 else n * factorial(n - 1)",
    ),
    "other_signature": (
        ["from math import *", "assert dist(0, 0, 3, 4) == 5"],
        "def dist(a, b, c, d): return ((c - a) ** 2 + (d - b) ** 2) ** 0.5",
    ),
    "handed_whole": (["from math import *", "assert apply(sqrt, 9) == 3"], "from math import sqrt\ndef apply(f, x): return f(x)"),
    "not_a_standard_module": (["from solution import *", "assert add(1, 2) == 3"], "def add(a, b): return a + b"),
}  # fmt: skip


@needs_full
def test_names_of_the_tests_star_import_must_be_the_standard_ones() -> None:
    """``from math import *`` then ``assert dist(3, 4) == sqrt(25)``: the tests bind
    ``sqrt`` themselves, but the split took it for a name of the program (read, never
    assigned), so a program whose ``sqrt`` returned what its ``dist`` did (0) scored 1,
    and likewise through ``map`` or with a string constant. The program must still define the name (a
    right program without ``sqrt`` fails as before), and its value is used as before,
    but where math's function answers a plain value for the test's plain arguments the
    program's must equal it: every cheat scores 0, and each right program keeps its
    score of 1."""
    got = {k: check_code(t, fenced(p), all_pass=False) for k, (t, p) in CHEATS.items()}
    held = [k for k, (score, _) in got.items() if score == 0.0]
    record("code sandbox: names of the tests' star import", len(CHEATS), len(held))
    assert len(held) == len(CHEATS), got
    for name, (tests, program) in RIGHT.items():
        assert check_code(tests, fenced(program))[0] == 1.0, name
    assert check_code(DIST, fenced("def dist(a, b): return (a * a + b * b) ** 0.5"))[0] == 0.0
    assert split_tests(DIST)["star"] == [["dist", "math"], ["sqrt", "math"]]  # math.dist too
