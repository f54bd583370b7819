"""Does the held-out evaluation's cadence change training? Pair the runs of two studies
whose settings differ in ``rl.eval_every`` alone, and compare what both recorded.

A run's settings are its config.yaml less its ``name``, ``out_dir``, ``resume`` (how
the process was started: a resumed run trains as an uninterrupted one) and
``rl.eval_every``; two runs with equal settings (the same arm, regime and seed) form a
pair. For each pair, every evaluation both made (the same stage and step) must have
the same questions and per-question scores (``eval.scores``), and every metric both
logged at the same stage and step the same value, except the ones that measure the
machine or a cache rather than training (``IGNORED``). Evaluations and metrics that only
one run has (the steps the other did not evaluate) are not compared.

Why: a study evaluated every 12 RL steps instead of 6 spends a fifth less time per run,
and its runs have other keys than the study made every 6; if the cadence leaves
training alone, every pair is identical where both evaluated, every final score and
verdict of one study is the other's, and only the curves they read areas off differ.

Run: python benchmarks/cadence_check.py MINE THEIRS (each a study's or an export's
``runs`` folder; only MINE's finished runs are checked; a run of MINE with the same
folder name in THEIRS is the same run and is skipped).
Last line: ``cadence_check: <n> of <m> pairs identical (<e> evaluations and <v> metric
values compared); <u> runs unpaired``; exit status 1 when a pair differs or a run of
MINE has no partner in THEIRS.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from recipe_arena.comparison_plan import run_finished
from recipe_arena.eval.scores import read_eval_scores
from recipe_arena.rundir import read_metrics

IGNORED = ("time", "seconds", "reward/chat/judge_memo_hits")
"""Metrics not compared: the record's clock time and the stage's elapsed seconds, and the
LM judge's memo hits (evaluations fill the judge's memo that training's rewards then
hit, so the count follows the cadence while the rewards do not). Metrics whose name ends
in ``_time_s`` (the step's timings) are left out too."""


@dataclass(frozen=True)
class PairResult:
    """One pair's comparison: the evaluations and metric values both runs have, and the
    first difference found (None when there is none)."""

    mine: str
    theirs: str
    evaluations: int
    values: int
    first_difference: str | None


def settings(run: Path) -> str:
    """The run's settings without its name, folder, resume flag and evaluation cadence, as canonical
    JSON (two runs that differ in ``rl.eval_every`` alone have the same)."""
    cfg: dict[str, Any] = yaml.safe_load((run / "config.yaml").read_text())
    cfg.pop("name", None)
    cfg.pop("out_dir", None)
    cfg.pop("resume", None)
    cfg.get("rl", {}).pop("eval_every", None)
    return json.dumps(cfg, sort_keys=True)


def compared_metrics(run: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """(stage, step) -> the metrics logged there that training decides (``IGNORED`` and
    ``*_time_s`` left out); a step logged twice (a resumed run) keeps its later values."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for rec in read_metrics(run):
        key = (str(rec.get("stage")), int(rec.get("step", -1)))
        kept = {
            k: v
            for k, v in rec.items()
            if k not in ("stage", "step", *IGNORED) and not k.endswith("_time_s")
        }
        out.setdefault(key, {}).update(kept)
    return out


def compare_pair(mine: Path, theirs: Path) -> PairResult:
    """Per-question scores at every evaluation both runs made, and metric values at every
    stage and step both logged (``compared_metrics``)."""
    a = {(r.stage, r.step): r for r in read_eval_scores(mine)}
    b = {(r.stage, r.step): r for r in read_eval_scores(theirs)}
    shared = sorted(set(a) & set(b), key=lambda k: (k[0], k[1]))
    first = next((f"{s} step {t} scores" for s, t in shared if a[(s, t)] != b[(s, t)]), None)
    ma, mb = compared_metrics(mine), compared_metrics(theirs)
    values = 0
    for key in sorted(set(ma) & set(mb)):
        for name in sorted(set(ma[key]) & set(mb[key])):
            values += 1
            if first is None and ma[key][name] != mb[key][name]:
                first = f"{key[0]} step {key[1]} {name}: {ma[key][name]} against {mb[key][name]}"
    return PairResult(mine.name, theirs.name, len(shared), values, first)


def check(mine: Path, theirs: Path) -> tuple[list[PairResult], list[str]]:
    """Every finished run of ``mine`` against its partner in ``theirs`` (the run with the
    same settings; a run of the same folder name is the same run and is skipped).
    Returns the pairs' results and the runs of ``mine`` with no partner."""
    partners: dict[str, list[Path]] = {}
    for run in sorted(p for p in theirs.iterdir() if (p / "config.yaml").exists()):
        partners.setdefault(settings(run), []).append(run)
    results: list[PairResult] = []
    unpaired: list[str] = []
    for run in sorted(p for p in mine.iterdir() if (p / "config.yaml").exists()):
        if not run_finished(run) or (theirs / run.name).exists():
            continue
        found = partners.get(settings(run), [])
        if len(found) != 1:
            unpaired.append(run.name)
            continue
        results.append(compare_pair(run, found[0]))
    return results, unpaired


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mine", type=Path, help="a study's or an export's runs folder")
    ap.add_argument("theirs", type=Path, help="the runs folder of the study at another cadence")
    args = ap.parse_args(argv)
    results, unpaired = check(args.mine, args.theirs)
    for r in results:
        if r.first_difference is not None:
            print(f"{r.mine} against {r.theirs}: differ at {r.first_difference}")
    for name in unpaired:
        print(f"{name}: no run of the same settings in {args.theirs}")
    same = sum(r.first_difference is None for r in results)
    print(
        f"cadence_check: {same} of {len(results)} pairs identical "
        f"({sum(r.evaluations for r in results):,} evaluations and "
        f"{sum(r.values for r in results):,} metric values compared); "
        f"{len(unpaired)} runs unpaired"
    )
    return 0 if same == len(results) and not unpaired else 1


if __name__ == "__main__":
    sys.exit(main())
