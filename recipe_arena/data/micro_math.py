"""Math problems for a ~1M-parameter character-level model.

Kinds (weights in ``_KINDS``): 1-3 digit addition and subtraction, multiplication by a
1-2 digit number, linear equations ``a*x + b = c`` with an integer root, sums of two
fractions, and small bracketed expressions. Answers are integers or reduced fractions,
which SymPy checks; the reference answer is ``\\boxed{...}``. The think trace splits
the work into steps small enough for the model to copy (tens then units, the common
denominator, the inner bracket first).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction

from recipe_arena.data.micro_problem import Problem
from recipe_arena.data.schema import Effort


def _boxed(value: int | Fraction) -> str:
    return "\\boxed{" + str(value) + "}"


# Operand widths 1, 2, 3 digits drawn 50/35/15: single-digit facts are memorisable by a
# ~1M-parameter model, so the base model solves some problems and RL has signal on the
# rest (a uniform width made 3-digit problems dominate and held-out accuracy ~5%).
_WIDTH_WEIGHTS = (0.5, 0.35, 0.15)


def _digits(rng: random.Random, lo: int, hi: int) -> int:
    """A number with between ``lo`` and ``hi`` digits (1 digit includes 0), narrow ones likelier."""
    widths = list(range(lo, hi + 1))
    (n,) = rng.choices(widths, weights=_WIDTH_WEIGHTS[lo - 1 : hi])
    return rng.randint(0 if n == 1 else 10 ** (n - 1), 10**n - 1)


def _effort(*numbers: int) -> Effort:
    width = max(len(str(abs(n))) for n in numbers)
    return "low" if width == 1 else "medium" if width == 2 else "high"


def _add(rng: random.Random) -> Problem:
    a, b = _digits(rng, 1, 3), _digits(rng, 1, 3)
    tens = a - a % 10 + b - b % 10
    thought = (
        f"{a}+{b} = {tens}+{a % 10 + b % 10} = {a + b}" if max(a, b) >= 10 else f"{a}+{b} = {a + b}"
    )
    return Problem(
        f"{a}+{b}", f"What is {a}+{b}?", str(a + b), _boxed(a + b), thought, _effort(a, b)
    )


def _sub(rng: random.Random) -> Problem:
    a, b = _digits(rng, 1, 3), _digits(rng, 1, 3)
    thought = f"{a}-{b} = {a - b}"
    if max(a, b) >= 10:
        thought = f"{a}-{b} = {a}-{b - b % 10}-{b % 10} = {a - b + b % 10}-{b % 10} = {a - b}"
    return Problem(
        f"{a}-{b}", f"What is {a}-{b}?", str(a - b), _boxed(a - b), thought, _effort(a, b)
    )


def _mul(rng: random.Random) -> Problem:
    a, b = _digits(rng, 1, 2), rng.randint(2, 9)
    if rng.random() < 0.3:
        a, b = _digits(rng, 1, 2), _digits(rng, 1, 2)
    thought = f"{a}*{b} = {a * b}"
    if a >= 10:
        thought = (
            f"{a}*{b} = {a - a % 10}*{b}+{a % 10}*{b} = {(a - a % 10) * b}+{a % 10 * b} = {a * b}"
        )
    return Problem(
        f"{a}*{b}", f"What is {a}*{b}?", str(a * b), _boxed(a * b), thought, _effort(a, b)
    )


def _linear(rng: random.Random) -> Problem:
    a, x, b = rng.randint(1, 9), rng.randint(-9, 9), rng.randint(0, 20)
    c = a * x + b
    lhs = ("x" if a == 1 else f"{a}x") + (f"+{b}" if b else "")
    thought = f"{'x' if a == 1 else f'{a}x'} = {c}-{b} = {c - b}" + (
        f", x = {c - b}/{a} = {x}" if a != 1 else ""
    )
    effort: Effort = "medium" if a == 1 else "high"
    return Problem(f"{lhs}={c}", f"Solve for x: {lhs}={c}", str(x), _boxed(x), thought, effort)


def _fraction(rng: random.Random) -> Problem:
    p, q = rng.randint(2, 6), rng.randint(2, 6)
    a, b = rng.randint(1, p - 1), rng.randint(1, q - 1)
    total = Fraction(a, p) + Fraction(b, q)
    d = p * q // _gcd(p, q)
    thought = f"{a * d // p}/{d}+{b * d // q}/{d} = {a * d // p + b * d // q}/{d} = {total}"
    return Problem(
        f"{a}/{p}+{b}/{q}", f"What is {a}/{p}+{b}/{q}?", str(total), _boxed(total), thought, "high"
    )


def _expression(rng: random.Random) -> Problem:
    a, b, c = rng.randint(1, 9), rng.randint(1, 9), rng.randint(2, 5)
    inner, op = (a + b, "+") if rng.random() < 0.5 else (a - b, "-")
    value = c * inner
    expr = f"{c}*({a}{op}{b})"
    thought = f"{a}{op}{b} = {inner}, {c}*{inner} = {value}"
    return Problem(expr, f"What is {expr}?", str(value), _boxed(value), thought, "medium")


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


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
