"""The committed study files and their exports: each file declares what its header says
(rows, seeds, the settings it shares with the study it varies), and each export under
docs/studies holds every run its report reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recipe_arena.study import prepare
from recipe_arena.study_spec import load_spec

STUDIES = Path(__file__).resolve().parent.parent / "studies"


def test_table_9_2_study_file_is_valid() -> None:
    """The committed study declares its rows with OLMo 3's choice first, at least 4
    seeds, an A/A control on the stale-data row, and findings that name real arms."""
    spec = load_spec(STUDIES / "table_9_2.yaml")
    rows = {r.name: r for r in spec.rows}
    assert len(spec.seeds) >= 4
    assert rows["stale_data"].arms[0] == "tis" and rows["stale_data"].aa
    assert rows["stale_data"].regimes == ["default", "stressed"]
    assert {f.row for f in spec.findings} <= set(rows)


def test_the_96_step_study_differs_from_table_9_2_only_where_it_says() -> None:
    """studies/table_9_2_96.yaml is Table 9.2 with the default regime run to its plateau
    and evaluated every 12 steps: the same seeds (the stressed regime on 8), threads,
    kernels, findings and contrasts, every row the same but the pipeline row's steps; the common settings
    those of table_9_2.yaml less its evaluation cadence, which each regime sets: 12 in
    the default regime at 96 RL steps, 6 in the stressed regime as before. A row or
    finding added to one file and not the other, or a setting that drifts, would make
    its report answer another question than the one its header states."""
    base = load_spec(STUDIES / "table_9_2.yaml")
    long = load_spec(STUDIES / "table_9_2_96.yaml")
    same = ("seeds", "threads", "isa", "findings", "contrasts")
    assert all(getattr(long, k) == getattr(base, k) for k in same)
    assert base.regime_seeds == {} and long.regime_seeds == {"stressed": 8}
    assert base.common == [*long.common[:1], "rl.eval_every=6", *long.common[1:]]
    assert base.regimes["default"] == []
    assert long.regimes == {
        "default": ["rl.steps=96", "rl.eval_every=12"],
        "stressed": [*base.regimes["stressed"], "rl.eval_every=6"],
    }
    b_rows = {r.name: r for r in base.rows}
    l_rows = {r.name: r for r in long.rows}
    assert list(l_rows) == list(b_rows)
    differ = [n for n in b_rows if l_rows[n] != b_rows[n]]
    assert differ == ["pipeline"]
    pipe = l_rows["pipeline"].arms
    assert isinstance(pipe, dict) and list(pipe) == list(b_rows["pipeline"].arms)
    assert pipe["specialists_mopd"][-2:] == ["specialists.steps=32", "distill.steps=44"]
    assert pipe["rl_opd"][-2:] == ["rl.steps=72", "distill.steps=31"]


def test_the_96_step_study_shares_the_stressed_runs_of_table_9_2(tmp_path: Path) -> None:
    """Moving the evaluation cadence from the common settings into the regimes must leave
    the stressed regime's runs those of table_9_2.yaml (same keys: the study makes them
    once for both, and its report reads the runs the 48-step study's does), while every
    default-regime run is new (96 steps, evaluated every 12: another run than either
    study's at 48 steps or the plateau pilot's every 6). The 96-step study runs the
    stressed regime on 8 seeds: its first 4 (and their A/A control) are the 48-step
    study's runs, by name and key."""
    base = load_spec(STUDIES / "table_9_2.yaml")
    long = load_spec(STUDIES / "table_9_2_96.yaml")
    pilot = load_spec(STUDIES / "table_9_2_plateau.yaml")
    _, b = prepare(base, tmp_path / "b", rows=["stale_data"])
    _, l_ = prepare(long, tmp_path / "l", rows=["stale_data"])
    _, p = prepare(pilot, tmp_path / "p", rows=None)
    stressed = [d for d in b if "stressed" in d]
    default = [d for d in b if "stressed" not in d]
    assert len(stressed) == len(default) == 1
    assert len(b[stressed[0]]) == 24 and len(l_[stressed[0]]) == 48
    assert b[stressed[0]].items() <= l_[stressed[0]].items()
    new = set(l_[default[0]].values())
    assert len(new) == 24
    assert not new & set(b[default[0]].values())
    assert not new & {k for links in p.values() for k in links.values()}


def test_the_eval_cadence_study_varies_the_cadence_alone(tmp_path: Path) -> None:
    """studies/eval_cadence.yaml asks whether evaluating every 12 steps instead of 6
    changes training (docs/results.md cites its answer when it says a 96-step study
    evaluated every 12 would report the same final scores). Its two runs must then
    differ in rl.eval_every and nothing else, and be two runs, not one shared: were
    the cadence left out of the run key, both arms would link to one run and the
    comparison would be of a run with itself."""
    spec = load_spec(STUDIES / "eval_cadence.yaml")
    jobs, links = prepare(spec, tmp_path, rows=None)
    assert len(jobs) == 2
    a, b = ({x for x in j.args if not x.startswith("name=")} for j in jobs)
    assert sorted(a ^ b) == ["rl.eval_every=12", "rl.eval_every=6"]
    assert sorted(next(iter(links.values()))) == ["every_12-s0", "every_6-s0"]


@pytest.mark.slow
def test_table_9_2_every_run_composes(tmp_path: Path) -> None:
    """Every run of every row composes into a valid configuration, and arms of one row
    are paired (same world, evaluation and budget); no run is made."""
    spec = load_spec(STUDIES / "table_9_2.yaml")
    jobs, links = prepare(spec, tmp_path, rows=None)
    per_row = sum(len(v) for v in links.values())
    assert len(jobs) < per_row  # shared baselines are made once


def test_committed_study_exports_hold_every_run_their_rows_read() -> None:
    """``recipe-arena report docs/studies/<name>`` re-renders from the repository alone:
    every run a row links to is in the export, with its per-question scores and
    metrics. An ignore rule that caught the exports' ``runs/`` folders left a clone with
    the reports and none of the runs they read, and this test red."""
    exports = sorted(p.parent for p in (STUDIES.parent / "docs" / "studies").glob("*/study.json"))
    assert exports
    for root in exports:
        links = sorted((root / "rows").glob("*/runs/*"))
        assert links, root
        for link in links:
            run = link.resolve()
            assert run.parent == (root / "runs").resolve(), link
            assert (run / "eval_scores.jsonl.gz").is_file() and (
                run / "metrics.jsonl.gz"
            ).is_file(), link


EXPORTS = STUDIES.parent / "docs" / "studies"
QUICK_EXPORT = "table_9_2_96_seeds_4-7"
"""The export re-rendered in the default suite (6 rows, about 20 s); the others are slow."""


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(d.name, marks=() if d.name == QUICK_EXPORT else pytest.mark.slow)
        for d in sorted(f.parent for f in EXPORTS.glob("*/study.json"))
    ],
)
def test_a_committed_study_report_renders_again_from_its_artifacts(
    name: str, tmp_path: Path
) -> None:
    """``recipe-arena report`` on a copy of the committed export writes the committed
    report.md again, byte for byte: every published effect, interval, MDE and verdict
    follows from the committed per-question scores under today's statistics. A change
    to the tests, the estimates or the tables that moves a published figure fails here
    until the export is rendered again and the docs that quote it are updated."""
    import shutil

    from recipe_arena.cli import main

    copy = tmp_path / name
    shutil.copytree(EXPORTS / name, copy, symlinks=True)
    assert main(["report", str(copy)]) == 0
    assert (copy / "report.md").read_text() == (EXPORTS / name / "report.md").read_text()


def test_a_study_report_says_whether_its_kernels_were_capped(tmp_path: Path) -> None:
    """The report states the cap its runs were made under, as its study.json records it:
    the committed plateau export (``isa: avx2``) says "capped at avx2"; the same export
    with the cap recorded as null (``isa=none``) says the kernels were not capped, and
    nothing else of the report moves; the 48-step export, whose study.json predates the
    cap and does not say, states nothing about kernels."""
    import json
    import shutil

    from recipe_arena.cli import main

    published = (EXPORTS / "table_9_2_plateau" / "report.md").read_text()
    assert "Every run's CPU kernels were capped at avx2." in published
    copy = tmp_path / "plateau"
    shutil.copytree(EXPORTS / "table_9_2_plateau", copy, symlinks=True)
    spec = json.loads((copy / "study.json").read_text())
    (copy / "study.json").write_text(json.dumps({**spec, "isa": None}))
    assert main(["report", str(copy)]) == 0
    uncapped = (copy / "report.md").read_text()
    assert "were not capped: each used the widest set its machine has" in uncapped
    assert (
        uncapped.replace(
            "The runs' CPU kernels were not capped: each used the widest set its machine has.",
            "Every run's CPU kernels were capped at avx2.",
        )
        == published
    )
    assert "isa" not in json.loads((EXPORTS / "table_9_2" / "study.json").read_text())
    assert "CPU kernels" not in (EXPORTS / "table_9_2" / "report.md").read_text()


PIN = "rewards.judge_markers=special"
"""The setting the committed studies pin: the judge read chat markers as its special
tokens when their runs were made (``comparison_plan.LATER_DEFAULTS``)."""


def _current_form(export: Path) -> tuple[Any, list[str]] | None:
    """The study file an export was made from, on the export's seeds, and the export's
    row folders, when the file still declares what the export's study.json records but
    for seeds and the pinned ``PIN``; None for an export made from an earlier form of
    its file (table_9_2_96_seeds_4-7, evaluated every 6 steps)."""
    import json

    from recipe_arena.study import with_seeds

    stored = json.loads((export / "study.json").read_text())
    spec = with_seeds(load_spec(STUDIES / f"{stored['name']}.yaml"), str(stored["seeds"])[1:-1])
    now = spec.model_dump(mode="json")
    assert PIN in now["common"], stored["name"]
    now["common"] = [c for c in now["common"] if c != PIN]
    now["regime_seeds"] = {**now["regime_seeds"], **stored.get("regime_seeds", {})}
    if any(now.get(k) != v for k, v in stored.items() if k != "isa"):
        return None
    return spec, sorted(d.name for d in (export / "rows").iterdir())


@pytest.mark.parametrize(
    "rows",
    ["first", pytest.param("all", marks=pytest.mark.slow)],
)
def test_the_study_files_still_name_their_committed_runs(rows: str, tmp_path: Path) -> None:
    """Each committed export's runs are those its study file makes today, key for key:
    a rerun of a row (``rows=...``, with the export's seeds) finds or remakes exactly
    the runs the report read. A setting added since, at a value its runs were not made
    under, or pinned in the file but not left out of the keys, would give every run a
    new key and the rerun would check nothing. The default suite checks each export's
    first row (a study's ``prepare`` of every row takes about 5 s); ``-m slow`` all."""
    checked = 0
    for export in sorted(EXPORTS.glob("*/study.json")):
        form = _current_form(export.parent)
        if form is None:
            continue
        spec, row_dirs = form
        wanted = row_dirs[:1] if rows == "first" else row_dirs
        names = sorted({d.split(".")[0] for d in wanted})
        _, links = prepare(spec, tmp_path / export.parent.name, rows=names)
        for row_dir in wanted:
            runs = (export.parent / "rows" / row_dir / "runs").iterdir()
            on_disk = {link.name: link.resolve().name for link in runs}
            assert on_disk.items() <= links[row_dir].items(), (export.parent.name, row_dir)
            checked += 1
    assert checked >= 5
