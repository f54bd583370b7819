"""What leaves a study directory: its export (the report and the small per-run artifacts
it reads, for committing) and the check of a rerun against such an export.
``recipe-arena study ... export=DIR`` and ``check=DIR`` call these."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
from pathlib import Path

from recipe_arena.comparison_plan import run_finished

STUDY_FILE = "study.json"
"""The study's resolved spec, as JSON, at the top of a study directory and its export."""


def row_dir_name(row: str, regime: str) -> str:
    """A row's directory under ``rows/`` for one regime: ``<row>.<regime>``."""
    return f"{row}.{regime}"


def say(msg: str) -> None:
    """A line of the study command's progress, on standard error."""
    print(f"study: {msg}", file=sys.stderr, flush=True)


def check_reproduction(mine: Path, theirs: Path, keys: list[str]) -> list[str]:
    """Compare the per-question scores of the runs ``keys`` under ``mine`` with those of
    the same runs under ``theirs`` (a committed export): every evaluation's stage, step,
    questions and scores must be equal. Says what it found; returns the keys that differ
    or that ``theirs`` lacks."""
    from recipe_arena.eval.scores import read_eval_scores

    bad: list[str] = []
    for key in keys:
        ours, other = read_eval_scores(mine / key), read_eval_scores(theirs / key)
        if not other:
            bad.append(key)
            say(f"check: {key}: not in {theirs}")
        elif ours != other:
            bad.append(key)
            first = next(
                (f"{a.stage} step {a.step}" for a, b in zip(ours, other, strict=False) if a != b),
                f"{len(ours)} evaluations against {len(other)}",
            )
            say(f"check: {key}: per-question scores DIFFER from {theirs} (first at {first})")
    same = len(keys) - len(bad)
    say(f"check: {same} of {len(keys)} runs have per-question scores identical to {theirs}")
    return bad


RUN_ARTIFACTS = ("config.yaml", "stages.json", "metrics.jsonl", "eval_scores.jsonl")
"""What a study report reads from each run (``eval.comparison.load_run``). An export
keeps the .jsonl logs gzipped (``rundir.open_log`` reads them): about 30 KB a run
instead of 600."""


def _gzip(src: Path, dest: Path) -> None:
    """``src`` gzipped to ``dest``, the same bytes for the same file (no name or time in
    the header), so a re-export changes nothing that did not change."""
    with (
        open(src, "rb") as f,
        open(dest, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out,
    ):
        shutil.copyfileobj(f, out)


def export_study(root: Path, dest: Path) -> Path:
    """Copy the study at ``root`` to ``dest`` with only what its report reads: study.json,
    each comparison's plan and run links, each linked run's ``RUN_ARTIFACTS``, and the
    rendered reports and figures. ``dest`` is replaced. A run not yet finished (an
    interrupted study) is left out with its link: its partial logs are not a result, and
    a rerun's full scores would never match them."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copy2(root / STUDY_FILE, dest / STUDY_FILE)
    spec = json.loads((root / STUDY_FILE).read_text())
    names = [row_dir_name(r["name"], g) for r in spec["rows"] for g in r["regimes"]]
    needed: set[str] = set()
    for row in [root / "rows" / n for n in names if (root / "rows" / n).is_dir()]:
        out = dest / "rows" / row.name
        (out / "runs").mkdir(parents=True)
        for f in row.iterdir():
            if f.is_file():
                shutil.copy2(f, out / f.name)
        for link in sorted((row / "runs").iterdir()):
            target = Path(os.readlink(link))
            if not run_finished(root / "runs" / target.name):
                continue
            (out / "runs" / link.name).symlink_to(target, target_is_directory=True)
            needed.add(target.name)
    for key in sorted(needed):
        src, out = root / "runs" / key, dest / "runs" / key
        out.mkdir(parents=True)
        for name in RUN_ARTIFACTS:
            if (src / name).exists() and name.endswith(".jsonl"):
                _gzip(src / name, out / f"{name}.gz")
            elif (src / name).exists():
                shutil.copy2(src / name, out / name)
            elif (src / f"{name}.gz").exists():  # a run taken from an export: already packed
                shutil.copy2(src / f"{name}.gz", out / f"{name}.gz")
    for f in root.iterdir():
        if f.is_file() and f.name != STUDY_FILE:
            shutil.copy2(f, dest / f.name)
    return dest
