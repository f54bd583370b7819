"""Math problems for a character-level micro model: repeated steps on a last digit.

``What is the last digit of 38+7*3?`` (add 7 to 38, three times; or take away). The
number of repeats ``k`` (1-7) is the difficulty and sets the effort level (1-2 low, 3-4
medium, 5-7 high). Every problem has two reference responses that end in the same ``\\boxed{digit}``:

- careful (``Problem.response``): the think block takes the start's last digit
  (``38->8``), then works one repeat at a time, counting down from ``k``, each step a
  single-digit fact (``3:8+7=15, 2:5+7=12, 1:2+7=9``; a subtraction borrows ten when
  the digit is smaller: ``3:8-7=1, 2:11-7=4``). Its length grows with ``k``;
  each step reads only the step before it and a fixed place in the prompt (the start,
  the operand, the count), so a model that knows the 180 facts is nearly always right,
  and a long procedure can still slip.
- quick (``Problem.quick_response``): an empty think block and the digit at once. Right
  for one repeat (a single fact), but a small model that must do seven in one forward
  pass is usually wrong.

A held-out problem is new; its steps are not: every fact occurs in the training split.
The answer is a digit, which SymPy checks like any number.
"""

from __future__ import annotations

import random

from recipe_arena.data.micro_problem import Problem
from recipe_arena.data.schema import Effort

EFFORT_BY_REPEATS: dict[int, Effort] = {
    1: "low",
    2: "low",
    3: "medium",
    4: "medium",
    5: "high",
    6: "high",
    7: "high",
}
SUBTRACT_SHARE = 0.15
"""Share of subtractions. An addition step is one of 90 facts that a micro base model
makes reliable; a subtraction step also decides a borrow (``3:1-7`` becomes ``11-7=4``),
which stays error-prone for longer, so RL keeps sharpening it after the careful
procedure has been chosen (the room left in the curve)."""
REPEAT_WEIGHTS: dict[int, float] = {1: 0.08, 2: 0.08, 3: 0.12, 4: 0.12, 5: 0.2, 6: 0.2, 7: 0.2}
"""How often each number of repeats is drawn: mostly long problems, where thinking pays."""


def _boxed(value: int) -> str:
    return "\\boxed{" + str(value) + "}"


def digit_steps(start: int, op: str, d: int, k: int) -> tuple[list[str], int]:
    """The start and its last digit (``32->2``), then ``k`` steps on the last digit,
    counting down ``k`` to 1: ``i:u+d=s`` adds ``d`` to the current digit ``u`` (the next
    digit is the last of ``s``); ``i:u-d=s`` subtracts, borrowing ten when ``u < d``
    (``13-5=8``). Returns the steps and the final digit."""
    u = start % 10
    steps = [f"{start}->{u}"]
    for i in range(k, 0, -1):
        if op == "+":
            s = u + d
            steps.append(f"{i}:{u}+{d}={s}")
        else:
            u = u + 10 if u < d else u
            s = u - d
            steps.append(f"{i}:{u}-{d}={s}")
        u = s % 10
    return steps, u


def make_repeat(rng: random.Random, k: int) -> Problem:
    """``What is the last digit of s+d*k?`` (or ``s-d*k``, never below zero) with a
    start ``s`` of 10-199, a digit ``d`` 1-9 and ``k`` repeats; a share
    ``SUBTRACT_SHARE`` are subtractions. Each number sits right after its own sign, so a
    step finds it by that sign alone."""
    op = "-" if rng.random() < SUBTRACT_SHARE else "+"
    d = rng.randint(1, 9)
    start = rng.randint(10, 199) if op == "+" else rng.randint(max(10, k * d), 199)
    steps, digit = digit_steps(start, op, d, k)
    expr = f"{start}{op}{d}*{k}"
    return Problem(
        expr,
        f"What is the last digit of {expr}?",
        str(digit),
        _boxed(digit),
        ", ".join(steps),
        EFFORT_BY_REPEATS[k],
    )


def sample_math(rng: random.Random) -> Problem:
    """One problem, its number of repeats drawn by ``REPEAT_WEIGHTS``."""
    (k,) = rng.choices(list(REPEAT_WEIGHTS), weights=list(REPEAT_WEIGHTS.values()))
    return make_repeat(rng, k)
