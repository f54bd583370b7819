"""``recipe-arena report`` on a study folder handed over damaged or hand-edited: one of
its committed artifacts cut short, edited, or no longer what a run writes. The report
stops with one line naming the file (exit status 2), never a traceback, and never
renders figures from the part of a run's evaluations it could read. The folder is a
copy of one row of the committed Table 9.2 export (docs/studies/table_9_2), which is
never edited in place."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXPORT = Path(__file__).resolve().parent.parent / "docs" / "studies" / "table_9_2"
ROW = "advantage"


def _one_row(dest: Path) -> Path:
    """A study folder holding the committed study's ``ROW`` alone (8 runs): the same
    report code, seconds instead of minutes."""
    spec = json.loads((EXPORT / "study.json").read_text())
    spec["rows"] = [r for r in spec["rows"] if r["name"] == ROW]
    spec["findings"] = [f for f in spec["findings"] if f["row"] == ROW]
    spec["contrasts"] = []
    dest.mkdir()
    (dest / "study.json").write_text(json.dumps(spec))
    row = EXPORT / "rows" / f"{ROW}.default"
    shutil.copytree(row, dest / "rows" / row.name, symlinks=True)
    for link in (row / "runs").iterdir():
        key = Path(os.readlink(link)).name
        shutil.copytree(EXPORT / "runs" / key, dest / "runs" / key, dirs_exist_ok=True)
    return dest


def _report(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recipe_arena.cli", "report", str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _run(root: Path) -> Path:
    """The run the row's alternative made on seed 1."""
    return (root / "rows" / f"{ROW}.default" / "runs" / "standard-s1").resolve()


def _edit_scores(run: Path, edit) -> None:  # type: ignore[no-untyped-def]
    """eval_scores.jsonl.gz of ``run`` rewritten as ``edit`` makes its lines (a list of
    the file's lines, each ending in a newline)."""
    packed = run / "eval_scores.jsonl.gz"
    lines = gzip.decompress(packed.read_bytes()).decode().splitlines(keepends=True)
    packed.write_bytes(gzip.compress("".join(edit(lines)).encode()))


def _last_record(change) -> object:  # type: ignore[no-untyped-def]
    """An ``_edit_scores`` edit that applies ``change`` to the last record's JSON object."""

    def edit(lines: list[str]) -> list[str]:
        rec = json.loads(lines[-1])
        change(rec)
        return [*lines[:-1], json.dumps(rec) + "\n"]

    return edit


def _edit_plan(run: Path, change) -> None:  # type: ignore[no-untyped-def]
    """The row's comparison.json with ``change`` applied to its second arm."""
    path = run.parent.parent / "rows" / f"{ROW}.default" / "comparison.json"
    plan = json.loads(path.read_text())
    change(plan["arms"][1])
    path.write_text(json.dumps(plan))


def _replace_with_link(path: Path, target: str) -> None:
    path.unlink()
    path.symlink_to(target)


def _cut(run: Path, name: str) -> None:
    data = (run / name).read_bytes()
    (run / name).write_bytes(data[: len(data) // 2])


DAMAGE = {
    # a line torn in the middle: reading stopped there, and the run's final evaluation
    # came from an earlier record (the summary changed with every seed still counted)
    "torn line before the end": (
        lambda run: _edit_scores(run, lambda ls: [*ls[:-3], ls[-3][:40] + "\n", *ls[-2:]]),
        ("eval_scores.jsonl.gz line", "not an evaluation record"),
    ),
    # a finished run wrote its last record whole: a cut one is damage, not a crash
    "last line cut": (
        lambda run: _edit_scores(run, lambda ls: [*ls[:-1], ls[-1][:200]]),
        ("eval_scores.jsonl.gz line", "not an evaluation record"),
    ),
    "scores file cut short": (
        lambda run: _cut(run, "eval_scores.jsonl.gz"),
        ("eval_scores.jsonl.gz", "cannot be read whole"),
    ),
    "a score of 7": (
        lambda run: _edit_scores(run, _last_record(lambda r: r["scores"].__setitem__(0, 7.0))),
        ("score 7.0 is not a pass@1",),
    ),
    "one score dropped": (
        lambda run: _edit_scores(run, _last_record(lambda r: r["scores"].pop())),
        ("ids but",),
    ),
    "scores field renamed": (
        lambda run: _edit_scores(run, _last_record(lambda r: r.update(x=r.pop("scores")))),
        ("not an evaluation record ('scores')",),
    ),
    "metrics cut short": (
        lambda run: _cut(run, "metrics.jsonl.gz"),
        ("metrics.jsonl", "cannot be read whole"),
    ),
    "metrics missing": (
        lambda run: (run / "metrics.jsonl.gz").unlink(),
        ("metrics.jsonl", "cannot be read whole"),
    ),
    "config not YAML": (
        lambda run: (run / "config.yaml").write_text("pipeline: [\n"),
        ("config.yaml: not a YAML config",),
    ),
    # read whole before: the report grew in memory until it was killed
    "config a link to /dev/zero": (
        lambda run: _replace_with_link(run / "config.yaml", "/dev/zero"),
        ("config.yaml: not a YAML config", "not a regular file"),
    ),
    # read whole before: a line of zeros that never ends
    "metrics a link to /dev/zero": (
        lambda run: (
            (run / "metrics.jsonl.gz").unlink(),
            (run / "metrics.jsonl").symlink_to("/dev/zero"),
        ),
        ("metrics.jsonl", "cannot be read whole", "not a regular file"),
    ),
    # 40 million records from a 0.5 MB gzip: several GB before
    "metrics a gzip bomb": (
        lambda run: (run / "metrics.jsonl.gz").write_bytes(
            gzip.compress(b"{}\n" * 40_000_000, compresslevel=1)
        ),
        ("metrics.jsonl", "cannot be read whole", "more than 1000000 lines"),
    ),
    "stages.json a list": (
        lambda run: (run / "stages.json").write_text("[]\n"),
        ("stages.json: not a run's record",),
    ),
    "comparison.json without arms": (
        lambda run: (run.parent.parent / "rows" / f"{ROW}.default" / "comparison.json").write_text(
            "{}"
        ),
        ("comparison.json: not a comparison plan",),
    ),
    # an arm named as a path would send the report to read runs outside the folder
    "arm named ../x": (
        lambda run: _edit_plan(run, lambda arm: arm.update(name="../../runs/x")),
        ("comparison.json: not a comparison plan", "is not a run name"),
    ),
    "seeds as strings": (
        lambda run: _edit_plan(run, lambda arm: arm.update(seeds=["0", "1"])),
        ("comparison.json: not a comparison plan", "are not integers"),
    ),
    "comparison.json a link to /dev/zero": (
        lambda run: _replace_with_link(
            run.parent.parent / "rows" / f"{ROW}.default" / "comparison.json", "/dev/zero"
        ),
        ("comparison.json: not a JSON document", "not a regular file"),
    ),
    "study.json cut short": (
        lambda run: _cut(run.parent.parent, "study.json"),
        ("study.json: not a JSON document",),
    ),
}


FIRST = (
    "torn line before the end",
    "a score of 7",
    "arm named ../x",
    "study.json cut short",
    "config a link to /dev/zero",
    "metrics a link to /dev/zero",
)
"""The damages the default suite renders (the one that gave a silently wrong figure, an
edited value, a path, a cut JSON, a file that never ends): each report costs
about 2 s; the rest run with ``-m slow``."""


@pytest.mark.parametrize(
    "damage", [d if d in FIRST else pytest.param(d, marks=pytest.mark.slow) for d in sorted(DAMAGE)]
)
def test_a_damaged_artifact_stops_the_report_in_one_line(tmp_path: Path, damage: str) -> None:
    root = _one_row(tmp_path / "study")
    before = (root / "report.md").read_bytes() if (root / "report.md").exists() else None
    harm, needles = DAMAGE[damage]
    harm(_run(root))
    done = _report(root)
    err = done.stderr.strip()
    assert done.returncode == 2, err
    assert "Traceback" not in err and "\n" not in err, err
    assert err.startswith("recipe-arena: damaged artifact: "), err
    for needle in needles:
        assert needle in err, err
    # no report rendered from the damaged folder
    after = (root / "report.md").read_bytes() if (root / "report.md").exists() else None
    assert after == before


def test_a_run_without_its_scores_is_named_where_its_row_is_reported(tmp_path: Path) -> None:
    """A run whose per-question scores are gone is left out of its row, and the study
    report says so in that row's section and in the summary's lines of its arm ("3 of 4
    seeds"; the baseline, all counted, is named bare): before, only the row's own report
    named it, and the study's figures came from 3 seeds of 4 with nothing to tell. Both
    say the run finished and lost its scores, which resuming will not bring back (the
    row's report had called it "not finished")."""
    root = _one_row(tmp_path / "study")
    (_run(root) / "eval_scores.jsonl.gz").unlink()
    done = _report(root)
    assert done.returncode == 0, done.stderr[-2000:]
    report = (root / "report.md").read_text()
    gone = "standard-s1 (finished, scores gone)"
    assert f"Not counted (not finished, or without per-question scores): {gone};" in report
    (row,) = (root / "rows").iterdir()
    arms = (row / "report.md").read_text().split("## Arms")[1].split("\n## ")[0]
    assert f"| {gone} |" in arms, arms
    summary = report.split("## Summary")[1].split("\n## ")[0]
    lines = [ln for ln in summary.splitlines() if ln.startswith("| ") and "| centered |" in ln]
    assert lines and all("| standard (3 of 4 seeds) |" in ln for ln in lines), lines
