"""`recipe-arena study`: a study file's rows become paired comparisons whose identical
runs are made once, and one report covers them all.

The planning tests compose every run's real configuration (no run is made); the slow
test runs a smoke-sized study through the real command, resumes it and re-renders its
report from the artifacts alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from recipe_arena.compose import ConfigError
from recipe_arena.eval.study_report import judge
from recipe_arena.study import prepare, row_plan
from recipe_arena.study_spec import load_spec

STUDY = {
    "name": "tiny",
    "recipe": "olmo3_think",
    "seeds": [0],
    "common": ["budget=smoke", "rl.schedule=deterministic", "rl.steps=2"],
    "regimes": {"default": [], "bf16": ["engine.dtype=bfloat16"]},
    "rows": [
        {"name": "lr", "axis": "rl.lr", "arms": ["1e-5", "0"], "regimes": ["default", "bf16"]},
        {
            "name": "advantage",
            "arms": {"centered": [], "standard": ["advantage=standard"]},
            "aa": True,
        },
    ],
    "findings": [
        {
            "claim": "A learning rate of 0 is worse",
            "row": "lr",
            "arm": "lr_0",
            "domain": "mean",
            "expect": "worse",
        }
    ],
}


def _write(tmp: Path, study: dict) -> Path:
    path = tmp / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


def test_identical_runs_across_rows_are_made_once(tmp_path: Path) -> None:
    """Row lr runs in two regimes (2 arms each), row advantage in the default regime
    (2 arms and an A/A control), one seed: 4 + 3 = 7 arm-runs. The lr row's baseline
    (rl.lr=1e-5, the default) and the advantage row's baseline (centered, the default)
    are the same configuration in the default regime, so they are one run: 6 distinct
    runs to make, and both comparisons link to the shared one."""
    spec = load_spec(_write(tmp_path, STUDY))
    jobs, links = prepare(spec, tmp_path / "out", rows=None)
    assert sorted(links) == ["advantage.default", "lr.bf16", "lr.default"]
    assert len(jobs) == 6
    assert links["lr.default"]["lr_1e-5-s0"] == links["advantage.default"]["centered-s0"]
    assert links["lr.bf16"]["lr_1e-5-s0"] != links["lr.default"]["lr_1e-5-s0"]
    assert links["advantage.default"]["centered_aa-s1000"].endswith("-s1000")
    link = tmp_path / "out" / "rows" / "advantage.default" / "runs" / "centered-s0"
    assert os.readlink(link) == os.path.join(
        "..", "..", "..", "runs", links["lr.default"]["lr_1e-5-s0"]
    )
    # rows= runs only the chosen rows
    jobs, links = prepare(spec, tmp_path / "out2", rows=["advantage"])
    assert sorted(links) == ["advantage.default"] and len(jobs) == 3
    # regimes= runs only the chosen regimes of them: lr's in bfloat16, its two arms
    jobs, links = prepare(spec, tmp_path / "out3", rows=["lr"], regimes=["bf16"])
    assert sorted(links) == ["lr.bf16"] and len(jobs) == 2
    assert all("engine.dtype=bfloat16" in j.args for j in jobs)


def test_row_plan_puts_olmo3s_choice_first() -> None:
    """The first arm is the baseline; an axis given as a config key names its arms
    <key>_<value>, as ``compare`` does; the regime's overrides follow the study's."""
    spec = load_spec_dict(STUDY)
    plan = row_plan(spec, spec.rows[0], "bf16")
    assert plan.baseline == "lr_1e-5" and [a.name for a in plan.arms] == ["lr_1e-5", "lr_0"]
    assert plan.common == [*STUDY["common"], "engine.dtype=bfloat16"]
    plan = row_plan(spec, spec.rows[1], "default")
    assert [a.name for a in plan.arms] == ["centered", "standard", "centered_aa"]
    assert plan.arms[2].control and plan.arms[2].seeds == [1000]


def load_spec_dict(study: dict):  # type: ignore[no-untyped-def]
    from recipe_arena.study_spec import StudySpec

    return StudySpec.model_validate(study)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rows": [{"name": "x", "axis": "rl.lr", "arms": ["1e-5"]}]}, "at least two arms"),
        ({"rows": [{"name": "x", "arms": ["a", "b"]}]}, "arms maps names to overrides"),
        (
            {"rows": [{"name": "x", "axis": "rl.lr", "arms": ["1", "2"], "regimes": ["hot"]}]},
            "regime 'hot' is not one of",
        ),
        ({"seeds": []}, "seeds"),
        ({"regime_notes": {"hot": "made hot"}}, "regime_notes: no regime 'hot'"),
        ({"regime_seeds": {"hot": 4}}, "regime_seeds: no regime 'hot'"),
        ({"seeds": [0, 1], "regime_seeds": {"bf16": 1}}, "bf16 has 1 seeds, fewer than"),
        ({"regime_seeds": {"bf16": 0}}, "greater than or equal to 1"),
        (
            {
                "contrasts": [
                    {
                        "claim": "c",
                        "groups": [{"name": "a", "rows": ["lr"]}, {"name": "b", "rows": ["nope"]}],
                    }
                ]
            },
            "contrast 'c': no row 'nope' run in 'default'",
        ),
        ({"colour": "blue"}, "colour"),
        ({"isa": "avx9"}, "isa"),
    ],
)
def test_a_bad_study_file_is_one_clear_line(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        load_spec(_write(tmp_path, {**STUDY, **change}))
    assert "\n" not in str(e.value)


def test_a_bad_arm_names_its_row_before_any_run(tmp_path: Path) -> None:
    rows = [{"name": "bad", "axis": "staleness", "arms": ["tis", "nope"]}]
    study = {**STUDY, "rows": rows, "findings": []}
    with pytest.raises(ConfigError, match=r"row bad \(default\), arm nope"):
        prepare(load_spec(_write(tmp_path, study)), tmp_path / "out", rows=None)
    with pytest.raises(ConfigError, match="no row 'missing'"):
        prepare(load_spec(_write(tmp_path, STUDY)), tmp_path / "out", rows=["missing"])
    with pytest.raises(ConfigError, match="no regime 'hot'; regimes: bf16, default"):
        prepare(load_spec(_write(tmp_path, STUDY)), tmp_path / "out", None, ["hot"])
    with pytest.raises(ConfigError, match="none of the chosen rows runs in them"):
        prepare(load_spec(_write(tmp_path, STUDY)), tmp_path / "out", ["advantage"], ["bf16"])


def test_a_row_matched_by_design_may_train_different_steps(tmp_path: Path) -> None:
    """Arms with different rl.steps are refused as unpaired, unless the row says its
    budget is matched by a stated design (``budget: design``), which then needs the
    design; the world and evaluation stay checked either way."""
    arms = {"long": [], "short": ["rl.steps=1"]}
    row = {"name": "steps", "arms": arms}
    study = {**STUDY, "rows": [row], "findings": []}
    with pytest.raises(ConfigError, match="rl.steps=1 but the baseline long has 2"):
        prepare(load_spec(_write(tmp_path, study)), tmp_path / "a", rows=None)
    with pytest.raises(ConfigError, match="budget: design needs the design"):
        load_spec(_write(tmp_path, {**study, "rows": [{**row, "budget": "design"}]}))
    matched = {**row, "budget": "design", "design": "short does half the steps"}
    jobs, _ = prepare(
        load_spec(_write(tmp_path, {**study, "rows": [matched]})), tmp_path / "b", None
    )
    assert len(jobs) == 2
    unpaired = {**matched, "arms": {**arms, "other_world": ["world.seed=1"]}}
    with pytest.raises(ConfigError, match="world.seed"):
        prepare(load_spec(_write(tmp_path, {**study, "rows": [unpaired]})), tmp_path / "c", None)


def test_findings_follow_from_the_verdict() -> None:
    """A claim of an effect is confirmed only by a significant effect in its direction,
    refuted by one in the other; a claim of no effect is refuted by any significant one
    and confirmed only when its interval lies within ±0.05: [-0.04, +0.03] confirms,
    [-0.09, +0.03] (inside the noise too, but a 9-point loss not ruled out) cannot tell.
    One seed gives no verdict either way."""
    narrow, wide = (-0.04, 0.03), (-0.09, 0.03)
    assert judge("worse", "worse", 0.05, (-0.2, -0.1)) == "confirms"
    assert judge("worse", "better", 0.05, (0.1, 0.2)) == "refutes (better)"
    assert judge("worse", "inside the noise", 0.05, wide) == "cannot tell at MDE 0.050"
    assert judge("same", "inside the noise", 0.03, narrow).startswith("confirms")
    assert judge("same", "inside the noise", 0.08, wide).startswith("cannot tell")
    assert judge("same", "worse", 0.05, (-0.2, -0.1)) == "refutes (worse)"
    assert judge("worse", "one seed so far: no verdict", 0.01, (-0.2, -0.1)).startswith(
        "cannot tell yet"
    )


def _study(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recipe_arena.cli", *args],
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.mark.slow
@pytest.mark.timeout(2400)  # several smoke runs; slow on a loaded machine
def test_smoke_study_runs_resumes_and_rerenders(tmp_path: Path) -> None:
    """The real command on a smoke study of two rows sharing their baseline (lr: 1e-5
    against 0; advantage: centered against standard), one seed, the default regime:
    3 distinct runs, not 4. The report opens with the summary table (one line per
    alternative), has a section per row and the findings table. Run again, nothing is
    run ("0 to run") and the study is exported without checkpoints; ``recipe-arena
    report`` rewrites the same report from the run artifacts, in place and exported."""
    study = {
        **STUDY,
        "rows": [
            {"name": "lr", "axis": "rl.lr", "arms": ["1e-5", "0"]},
            {"name": "advantage", "arms": {"centered": [], "standard": ["advantage=standard"]}},
        ],
    }
    path = _write(tmp_path, study)
    out = tmp_path / "studies"
    first = _study("study", str(path), f"out_dir={out}", "jobs=1")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "2 comparisons, 3 distinct runs, 3 to run" in first.stderr
    root = out / "tiny"
    assert len([d for d in (root / "runs").iterdir() if d.is_dir()]) == 3  # beside lock files
    report = (root / "report.md").read_text()
    assert "| row | regime | OLMo 3's choice | alternative |" in report
    assert "| lr | default | lr_1e-5 | lr_0 |" in report
    assert "| advantage | default | centered | standard |" in report
    assert "## Findings" in report and "A learning rate of 0 is worse" in report
    html = (root / "report.html").read_text()
    assert "<table>" in html and "http" not in html.split("<body>")[1]
    assert json.loads((root / "study.json").read_text())["name"] == "tiny"
    exported = tmp_path / "docs" / "tiny"
    again = _study("study", str(path), f"out_dir={out}", "jobs=1", f"export={exported}")
    assert again.returncode == 0 and "3 distinct runs, 0 to run" in again.stderr
    assert not list(exported.rglob("checkpoints"))  # artifacts only
    assert list(exported.rglob("eval_scores.jsonl.gz")) and not list(exported.rglob("*.jsonl"))
    check = _study("study", str(path), f"out_dir={out}", "jobs=1", f"check={exported}")
    assert (
        check.returncode == 0 and "3 of 3 runs have per-question scores identical" in check.stderr
    )
    for where in (root, exported):
        (where / "report.md").unlink()
        rerender = _study("report", str(where))
        assert rerender.returncode == 0, rerender.stderr[-2000:]
        assert (where / "report.md").read_text() == report


def test_a_fixed_thread_count_is_part_of_each_run_and_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``threads: 1`` gives every run one torch thread whatever ``jobs``, and keys its
    runs apart from the same study without it (thread counts change floating-point
    sums, so a finished run at another count must not be taken for it). Without it the
    cores are shared among the jobs: 1 each for 2 jobs on 2 cores, torch's default
    (no variable) for one job. A key that ignored threads would make the two plans'
    run names equal; an env that ignored it would leave OMP_NUM_THREADS unset at jobs=1."""
    from recipe_arena.compare import child_env

    free = load_spec(_write(tmp_path, STUDY))
    fixed = load_spec(_write(tmp_path, {**STUDY, "threads": 1}))
    _, free_links = prepare(free, tmp_path / "a", rows=["advantage"])
    _, fixed_links = prepare(fixed, tmp_path / "b", rows=["advantage"])
    free_keys = set(free_links["advantage.default"].values())
    fixed_keys = set(fixed_links["advantage.default"].values())
    assert len(fixed_keys) == len(free_keys) == 3 and not free_keys & fixed_keys
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert child_env(1, 1)["OMP_NUM_THREADS"] == "1"
    assert child_env(3, 2)["MKL_NUM_THREADS"] == "2"
    assert "OMP_NUM_THREADS" not in child_env(1, None)
    cores = os.cpu_count() or 1
    assert child_env(2, None)["OMP_NUM_THREADS"] == str(max(1, cores // 2))


def test_seeds_replaces_the_files_seeds_and_is_checked(tmp_path: Path) -> None:
    """``seeds=4,5`` runs the same study on other draws: each run's seed is one of them
    (the A/A control's are 1004, 1005); a bad list fails in one line before any run."""
    from recipe_arena.study import run_study, with_seeds

    path = _write(tmp_path, STUDY)
    for bad, message in (("a,b", "expected integers"), ("", "at least 1"), ("-1", "greater")):
        with pytest.raises(ConfigError, match=message) as e:
            run_study([str(path), f"seeds={bad}", f"out_dir={tmp_path}"])
        assert "\n" not in str(e.value)
    other = with_seeds(load_spec(path), "4,5")
    _, links = prepare(other, tmp_path / "o", rows=["advantage"])
    seeds = sorted(int(k.rsplit("-s", 1)[1]) for k in links["advantage.default"])
    assert seeds == [4, 4, 5, 5, 1004, 1005]


def test_a_regime_of_more_seeds_runs_them_and_moves_with_seeds(tmp_path: Path) -> None:
    """``regime_seeds: {bf16: 3}`` on seeds [0]: the lr row's bf16 comparison runs both
    arms on seeds 0, 1, 2 while its default one stays on 0; the advantage row's A/A
    control (default regime) stays on 1000. Under ``seeds=4,5`` the bf16 regime keeps
    its 3 seeds after them: 4, 5, 6; under ``seeds=4,5,6,7`` it takes those 4. A regime that took the study's seeds (or the first
    N integers) would give [0] or [0, 1, 2] there, and the header would not say it."""
    from recipe_arena.study import with_seeds

    spec = load_spec(_write(tmp_path, {**STUDY, "regime_seeds": {"bf16": 3}}))
    assert [a.seeds for a in row_plan(spec, spec.rows[0], "bf16").arms] == [[0, 1, 2]] * 2
    assert [a.seeds for a in row_plan(spec, spec.rows[0], "default").arms] == [[0]] * 2
    assert row_plan(spec, spec.rows[1], "default").arms[2].seeds == [1000]
    _, links = prepare(spec, tmp_path / "o", rows=["lr"])
    assert sorted(links["lr.bf16"]) == [f"lr_{v}-s{s}" for v in ("0", "1e-5") for s in (0, 1, 2)]
    assert sorted(links["lr.default"]) == ["lr_0-s0", "lr_1e-5-s0"]
    other = with_seeds(spec, "4,5")
    assert row_plan(other, other.rows[0], "bf16").arms[1].seeds == [4, 5, 6]
    assert row_plan(other, other.rows[0], "default").arms[1].seeds == [4, 5]
    wider = with_seeds(spec, "4,5,6,7")
    assert row_plan(wider, wider.rows[0], "bf16").arms[0].seeds == [4, 5, 6, 7]
    from recipe_arena.eval.study_report import write_study_report

    (tmp_path / "o" / "study.json").write_text(json.dumps(spec.model_dump()))
    header = write_study_report(tmp_path / "o").read_text().split("\n")[2]
    assert header.startswith("Recipe `olmo3_think`, seeds 0 (bf16: 0, 1, 2);"), header


def test_a_rows_time_counts_each_prefix_once(tmp_path: Path) -> None:
    """Two runs of one prefix (base 1 s, sft 10, dpo 5, prompt_filter 4: 20 s, the same
    figures in both as a copied prefix carries them) with RL + eval of 102 s and 50 s:
    own stages 152 s, one prefix of 20 s, 172 s = 2.9 min. A third run of another prefix
    (sft 12 s, no dpo) adds a prefix. Counting the prefix per run would say 192 s."""
    from recipe_arena.eval.study_tables import run_time, time_line

    stages = ["base", "sft", "dpo", "prompt_filter", "rlvr", "eval"]

    def run(name: str, done: dict[str, float], pipeline: list[str]) -> Path:
        path = tmp_path / name
        path.mkdir()
        (path / "stages.json").write_text(json.dumps({"done": done}))
        (path / "config.yaml").write_text(yaml.safe_dump({"pipeline": {"stages": pipeline}}))
        return path

    prefix = {"base": 1.0, "sft": 10.0, "dpo": 5.0, "prompt_filter": 4.0}
    a = run("a", {**prefix, "rlvr": 100.0, "eval": 2.0}, stages)
    b = run("b", {**prefix, "rlvr": 49.0, "eval": 1.0}, stages)
    c = run("c", {"base": 1.0, "sft": 12.0, "rlvr": 30.0}, ["base", "sft", "rlvr"])
    ta, tb = run_time(a), run_time(b)
    assert (ta.own, ta.prefix, tb.own) == (102.0, 20.0, 50.0) and ta.prefix_id == tb.prefix_id
    assert time_line("r | default", {a: ta, b: tb}) == "| r | default | 2 | 152 | 1 | 20 | 2.9 |"
    line = time_line("r | default", {a: ta, b: tb, c: run_time(c)})
    assert line == "| r | default | 3 | 182 | 2 | 33 | 3.6 |"


def test_an_exported_runs_logs_are_gzipped_and_read_the_same(tmp_path: Path) -> None:
    """The export keeps metrics.jsonl and eval_scores.jsonl gzipped; the readers the
    report uses give the same records from the .gz alone (a reader that only knew the
    plain file would find no scores), and two exports are the same bytes (no time in
    the gzip header), so re-exporting an unchanged run changes nothing in git."""
    from recipe_arena.eval.scores import read_eval_scores
    from recipe_arena.rundir import read_metrics
    from recipe_arena.study_export import _gzip

    run, packed = tmp_path / "run", tmp_path / "packed"
    run.mkdir()
    packed.mkdir()
    metrics = [{"stage": "rlvr", "step": s, "loss": 0.5 / (s + 1)} for s in range(3)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    score = {"stage": "rlvr", "step": 4, "ids": ["q0", "q1"], "domains": ["math", "math"]}
    score |= {"sources": ["a", "b"], "scores": [1.0, 0.0]}
    (run / "eval_scores.jsonl").write_text(json.dumps(score) + "\n")
    for name in ("metrics.jsonl", "eval_scores.jsonl"):
        _gzip(run / name, packed / f"{name}.gz")
    assert read_metrics(packed) == read_metrics(run) == metrics
    (scores,) = read_eval_scores(packed)
    assert (scores.step, scores.scores) == (4, [1.0, 0.0]) and read_eval_scores(run) == [scores]
    first = (packed / "metrics.jsonl.gz").read_bytes()
    os.utime(run / "metrics.jsonl", (1, 1))
    _gzip(run / "metrics.jsonl", packed / "metrics.jsonl.gz")
    assert (packed / "metrics.jsonl.gz").read_bytes() == first


def test_the_reproduction_check_finds_one_changed_score(tmp_path: Path) -> None:
    """check=DIR: a run whose per-question scores equal the export's passes (the export
    gzipped, as committed); one score flipped in one evaluation, or a run missing from
    the export, is named. A check that compared only the mean would miss the flip
    (1 + 0 and 0 + 1 have one mean)."""
    from recipe_arena.study_export import _gzip, check_reproduction

    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    for key, scores in (("a", [1.0, 0.0]), ("b", [0.0, 1.0])):
        for where, vals in ((mine, [1.0, 0.0]), (theirs, scores)):
            (where / key).mkdir(parents=True)
            rec = {"stage": "rlvr", "step": 8, "ids": ["q0", "q1"], "domains": ["math"] * 2}
            rec |= {"sources": ["x", "y"], "scores": vals}
            (where / key / "eval_scores.jsonl").write_text(json.dumps(rec) + "\n")
        _gzip(theirs / key / "eval_scores.jsonl", theirs / key / "eval_scores.jsonl.gz")
        (theirs / key / "eval_scores.jsonl").unlink()
    (mine / "c").mkdir()
    assert check_reproduction(mine, theirs, ["a"]) == []
    assert check_reproduction(mine, theirs, ["a", "b", "c"]) == ["b", "c"]


def test_two_runs_that_would_build_one_prefix_are_not_started_together(tmp_path: Path) -> None:
    """While a running job builds prefix X, the next job started is the first waiting
    one that does not need X (Y's, then one without a prefix); with only X's left it
    waits (None); once X is sealed, X's jobs start and copy it. In the committed study
    the runs of each new prefix follow one another, so a plain first-in-first-out
    queue would start two builders of X side by side."""
    from recipe_arena.cache import SEAL
    from recipe_arena.compare import _Job, next_job

    x, y = tmp_path / "x", tmp_path / "y"

    def job(name: str, builds: Path | None) -> _Job:
        return _Job(name, [], tmp_path / f"{name}.log", builds=builds)

    running = [job("x0", x)]
    waiting = [job("x1", x), job("y0", y), job("free", None)]
    assert next_job(waiting, running) == 1
    assert next_job([waiting[0], waiting[2]], running) == 1
    assert next_job([waiting[0]], running) is None
    assert next_job([waiting[0]], []) == 0
    x.mkdir()
    (x / SEAL).write_text("{}")
    assert next_job(waiting, running) == 0


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_study_on_a_cold_cache_builds_the_base_model_first(tmp_path: Path) -> None:
    """With an empty model cache and ``threads: 1``, the base model is built before any
    run, by a run of the base stage alone with the command's own thread settings (as
    ``recipe-arena run`` builds it), and then the study's run copies it: the cache holds
    one base model and the run's log says it found it."""
    cache = tmp_path / "cache"
    study = {
        **STUDY,
        "threads": 1,
        "common": [*STUDY["common"], "rl.steps=1", f"world.cache_dir={cache}"],
        "rows": [{"name": "lr", "axis": "rl.lr", "arms": ["1e-5", "0"]}],
        "findings": [],
    }
    out = tmp_path / "studies"
    done = _study("study", str(_write(tmp_path, study)), f"out_dir={out}", "jobs=2", "rows=lr")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "building the base model first" in done.stderr
    base_log = (out / "tiny" / "logs" / "base.log").read_text()
    assert "stage base:" in base_log
    assert len([p for p in (cache / "base").iterdir() if p.is_dir()]) == 1
    run_logs = [p.read_text() for p in (out / "tiny" / "logs").glob("r*.log")]
    assert run_logs and all("(cached)" in t for t in run_logs)


def test_an_export_leaves_out_runs_that_have_not_finished(tmp_path: Path) -> None:
    """An interrupted study is exported with its finished runs only: a run whose
    stages.json lacks a stage of its pipeline is left out with its row's link (its
    partial scores are not a result, and ``check=`` would compare a rerun's full scores
    with them). An export that copied every linked run would hold ``rB-s0``. The export
    exported again (a study assembled from exported runs, such as a rerun on new seeds
    that reuses another study's) keeps each run's packed logs as they are: an export
    that looked for the unpacked names alone would leave a run with no scores."""
    from recipe_arena.study_export import export_study

    root = tmp_path / "study"
    row = root / "rows" / "r.default"
    (row / "runs").mkdir(parents=True)
    (root / "study.json").write_text(json.dumps({"rows": [{"name": "r", "regimes": ["default"]}]}))
    (row / "comparison.json").write_text("{}")
    for key, done in (("rA-s0", {"base": 1.0, "rlvr": 2.0}), ("rB-s0", {"base": 1.0})):
        run = root / "runs" / key
        run.mkdir(parents=True)
        (run / "config.yaml").write_text("pipeline:\n  stages: [base, rlvr]\n")
        (run / "stages.json").write_text(json.dumps({"done": done}))
        (run / "eval_scores.jsonl").write_text("{}\n")
        (row / "runs" / f"{key[1]}-s0").symlink_to(Path("../../../runs") / key)
    dest = export_study(root, tmp_path / "export")
    assert sorted(p.name for p in (dest / "runs").iterdir()) == ["rA-s0"]
    assert (dest / "runs" / "rA-s0" / "eval_scores.jsonl.gz").is_file()
    links = list((dest / "rows" / "r.default" / "runs").iterdir())
    assert [p.name for p in links] == ["A-s0"] and links[0].resolve().is_dir()
    again = export_study(dest, tmp_path / "again")
    packed = "runs/rA-s0/eval_scores.jsonl.gz"
    assert (again / packed).read_bytes() == (dest / packed).read_bytes()
