"""The study report's tables across rows (``eval.study_report`` writes them after the
findings): contrasts between groups of rows, the power of each comparison, and the
time each row took.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from recipe_arena.comparison_plan import read_run_config
from recipe_arena.eval import stats
from recipe_arena.eval.comparison import (
    MEAN,
    check_questions,
    columns,
    domain_columns,
    identical,
    paired,
)
from recipe_arena.eval.contrast import Contrast
from recipe_arena.prefix_cache import prefix_stages

if TYPE_CHECKING:
    from recipe_arena.eval.study_report import RowResult

TARGET_MDE = 0.05
"""The minimum detectable effect a study aims at on held-out math (5 points of pass@1):
the power table gives the seeds each comparison would need to reach it."""
MAX_SEEDS = 400
"""Seeds searched for ``TARGET_MDE``; beyond, the table says more than this."""


def contrasts_section(spec: dict, rows: list[RowResult]) -> list[str]:
    """Each contrast of the study file: the two groups' spreads and their difference."""
    from recipe_arena.eval.contrast import verdict as contrast_verdict

    out: list[str] = []
    for c in spec.get("contrasts") or []:
        out += [f"## {c['claim']}", ""]
        res, used, seeds = contrast_of(c, rows)
        if res is None:
            out += ["Not enough finished runs in both groups yet (two shared seeds).", ""]
            continue
        out += [
            "Each group's spread is its largest absolute effect on held-out pass@1 "
            f"({c.get('domain', MEAN)}) against OLMo 3's choice over the alternatives of its "
            f"rows; intervals from one crossed bootstrap of the seeds ({', '.join(map(str, seeds))}) "
            "and the questions, the same draw for both groups (`eval.contrast`). The largest "
            "of several noisy effects leans away from zero, the more so the more alternatives "
            "a group has; with 4 seeds the bootstrap's interval is approximate.",
            "",
            "| group | rows | alternatives | largest effect from | spread [95% interval] |",
            "|---|---|---|---|---|",
        ]
        for (name, n, top, est), names in zip((res.first, res.second), used, strict=True):
            out.append(f"| {name} | {', '.join(names)} | {n} | {top} | {est.fmt()} |")
        out += [
            "",
            f"Difference ({res.first[0]} - {res.second[0]}): {res.diff.fmt(signed=True)}: "
            f"{contrast_verdict(res)}.",
            "",
        ]
    return out


def contrast_of(
    c: dict, rows: list[RowResult]
) -> tuple[Contrast | None, list[list[str]], list[int]]:
    """(the contrast, the rows of each group that have comparisons, the shared seeds)."""
    from recipe_arena.eval.contrast import contrast, group_effects

    by_row = {r.row: r for r in rows if r.regime == c.get("regime", "default") and r.comps}
    used = [[n for n in g["rows"] if n in by_row] for g in c["groups"]]
    arms = [a for names in used for n in names for a in by_row[n].arms if a.runs]
    if not all(used):
        return None, used, []
    seeds = sorted(set.intersection(*(set(a.seeds) for a in arms if not a.control)))
    if len(seeds) < 2:
        return None, used, seeds
    cols = columns(check_questions(arms))
    effects = [
        group_effects(
            {n: [a for a in by_row[n].arms if a.runs] for n in names},
            cols,
            c.get("domain", MEAN),
            seeds,
        )
        for names in used
    ]
    first, second = c["groups"]
    return contrast((first["name"], effects[0]), (second["name"], effects[1])), used, seeds


@dataclass(frozen=True)
class RunTime:
    """One finished run's wall time, from its stages.json, in seconds."""

    own: float
    """The stages from the first RL, specialists or distillation stage on (all of them
    for a pipeline without one)."""
    prefix: float
    """The stages before it, as the run that trained them measured them (a run that
    reused a stored prefix carries the same figures)."""
    prefix_id: str
    """Which prefix: its stages and their recorded seconds (equal only for copies)."""


def run_time(path: Path) -> RunTime:
    """``RunTime`` of the finished run at ``path``."""
    done: dict[str, float] = json.loads((path / "stages.json").read_text()).get("done", {})
    raw = read_run_config(path)
    before = set(prefix_stages(list((raw.get("pipeline") or {}).get("stages", []))))
    prefix = {s: float(t) for s, t in done.items() if s in before}
    own = sum(float(t) for s, t in done.items() if s not in before)
    return RunTime(own, sum(prefix.values()), json.dumps(sorted(prefix.items())))


def time_section(rows: list[RowResult]) -> list[str]:
    """Seconds per row and regime, and for the whole study (each distinct run and prefix
    once)."""
    md = [
        "## Time",
        "",
        "Wall seconds as each run measured them (stages.json), summed: the stages from the "
        "RL start on for each distinct run of the row, and the stages before it once per "
        "prefix that those runs trained (runs that share a prefix copy it). A run shared by "
        "several rows counts in each of them, once in the total. Runs made side by side "
        "(jobs=N) overlap, so the wall clock is shorter than the sum.",
        "",
        "| row | regime | runs | their own stages (s) | prefixes | prefix stages (s) | total (min) |",
        "|---|---|---|---|---|---|---|",
    ]
    everything: dict[Path, RunTime] = {}
    for r in rows:
        times = {run.path.resolve(): run_time(run.path) for arm in r.arms for run in arm.runs}
        everything.update(times)
        md.append(time_line(f"{r.title} | {r.regime}", times))
    return md + [time_line("**whole study** | all", everything), ""]


def time_line(label: str, times: dict[Path, RunTime]) -> str:
    own = sum(t.own for t in times.values())
    prefixes = {t.prefix_id: t.prefix for t in times.values()}
    pre = sum(prefixes.values())
    return (
        f"| {label} | {len(times)} | {own:,.0f} | {len(prefixes)} | {pre:,.0f} | "
        f"{(own + pre) / 60:.1f} |"
    )


def seeds_for(target: float, units: int, sa2: float, sb2: float, se2: float) -> int | None:
    """The fewest seeds (2 to ``MAX_SEEDS``) whose planned design (``stats.design_mde``,
    at these variance components and ``units`` questions) detects ``target``; None when
    even ``MAX_SEEDS`` do not (the question term alone can keep it above)."""
    sd = (float(np.sqrt(sa2)), float(np.sqrt(sb2)), float(np.sqrt(se2)))
    for s in range(2, MAX_SEEDS + 1):
        if stats.design_mde(s, units, *sd) <= target:
            return s
    return None


def seeds_needed(d_SQ: np.ndarray) -> str:
    """The seeds a design at the noise of the paired differences ``d_SQ`` (seeds x
    question units) needs for an MDE of ``TARGET_MDE`` (``seeds_for`` at their variance
    components), as the power tables print it."""
    _, _, sa2, sb2, se2 = stats.variance_components(d_SQ)
    need = seeds_for(TARGET_MDE, d_SQ.shape[1], sa2, sb2, se2)
    return str(need) if need else f"more than {MAX_SEEDS}"


def power_section(rows: list[RowResult], domain: str = "math") -> list[str]:
    """Per comparison on ``domain``: its MDE at the seeds it has, the seed-to-seed
    standard deviation of its paired difference, and the seeds a design at the same
    noise would need for an MDE of ``TARGET_MDE``."""
    lines = []
    for r in rows:
        ready = [a for a in r.arms if a.runs]
        if not r.comps or domain not in r.domains:
            continue
        cols = columns(check_questions(ready))
        idx, w, clusters = domain_columns(cols, domain)
        for arm in ready[1:]:
            a, b, seeds = paired(arm, ready[0])
            if len(seeds) < 2:
                continue
            d = stats.paired_differences(a[:, idx], b[:, idx], w, clusters, "power")
            test = next(c.test for c in r.comps if c.arm == arm.name and c.domain == domain)
            label = "A/A control" if arm.control else arm.name
            if identical([c for c in r.comps if c.arm == arm.name]):
                needed = "- (identical scores: no noise to measure)"
            else:
                needed = seeds_needed(d)
            lines.append(
                f"| {r.title} | {r.regime} | {label} | {len(seeds)} | {test.mde:.3f} | "
                f"{test.sd_seed:.3f} | {needed} |"
            )
    if not lines:
        return []
    return [
        "## Power",
        "",
        f"Per comparison on held-out {domain}: the minimum detectable effect (80% power, 5% "
        "level) at the seeds it has; the estimated seed-to-seed standard deviation of its "
        "paired difference (the noise more questions cannot remove); and the seeds a design "
        f"at the same noise and questions would need to detect {TARGET_MDE:.2f} "
        "(`stats.design_mde`).",
        "",
        f"| row | regime | alternative | seeds | MDE | seed SD | seeds for MDE {TARGET_MDE:.2f} |",
        "|---|---|---|---|---|---|---|",
        *lines,
        "",
    ]
