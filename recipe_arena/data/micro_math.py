"""Math problems for a ~1M-parameter character-level model.

Kinds (weights in ``_KINDS``): a 1-2 digit number plus or minus a digit, a digit times
2-5, 10 or 11, linear equations ``x + b = c`` / ``2x + b = c`` with a root in 0..12, sums
of two fractions with one denominator, and small bracketed expressions. Answers are
integers or reduced fractions, which SymPy checks; the reference answer is
``\\boxed{...}``. The think trace splits the work into steps that are single-digit facts
(units first, then the tens), so every held-out problem decomposes into facts that the
training split contains: a held-out problem is new, its steps are not. (With 1-3 digit
operands on both sides a ~1M-parameter model reached ~5% held-out accuracy in a few
minutes of base training, too little signal for RL.)
"""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction

from recipe_arena.data.micro_problem import Problem
from recipe_arena.data.schema import Effort


def _boxed(value: int | Fraction) -> str:
    return "\\boxed{" + str(value) + "}"


def _effort(*numbers: int) -> Effort:
    width = max(len(str(abs(n))) for n in numbers)
    return "low" if width == 1 else "medium" if width == 2 else "high"


def _add(rng: random.Random) -> Problem:
    a, b = rng.randint(0, 99), rng.randint(0, 9)
    units = a % 10 + b
    thought = (
        f"{a % 10}+{b} = {units}, {a - a % 10}+{units} = {a + b}"
        if a >= 10
        else f"{a}+{b} = {a + b}"
    )
    return Problem(
        f"{a}+{b}", f"What is {a}+{b}?", str(a + b), _boxed(a + b), thought, _effort(a, b)
    )


def _sub(rng: random.Random) -> Problem:
    a, b = rng.randint(10, 99), rng.randint(0, 9)
    thought = f"{a}-{b} = {a - b}"
    if a % 10 < b:
        thought = (
            f"{a % 10 + 10}-{b} = {a % 10 + 10 - b}, {a - a % 10 - 10}+{a % 10 + 10 - b} = {a - b}"
        )
    return Problem(
        f"{a}-{b}", f"What is {a}-{b}?", str(a - b), _boxed(a - b), thought, _effort(a, b)
    )


def _mul(rng: random.Random) -> Problem:
    a, b = rng.randint(2, 9), rng.choice([2, 3, 4, 5, 10, 11])
    thought = f"{a}*{b} = {a * b}"
    return Problem(
        f"{a}*{b}", f"What is {a}*{b}?", str(a * b), _boxed(a * b), thought, _effort(a, b)
    )


def _linear(rng: random.Random) -> Problem:
    a, x, b = rng.choice([1, 1, 2]), rng.randint(0, 12), rng.randint(0, 20)
    c = a * x + b
    lhs = ("x" if a == 1 else f"{a}x") + (f"+{b}" if b else "")
    thought = f"{'x' if a == 1 else f'{a}x'} = {c}-{b} = {c - b}" + (
        f", x = {c - b}/{a} = {x}" if a != 1 else ""
    )
    effort: Effort = "medium" if a == 1 else "high"
    return Problem(f"{lhs}={c}", f"Solve for x: {lhs}={c}", str(x), _boxed(x), thought, effort)


def _fraction(rng: random.Random) -> Problem:
    d = rng.randint(2, 9)
    a, b = rng.randint(1, d - 1), rng.randint(1, d - 1)
    total = Fraction(a + b, d)
    thought = f"{a}/{d}+{b}/{d} = {a + b}/{d}"
    if str(total) != f"{a + b}/{d}":
        thought += f" = {total}"
    return Problem(
        f"{a}/{d}+{b}/{d}", f"What is {a}/{d}+{b}/{d}?", str(total), _boxed(total), thought, "high"
    )


def _expression(rng: random.Random) -> Problem:
    a, b, c = rng.randint(1, 9), rng.randint(1, 9), rng.randint(2, 5)
    inner, op = (a + b, "+") if rng.random() < 0.5 else (a - b, "-")
    value = c * inner
    expr = f"{c}*({a}{op}{b})"
    thought = f"{a}{op}{b} = {inner}, {c}*{inner} = {value}"
    return Problem(expr, f"What is {expr}?", str(value), _boxed(value), thought, "medium")


_KINDS: dict[str, tuple[float, Callable[[random.Random], Problem]]] = {
    "add": (0.25, _add),
    "sub": (0.2, _sub),
    "mul": (0.2, _mul),
    "linear": (0.15, _linear),
    "fraction": (0.1, _fraction),
    "expression": (0.1, _expression),
}


def sample_math(rng: random.Random) -> Problem:
    weights = [w for w, _ in _KINDS.values()]
    (make,) = rng.choices([f for _, f in _KINDS.values()], weights=weights)
    return make(rng)
