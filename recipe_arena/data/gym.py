"""RL training prompts from reasoning-gym's procedural generators (offline).

``reasoning-gym==0.1.25`` (Apache-2.0) ships about 100 seeded task generators with
reference answers; nothing is downloaded. The tasks used here have a single numeric
answer, so the project's math verifier scores them like any math row. Their
difficulty is set low (``GYM_TASKS``): a 135M-parameter model must solve some of them
for RL to see reward variance within a group.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from recipe_arena.data.packaged import MATH_INSTRUCTION
from recipe_arena.data.schema import Message, PromptRow

GymTask = Literal["chain_sum", "basic_arithmetic", "products", "leg_counting", "simple_equations"]

GYM_TASKS: dict[str, dict[str, Any]] = {
    "chain_sum": {"min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 2},
    "basic_arithmetic": {"min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 2},
    "products": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 2},
    "leg_counting": {"min_animals": 1, "max_animals": 3, "max_instances": 5},
    "simple_equations": {"min_terms": 2, "max_terms": 2, "max_value": 20},
}
"""reasoning-gym generator -> its difficulty settings (easy: single-digit to two-digit
operands, a few terms)."""


def gym_rows(tasks: Sequence[str], n: int, seed: int) -> list[PromptRow]:
    """``n`` math rows drawn round-robin from ``tasks`` (each a key of ``GYM_TASKS``),
    every task seeded with ``seed``: the same arguments give the same rows."""
    import reasoning_gym

    unknown = [t for t in tasks if t not in GYM_TASKS]
    if unknown or not tasks:
        raise ValueError(
            f"reasoning-gym tasks {list(tasks)}: choose one or more of {', '.join(GYM_TASKS)}"
        )
    per_task = [n // len(tasks) + (i < n % len(tasks)) for i in range(len(tasks))]
    rows: list[PromptRow] = []
    for task, count in zip(tasks, per_task, strict=True):
        if count == 0:
            continue
        data = reasoning_gym.create_dataset(task, size=count, seed=seed, **GYM_TASKS[task])
        for i, item in enumerate(data):
            question = str(item["question"]).strip()
            rows.append(
                PromptRow(
                    id=f"gym-{task}-s{seed}-{i:05d}",
                    messages=[Message(role="user", content=f"{question}\n\n{MATH_INSTRUCTION}")],
                    ground_truth=str(item["answer"]).strip(),
                    domain="math",
                )
            )
    return rows
