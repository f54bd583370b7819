"""The study report's power table (eval/study_tables.py): the seeds a comparison would
need for a 5-point MDE, from its measured noise."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from recipe_arena.eval import stats
from recipe_arena.eval.comparison import MEAN, ArmData, RunData, columns, paired_comparisons
from recipe_arena.eval.scores import ScoreRecord
from recipe_arena.eval.study_report import RowResult
from recipe_arena.eval.study_tables import power_section, seeds_for


def _arm(name: str, y: np.ndarray, ids: list[str]) -> ArmData:
    """An arm whose seed s scored ``y[s]`` on math questions ``ids`` (final evaluation
    at step 48)."""
    runs = [
        RunData(
            Path(f"{name}{s}"),
            s,
            {},
            ScoreRecord("e", 48, ids, ["math"] * len(ids), ids, list(y[s])),
            [],
            [],
            0.0,
        )
        for s in range(len(y))
    ]
    return ArmData(name, runs)


def test_seeds_for_is_the_fewest_seeds_that_reach_the_target() -> None:
    """Seed SD 0.02 alone: 3 seeds give 5.65 x 0.02 / sqrt 3 = 0.065 (too much), and the
    answer is the first count whose planned MDE is at most 0.05, the one before it not.
    A question SD of 1 over 10 questions keeps the MDE above 2.8 x 0.32 whatever the
    seeds: None."""
    s = seeds_for(0.05, 300, 0.02**2, 0.0, 0.0)
    assert s is not None and s > 3
    assert (
        stats.design_mde(s, 300, 0.02, 0.0, 0.0)
        <= 0.05
        < stats.design_mde(s - 1, 300, 0.02, 0.0, 0.0)
    )
    assert seeds_for(0.05, 10, 0.0, 1.0, 0.0) is None


def test_the_power_table_reads_each_comparisons_noise() -> None:
    """An arm that also solves questions 20-23, 20-27, none, 20-23 on seeds 0-3 (paired
    difference +0.1, +0.2, 0, +0.1). Two-way mean squares by hand: MS_S = 40 x 0.02 / 3
    = 0.2667; the question means 0.75 (x4), 0.25 (x4), 0 (x32) give MS_Q = 4 x 2.1 / 39
    = 0.2154; SS_E = 14.4 - 0.8 - 8.4 = 5.2, MS_E = 5.2 / 117 = 0.0444. Seed SD
    sqrt((0.2667 - 0.0444) / 40) = 0.075 (not the 0.082 of the seed means: part of their
    spread is the residual). Question SD sqrt((0.2154 - 0.0444) / 4) = 0.207 over 40
    questions keeps any design's MDE above 2.8 x 0.207 / sqrt 40 = 0.092: more than
    400 seeds."""
    q = 40
    ids = [f"q{i}" for i in range(q)]
    base = np.zeros((4, q))
    base[:, :20] = 1
    arm = base.copy()
    for s, extra in enumerate((4, 8, 0, 4)):
        arm[s, 20 : 20 + extra] = 1

    arms = [_arm("base", base, ids), _arm("arm", arm, ids)]
    cols = columns(arms[0].runs[0].final)
    comps = paired_comparisons(arms, cols)
    row = RowResult("r", "Row", "default", Path("r"), arms, comps, ["math", MEAN])
    (line,) = [x for x in power_section([row]) if x.startswith("| Row |")]
    mde = next(c.test.mde for c in comps if c.domain == "math")
    assert line == f"| Row | default | arm | 4 | {mde:.3f} | 0.075 | more than 400 |"


def test_an_arm_that_ran_alike_reads_identical_not_precise() -> None:
    """An arm whose per-question scores equal the baseline's on all 4 seeds (a setting
    that never took effect): every paired difference is 0, so its interval is [0, 0] and
    its MDE 0. The summary must call it identical, the power table must not ask for 2
    seeds, and a claim read from it is not put to a test. One question changed on one
    seed is a real (tiny) difference: no longer identical."""
    from recipe_arena.eval.study_report import IDENTICAL, _row_verdict, judge

    q = 10
    ids = [f"q{i}" for i in range(q)]
    base = np.zeros((4, q))
    base[:, :5] = 1

    arms = [_arm("base", base, ids), _arm("same", base.copy(), ids)]
    cols = columns(arms[0].runs[0].final)
    comps = paired_comparisons(arms, cols)
    assert _row_verdict(comps) == IDENTICAL
    row = RowResult("r", "Row", "default", Path("r"), arms, comps, ["math", MEAN])
    (line,) = [x for x in power_section([row]) if x.startswith("| Row |")]
    assert line.endswith("| - (identical scores: no noise to measure) |")
    assert judge("worse", IDENTICAL, 0.0, (0.0, 0.0)).startswith("cannot tell: the arms ran alike")
    assert judge("same", IDENTICAL, 0.0, (0.0, 0.0)).startswith("cannot tell")

    moved = base.copy()
    moved[2, 7] = 1
    comps = paired_comparisons([arms[0], _arm("moved", moved, ids)], cols)
    assert _row_verdict(comps) == "inside the noise"
