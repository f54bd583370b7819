"""Two settings timed side by side on the same work, in alternating rounds: the helper
of the benchmarks that compare a training step and decoding between two settings
(``isa_cost.py``, ``fixed_order_step.py``)."""

from __future__ import annotations

import statistics
from collections.abc import Callable

Measure = Callable[[str], tuple[float, float, str]]
"""arm -> (seconds per training step, seconds per decoding batch, a note to print)."""


def alternate(
    arms: tuple[str, str], rounds: int, measure: Measure
) -> dict[str, tuple[float, float]]:
    """Each arm's median (training step, decoding) seconds over ``rounds`` measurements,
    printed as they come. The arms swap order every round, so that drift in the machine's
    speed falls on both."""
    got: dict[str, list[tuple[float, float]]] = {arm: [] for arm in arms}
    width = max(len(arm) for arm in arms)
    for r in range(rounds):
        for arm in arms if r % 2 == 0 else arms[::-1]:
            train, decode, note = measure(arm)
            got[arm].append((train, decode))
            print(
                f"round {r} {arm:{width}}{f' ({note})' if note else ''}: "
                f"training step {train:.3f} s, decoding {decode:.3f} s",
                flush=True,
            )
    return {
        arm: (statistics.median(t for t, _ in v), statistics.median(d for _, d in v))
        for arm, v in got.items()
    }
