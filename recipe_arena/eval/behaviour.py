"""What each arm's RL stage did, beside what it scored: training reward, response
length and its percentiles, truncation, the trained/sampled length ratio, lag and the
engine-trainer gap, each as the mean over seeds with its 95% t interval.

Read from each run's metrics.jsonl (the RL stage's records, ``RunData.rl``). These are
the figures Table 9.2's rows are about beyond held-out pass@1: a length-control arm
should move length and truncation, a stale-data regime should show its lag and gap,
and an arm whose training reward rises while its held-out score does not is the
seed's "higher training reward, worse model".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from recipe_arena.eval import stats
from recipe_arena.eval.comparison import ArmData, RunData

LATE = 0.75
"""The training reward is averaged over the RL steps after this fraction of the
stage (its last quarter): the reward the arm ended at, to set beside its final
held-out score; every other figure averages over all its steps."""

Figure = Callable[[RunData], float | None]


def _mean(key: str, late: bool = False) -> Figure:
    """The mean of ``key`` over the run's RL steps (the last quarter when ``late``);
    None when no step logged it."""

    def value(run: RunData) -> float | None:
        recs = [r for r in run.rl if r.get("step", 0) > 0 and key in r]
        if late and recs:
            last = max(r["step"] for r in recs)
            recs = [r for r in recs if r["step"] > LATE * last]
        return float(np.mean([r[key] for r in recs])) if recs else None

    return value


def _trained_over_sampled(run: RunData) -> float | None:
    """Trained tokens over sampled tokens, summed over the RL stage: below 1 when a
    length control drops or shortens what it samples before training on it."""
    n = d = 0.0
    for r in run.rl:
        if "length/trained_mean" in r and "length/sampled_mean" in r:
            n += r["length/trained_mean"] * r.get("length/trained_n", 1)
            d += r["length/sampled_mean"] * r.get("length/sampled_n", 1)
    return n / d if d > 0 else None


@dataclass(frozen=True)
class Column:
    title: str
    value: Figure
    digits: int = 3


COLUMNS = (
    Column("training reward (last quarter)", _mean("reward/mean", late=True)),
    Column("sampled length (tokens)", _mean("length/sampled_mean"), 1),
    Column("p50", _mean("length/sampled_p50"), 1),
    Column("p90", _mean("length/sampled_p90"), 1),
    Column("truncated", _mean("length/truncated_frac")),
    Column("trained / sampled tokens", _trained_over_sampled),
    Column("lag (versions)", _mean("staleness/lag_mean"), 2),
    Column("engine-trainer KL", _mean("staleness/kl_engine_trainer"), 6),
)
"""The table's figures per run. Percentiles are the per-step percentiles of the
sampled responses' lengths, averaged over steps."""


def behaviour_table(arms: list[ArmData]) -> list[str]:
    """The markdown section: one line per arm with an RL stage, each figure the mean
    over its seeds [95% t interval]; '-' where no run logged it. Empty when no arm has
    an RL stage (a pipeline of distillation alone)."""
    lines = []
    for a in arms:
        runs = [r for r in a.runs if r.rl]
        if not runs:
            continue
        cells = []
        for col in COLUMNS:
            vals = [v for v in (col.value(r) for r in runs) if v is not None]
            cells.append(stats.t_interval(vals).fmt(col.digits) if vals else "-")
        lines.append(f"| {a.name} | {len(runs)} | " + " | ".join(cells) + " |")
    if not lines:
        return []
    return [
        "## What the RL stage did",
        "",
        "Per arm, the mean over seeds [95% t interval] of each run's RL-stage figures "
        "(metrics.jsonl): the training reward over the last quarter of the steps, to set "
        "beside the held-out scores above; over every step, the sampled responses' length "
        "(mean, and the per-step median and 90th percentile), the fraction truncated at "
        "the length cap, the tokens trained over the tokens sampled (responses of groups "
        "left out for zero variance, staleness or length control count as not trained), "
        "the trained tokens' "
        "lag behind the learner and the engine-trainer KL on them.",
        "",
        "| arm | seeds | " + " | ".join(c.title for c in COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
        *lines,
        "",
    ]
