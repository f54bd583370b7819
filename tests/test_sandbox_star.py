"""Names the tests bind with ``from math import *`` (or cmath's, string's), attacked
through the real sandbox (``check_code``, as a verifier worker calls it)."""

from __future__ import annotations

from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox_split import split_tests
from tests.hostile_tally import record
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

DIST = ["from math import *", "assert hyp(3, 4) == sqrt(25)"]
CHEATS = {  # each program computes nothing: its own "standard" name agrees with it
    "sqrt_returns_what_hyp_does": (DIST, "def sqrt(x): return 0\ndef hyp(a, b): return 0"),
    "sqrt_through_map": (
        ["from math import *", "assert list(map(sqrt, [4, 9])) == roots([4, 9])"],
        "def sqrt(x): return 1\ndef roots(xs): return [1, 1]",
    ),
    "a_string_constant": (
        ["from string import *", "assert upper_letters() == ascii_uppercase"],
        "ascii_uppercase = 'X'\ndef upper_letters(): return 'X'",
    ),
}
RIGHT = {  # (tests, program): right programs, each must keep its score of 1
    "dist_with_maths_sqrt": (DIST, "from math import sqrt, hypot\ndef hyp(a, b): return hypot(a, b)"),
    "own_sqrt": (DIST, "def sqrt(x): return x ** 0.5\ndef hyp(a, b): return sqrt(a * a + b * b)"),
    "constant": (CHEATS["a_string_constant"][0], "from string import *\ndef upper_letters(): return ascii_uppercase"),
    "own_factorial": (
        ["from math import *", "assert factorial(5) == 120", "assert factorial(3) == 6"],
        "def factorial(n):\n    return 1 if n < 2 else n * factorial(n - 1)",
    ),
    "other_signature": (
        ["from math import *", "assert dist(0, 0, 3, 4) == hyp(3, 4)"],
        "def dist(a, b, c, d): return ((c - a) ** 2 + (d - b) ** 2) ** 0.5\ndef hyp(a, b): return 5.0",
    ),
    "handed_whole": (["from math import *", "assert apply(sqrt, 9) == 3"], "from math import sqrt\ndef apply(f, x): return f(x)"),
    "last_digit_off": (  # exp(log(2) / 2) is 1.414213562373095, math.sqrt(2) ...0951
        ["from math import *", "assert isclose(norm([1, 1]), sqrt(2))"],
        "import math\ndef sqrt(v): return math.exp(math.log(v) / 2)\ndef norm(p): return sqrt(p[0] ** 2 + p[1] ** 2)",
    ),
    "the_only_name": (  # a row testing its sqrt: no other name, so the program's
        ["from math import *", "assert isclose(sqrt(25), 5, rel_tol=1e-6)", "assert sqrt(4) == 2"],
        "import math\ndef sqrt(v): return round(math.exp(math.log(v) / 2), 9)",
    ),
    "not_a_standard_module": (["from solution import *", "assert add(1, 2) == 3"], "def add(a, b): return a + b"),
}  # fmt: skip


@needs_full
def test_names_of_the_tests_star_import_must_be_the_standard_ones() -> None:
    """``from math import *`` then ``assert hyp(3, 4) == sqrt(25)``: the tests bind
    ``sqrt`` themselves, but the split took it for a name of the program (read, never
    assigned), so a program whose ``sqrt`` returned what its ``hyp`` did (0) scored 1,
    and likewise through ``map`` or with a string constant. The program must still define the name (a
    right program without ``sqrt`` fails as before), and its value is used as before,
    but where math's function answers a plain value for the test's plain arguments the
    program's must equal it (a float within 1e-9): every cheat scores 0, and each right
    program keeps its score of 1. A row whose every program name is the module's
    (``dist`` and ``sqrt``: ``math.dist`` too) keeps them the program's, as a row
    testing ``isclose`` keeps its ``isclose``."""
    got = {k: check_code(t, fenced(p), all_pass=False) for k, (t, p) in CHEATS.items()}
    held = [k for k, (score, _) in got.items() if score == 0.0]
    record("code sandbox: names of the tests' star import", len(CHEATS), len(held))
    assert len(held) == len(CHEATS), got
    for name, (tests, program) in RIGHT.items():
        assert check_code(tests, fenced(program))[0] == 1.0, name
    assert check_code(DIST, fenced("def hyp(a, b): return (a * a + b * b) ** 0.5"))[0] == 0.0
    assert split_tests(DIST)["star"] == [["sqrt", "math"]]
    # every name of the program is math's (dist too): the row tests them, as before
    assert split_tests([DIST[0], "assert dist(3, 4) == sqrt(25)"])["star"] == []
