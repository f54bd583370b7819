"""The MDE on held-out math against the length of the RL stage, read off a study's runs.

A study's verdicts read the last evaluation of the stage that trains the final policy.
Its runs also hold every evaluation before that one (``rl.eval_every``), so the same
runs say what the paired test would have given had the stage stopped earlier: for each
comparison of each row and regime and each evaluation step that all its runs share,
the paired difference on held-out math at that step (``eval.stats.paired_test`` on
the per-question scores, questions clustered by source), its 95% interval, its minimum
detectable effect (80% power, 5% level), the seed-to-seed standard deviation of the
difference, and the seeds a design at that noise would need for an MDE of 0.05
(``study_tables.seeds_needed``). With a constant learning rate and the deterministic
schedule, a run of 96 steps passes through the same states as the run of 48 steps of
the same arm and seed, so one long study shows how the MDE falls (or not) as the
stage runs on towards its plateau.

Run: python benchmarks/mde_by_length.py STUDY_DIR [--domain math] [--every 12]
Last line: ``mde_by_length: MDE <lo>-<hi> at step <last>; at or under 0.05 for every
comparison from step <s> on`` (``s`` over every shared evaluation step, printed or not;
"at no step" when some comparison's MDE is above 0.05 at its last step).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from recipe_arena.eval import stats
from recipe_arena.eval.comparison import (
    ArmData,
    RunData,
    check_questions,
    columns,
    domain_columns,
    load_comparison,
    paired_runs,
)
from recipe_arena.eval.study_tables import TARGET_MDE, seeds_needed


def curves(runs: list[RunData], steps: list[int]) -> np.ndarray:
    """The final policy's per-question scores of each run at each of ``steps``:
    steps x seeds x questions."""
    by_step = [{e.step: e.scores for e in r.curve} for r in runs]
    return np.array([[m[t] for m in by_step] for t in steps], dtype=np.float64)


def shared_steps(arms: list[ArmData]) -> list[int]:
    """Evaluation steps after the start of the final policy's stage that every run of
    every arm has; none when that stage is not the same in every run (MOPD's step 30 is
    not mixed RL's, so the pipeline row's arms compare only at their ends)."""
    runs = [r for a in arms for r in a.runs]
    if not runs or len({r.curve_stage for r in runs}) != 1:
        return []
    return sorted(set.intersection(*({e.step for e in r.curve} for r in runs)) - {0})


def settled_from(mde_by_step: dict[int, float], target: float = TARGET_MDE) -> int | None:
    """The first step from which the MDE stays at or under ``target`` up to the last
    step; None when it is above ``target`` at the last step."""
    steps = sorted(mde_by_step)
    start = None
    for s in steps:
        if mde_by_step[s] > target:
            start = None
        elif start is None:
            start = s
    return start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("study", type=Path, help="a study directory (with rows/ and study.json)")
    ap.add_argument("--domain", default="math")
    ap.add_argument("--every", type=int, default=12, help="print every this many steps")
    args = ap.parse_args()
    last: list[float] = []
    settled: list[int | None] = []
    last_step = 0
    print(
        "| row | regime | alternative | step | effect on "
        f"{args.domain} | MDE | seed SD | seeds for MDE {TARGET_MDE:.2f} |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in sorted((args.study / "rows").iterdir()):
        if not (row / "comparison.json").exists():
            continue
        _, arms = load_comparison(row)
        ready = [a for a in arms if a.runs]
        if len(ready) < 2:
            continue
        cols = columns(check_questions(ready))
        idx, w, clusters = domain_columns(cols, args.domain)
        steps = shared_steps(ready)
        shown = {s for s in steps if s % args.every == 0 or s == steps[-1]}
        name, regime = row.name.rsplit(".", 1)
        for arm in ready[1:]:
            a_runs, b_runs = paired_runs(arm, ready[0])
            if len(a_runs) < 2 or not steps:
                continue
            label = "A/A control" if arm.control else arm.name
            a_TSQ = curves(a_runs, steps)[:, :, idx]
            b_TSQ = curves(b_runs, steps)[:, :, idx]
            mdes: dict[int, float] = {}
            for step, a, b in zip(steps, a_TSQ, b_TSQ, strict=True):
                t = stats.paired_test(a, b, clusters_Q=clusters, weights_Q=w)
                mdes[step] = t.mde
                if step in shown:
                    d = stats.paired_differences(a, b, w, clusters, "mde_by_length")
                    print(
                        f"| {name} | {regime} | {label} | {step} | "
                        f"{t.diff.fmt(signed=True)} | {t.mde:.3f} | {t.sd_seed:.3f} | "
                        f"{seeds_needed(d)} |"
                    )
            last.append(mdes[steps[-1]])
            last_step = max(last_step, steps[-1])
            settled.append(settled_from(mdes))
    if not last:
        raise SystemExit(f"mde_by_length: no finished comparison under {args.study / 'rows'}")
    when = (
        "at no step"
        if any(s is None for s in settled)
        else f"from step {max(s for s in settled if s is not None)} on"
    )
    print(
        f"mde_by_length: MDE {min(last):.3f}-{max(last):.3f} at step {last_step}; at or under "
        f"{TARGET_MDE:.2f} for every comparison {when}"
    )


if __name__ == "__main__":
    main()
