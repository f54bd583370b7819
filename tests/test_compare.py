"""`recipe-arena compare`: the plan, the paired-design checks, resuming, the report.

Runs are not trained here (that is the slow test and the smoke command in the README):
run directories are written the way a finished run writes them (config.yaml through
RunDir, stages.json, metrics.jsonl, eval_scores.jsonl) with per-question scores chosen
so that the expected verdicts follow by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from recipe_arena import cli
from recipe_arena.compare import Options, parse, prepare
from recipe_arena.compose import ConfigError, load_config, recipes_dir
from recipe_arena.data.schema import Message, PromptRow
from recipe_arena.eval.report import write_report
from recipe_arena.eval.scores import log_eval_scores
from recipe_arena.rundir import RunDir

ROWS = [
    PromptRow(id=f"{d}-{i}", messages=[Message(role="user", content=f"{d} {i}")], domain=d)  # type: ignore[arg-type]
    for d, n in (("math", 20), ("ifeval", 10))
    for i in range(n)
]


def _write_run(
    root: Path, overrides: list[str], name: str, seed: int, final: list[float], done: bool = True
) -> Path:
    cfg = load_config([*overrides, f"seed={seed}", f"out_dir={root}", f"name={name}"])
    run = RunDir(cfg, root / name)
    stages = list(cfg.pipeline.stages) if done else list(cfg.pipeline.stages)[:2]
    run.write_json("stages.json", {"checkpoint": None, "done": {s: 1.0 for s in stages}})
    if not done:
        return run.path
    for step in range(0, 11):
        run.log("rlvr", step, {"throughput/trained_tokens": 100.0, "reward/mean": 0.1 * step})
        # held-out scores rise along a known curve: share of questions solved
        frac = 0.2 + 0.5 * (1 - np.exp(-step / 3))
        scores = [float(i / len(ROWS) < frac) for i in range(len(ROWS))]
        log_eval_scores(run.path, "rlvr", step, ROWS, scores)
    log_eval_scores(run.path, "eval", 0, ROWS, final)
    return run.path


def test_parse_builds_the_paired_plan() -> None:
    """Two arms on axis staleness, seeds=2 -> seeds (0, 1) for both; aa=true adds the
    baseline on seeds (1000, 1001); budget=smoke applies to every arm."""
    plan, opts = parse(["axis=staleness", "arms=[tis,none]", "seeds=2", "budget=smoke", "aa=true"])
    assert [(a.name, a.overrides, a.seeds, a.control) for a in plan.arms] == [
        ("tis", ["staleness=tis"], [0, 1], False),
        ("none", ["staleness=none"], [0, 1], False),
        ("tis_aa", ["staleness=tis"], [1000, 1001], True),
    ]
    assert plan.baseline == "tis" and plan.common == ["budget=smoke"]
    assert [(a.name, s) for a, s in plan.runs()][:3] == [("tis", 0), ("none", 0), ("tis_aa", 1000)]
    assert opts.jobs >= 1


@pytest.mark.parametrize(
    ("args", "must_name"),
    [
        (["axis=staleness"], "arms is required"),
        (["axis=staleness", "arms=[tis]"], "at least two arms"),
        (["axis=staleness", "arms=[tis,bogus]", "budget=smoke"], "arm bogus"),
        (["axis=staleness", "arms=[tis,none]", "seeds=0"], "seeds"),
        (["axis=staleness", "arms=[tis,none]", "baseline=x"], "baseline='x'"),
        (["axis=staleness", "arms=[tis,none]", "staleness=tis"], "also set for every arm"),
    ],
)
def test_bad_comparisons_exit_2_with_one_line(
    args: list[str], must_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["compare", *args, f"out_dir={tmp_path}"]) == 2
    err = capsys.readouterr().err.strip()
    assert must_name in err and "\n" not in err


def _recipes_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of recipes/ with a new staleness option and a recipe that evaluates on
    other prompts, used through the normal override path (RECIPE_ARENA_RECIPES)."""
    root = tmp_path / "recipes"
    shutil.copytree(recipes_dir(), root)
    (root / "staleness" / "tis_cap3.yaml").write_text("name: tis\ncap: 3.0\n")
    base = (root / "olmo3_think.yaml").read_text().replace("recipe: olmo3_think", "recipe: other")
    (root / "other.yaml").write_text(base + "eval: {max_prompts_per_domain: 3}\n")
    monkeypatch.setenv("RECIPE_ARENA_RECIPES", str(root))
    return root


def test_arms_that_would_see_other_eval_prompts_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """olmo3_think against a recipe that evaluates 3 prompts per domain instead of 50:
    not paired (different evaluation prompts), refused naming the key, before any run."""
    _recipes_copy(tmp_path, monkeypatch)
    plan, opts = parse(["arms=[olmo3_think,other]", f"out_dir={tmp_path}"])
    with pytest.raises(ConfigError, match="eval.max_prompts_per_domain"):
        prepare(plan, opts)
    assert not (tmp_path / "compare-olmo3_think-recipes-default").exists()


def test_resume_skips_finished_runs_and_resumes_interrupted_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new option file of recipes/staleness/ works as an arm. tis-s0 finished (every
    stage in stages.json): not run again; tis_cap3-s0 interrupted after two stages:
    resumed (resume=true); the seed-1 runs never started: run fresh. tis_cap3-s1 finished
    but its per-question scores were deleted: not run again (resuming would bring them
    not back), and said so, naming its folder. A second call with other arms is refused:
    the directory holds another comparison."""
    _recipes_copy(tmp_path, monkeypatch)
    items = [
        "axis=staleness",
        "arms=[tis,tis_cap3]",
        "seeds=2",
        "budget=smoke",
        f"out_dir={tmp_path}",
    ]
    plan, opts = parse(items)
    root = tmp_path / "compare-olmo3_think-staleness-smoke"
    common = ["budget=smoke"]
    _write_run(root / "runs", [*common, "staleness=tis"], "tis-s0", 0, [0.0] * len(ROWS))
    _write_run(root / "runs", [*common, "staleness=tis_cap3"], "tis_cap3-s0", 0, [], done=False)
    lost = _write_run(
        root / "runs", [*common, "staleness=tis_cap3"], "tis_cap3-s1", 1, [0.0] * len(ROWS)
    )
    (lost / "eval_scores.jsonl").unlink()
    got_root, jobs, _ = prepare(plan, opts)
    assert got_root == root
    assert [(j.name, "resume=true" in j.args) for j in jobs] == [
        ("tis_cap3-s0", True),
        ("tis-s1", False),
    ]
    said = capsys.readouterr().err
    assert "tis-s0: finished earlier, not run again" in said
    assert "tis_cap3-s1: finished earlier, but its per-question scores are gone" in said
    assert f"(remove {lost} to run it again)" in said
    assert "staleness=tis_cap3" in jobs[0].args and "seed=0" in jobs[0].args
    other, _ = parse(
        ["axis=staleness", "arms=[tis,none]", "seeds=2", "budget=smoke", f"out_dir={tmp_path}"]
    )
    with pytest.raises(ConfigError, match="different comparison"):
        prepare(other, Options(1, tmp_path, None))


def test_report_of_a_comparison_directory(tmp_path: Path) -> None:
    """Baseline tis and arm none, 3 seeds each, 20 math and 10 ifeval questions.
    Math: the baseline solves questions 0-3 (plus question 4 in seed 1), the arm 0-15
    (plus 16 in seed 2): a paired difference of about +0.6 with little seed noise, so
    significant (p far below 0.05 even on 2 degrees of freedom). ifeval: both solve
    questions 20-24 in every seed: difference 0 on every question, which reads
    "identical scores" (not "inside the noise": its MDE 0 is no precision). The A/A control has
    the baseline's scores: difference 0, not a false positive. Only the staleness
    option differs between the arms (its name, and tis's cap, which none lacks); the HTML page has real tables and embedded plots."""
    root = tmp_path / "cmp"
    items = ["axis=staleness", "arms=[tis,none]", "seeds=3", "budget=smoke", "aa=true"]
    plan, _ = parse([*items, f"out_dir={tmp_path}", "name=cmp"])
    (root).mkdir()
    (root / "comparison.json").write_text(json.dumps(plan.to_json()))
    for seed in range(3):
        base = [float(i < 4 or (seed == 1 and i == 4) or 20 <= i < 25) for i in range(30)]
        arm = [float(i < 16 or (seed == 2 and i == 16) or 20 <= i < 25) for i in range(30)]
        _write_run(root / "runs", ["budget=smoke", "staleness=tis"], f"tis-s{seed}", seed, base)
        _write_run(root / "runs", ["budget=smoke", "staleness=none"], f"none-s{seed}", seed, arm)
        _write_run(
            root / "runs",
            ["budget=smoke", "staleness=tis"],
            f"tis_aa-s{seed + 1000}",
            seed + 1000,
            base,
        )
    md = write_report(root).read_text()
    assert "| staleness.name | tis | none |" in md
    settings = md.split("## Settings that differ between arms")[1].split("##")[0]
    # the header row, staleness.name and tis's own cap (none has none: shown as '-')
    assert settings.count("\n| ") == 3 and "| staleness.cap | 2 | - |" in settings
    paired = md.split("## Paired differences")[1].split("\n## ")[0]
    rows = {
        tuple(c.strip() for c in line.split("|")[1:3]): line
        for line in paired.splitlines()
        if line.startswith("| none |")
    }
    assert rows[("none", "math")].endswith("| significant |")
    assert "+0.600" in rows[("none", "math")]
    assert rows[("none", "ifeval")].endswith("| identical scores |")
    assert "| tis_aa | math | +0.000" in md and "inside the noise (as it should be)" in md
    assert "0 of 3 A/A tests significant" in md
    assert "| tis | 3 | 0.217 [" in md  # math (4 + 5 + 4) / 60 = 0.217, with its interval
    html = (root / "report.html").read_text()
    assert "<table>" in html and "|---|" not in html
    assert html.count('src="data:image/png;base64,') >= 3
    assert "http://" not in html and "https://" not in html


def test_report_of_loose_run_directories_groups_them_into_arms(tmp_path: Path) -> None:
    """Four run directories, two with staleness=tis (seeds 0, 1) and two with
    staleness=none: two arms, the first path's the baseline, the other named by the
    setting where it differs; an unfinished run is listed as not finished, not used.
    The report goes to comparison/ beside the runs."""
    paths = []
    for name, override in (("a0", "tis"), ("b0", "none"), ("a1", "tis"), ("b1", "none")):
        seed = int(name[1])
        scores = [float(i < 10) for i in range(30)]
        paths.append(
            _write_run(tmp_path, ["budget=smoke", f"staleness={override}"], name, seed, scores)
        )
    paths.append(_write_run(tmp_path, ["budget=smoke"], "c0", 0, [], done=False))
    md = write_report(*paths).read_text()
    assert (tmp_path / "comparison" / "report.html").exists()
    assert "| baseline | baseline | 0, 1 | c0 |" in md
    assert "| staleness.name=none | arm | 0, 1 | - |" in md
    assert "| staleness.name=none | math | +0.000" in md


@pytest.mark.slow
def test_smoke_comparison_end_to_end(tmp_path: Path) -> None:
    """The acceptance command through the real entry point: 2 arms x 2 seeds of real
    smoke runs, then the same command again, which runs nothing (every run finished)
    and rewrites the same report. The report shows both arms with intervals, the
    paired test and a settings table where only the staleness option differs."""
    import subprocess
    import sys

    cmd = [
        sys.executable, "-m", "recipe_arena.cli", "compare", "recipe=olmo3_think",
        "axis=staleness", "arms=[tis,none]", "seeds=2", "budget=smoke", f"out_dir={tmp_path}",
    ]  # fmt: skip
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=3000)
    assert first.returncode == 0, first.stderr[-3000:]
    root = tmp_path / "compare-olmo3_think-staleness-smoke"
    md = (root / "report.md").read_text()
    assert "| staleness.name | tis | none |" in md
    settings = md.split("## Settings that differ between arms")[1].split("##")[0]
    assert settings.count("\n| ") == 3 and "| staleness.cap | 2 | - |" in settings
    for arm in ("tis", "none"):
        assert f"| {arm} | 2 | " in md  # pass@1 row: 2 seeds, then intervals
    assert "| none | mean | " in md and "p (Holm)" in md
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0
    assert second.stderr.count("finished earlier, not run again") == 4
    assert "started" not in second.stderr


@pytest.mark.slow
def test_a_learning_rate_of_zero_freezes_the_policy(tmp_path: Path) -> None:
    """rl.lr=0, the control arm that cannot learn: a smoke run through the real entry
    point trains its RL steps (at least one group trained, per the ledger; the same
    smoke run at the default rate moves the weights, test_recipe_smoke), and AdamW
    steps with lr 0 change nothing: the final weights equal those RL started from, bit
    for bit."""
    import subprocess
    import sys

    from safetensors.torch import load_file

    cmd = [
        sys.executable, "-m", "recipe_arena.cli", "run", "budget=smoke", "rl.lr=0",
        f"out_dir={tmp_path}", "name=frozen",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stages = json.loads((tmp_path / "frozen" / "stages.json").read_text())
    ledger = (tmp_path / "frozen" / "rlvr_ledger.jsonl").read_text().splitlines()
    assert sum(len(json.loads(line)["trained"]) for line in ledger) > 0
    start = load_file(str(Path(stages["inputs"]["rlvr"]) / "model.safetensors"))
    final = load_file(str(Path(stages["checkpoint"]) / "model.safetensors"))
    assert all((start[k] == final[k]).all() for k in final)


def test_one_seeds_significant_difference_is_said_to_be_that_seeds() -> None:
    """A difference significant over one seed's questions speaks of that draw alone (its
    interval has no seed-to-seed noise in it): the comparison report says so and the
    study report gives no verdict; with two seeds both say what the test says."""
    from recipe_arena.eval import stats
    from recipe_arena.eval.comparison import Comparison
    from recipe_arena.eval.comparison_report import _verdict
    from recipe_arena.eval.study_report import verdict

    def comp(seeds: int) -> Comparison:
        test = stats.PairedTest(
            stats.Estimate(0.1, 0.05, 0.15), 0.02, 1.0, 0.001, 0.05, seeds, 300, 0.0
        )
        return Comparison("none", "math", test, 0.002, False)

    assert _verdict(comp(1)) == "significant for this seed only"
    assert verdict(comp(1)) == "one seed so far: no verdict"
    assert _verdict(comp(2)) == "significant" and verdict(comp(2)) == "better"


def test_a_difference_significant_only_before_holm_says_so() -> None:
    """p 0.01 but Holm-corrected 0.06 (several alternatives): the interval shown (the
    uncorrected one) excludes 0, so the verdict names the rule that kept it inside the
    noise; a claim of no effect is then not refuted, a claim of an effect not confirmed."""
    from recipe_arena.eval import stats
    from recipe_arena.eval.comparison import Comparison
    from recipe_arena.eval.study_report import HOLM_ONLY, judge, verdict

    test = stats.PairedTest(stats.Estimate(-0.1, -0.17, -0.03), 0.02, 3.0, 0.01, 0.06, 4, 300, 0.01)
    v = verdict(Comparison("none", "math", test, 0.06, False))
    assert v == HOLM_ONLY
    assert judge("worse", v, 0.06, (-0.17, -0.03)).startswith("cannot tell")
    assert judge("same", v, 0.06, (-0.17, -0.03)).startswith("cannot tell")


def test_the_runs_table_links_a_study_rows_runs_through_its_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A study row keeps its runs as links under ``runs/`` to the study's shared run
    directories, and its report is rendered with paths relative to the working directory.
    The runs table then links ``runs/<arm>-s<seed>/report.html`` from the row's report,
    where it resolves; a run without a page (an export) gets no link. Resolving the link
    first (the study's ``runs/r<key>-s<seed>``, outside the row) gave a path relative to
    the working directory, broken from the report."""
    from recipe_arena.eval.comparison import ArmData, RunData
    from recipe_arena.eval.comparison_report import _runs_table
    from recipe_arena.eval.scores import ScoreRecord

    monkeypatch.chdir(tmp_path)
    row = Path("study") / "rows" / "r.default"
    (row / "runs").mkdir(parents=True)
    for key in ("rk-s0", "rk-s1"):
        (Path("study") / "runs" / key).mkdir(parents=True)
        (row / "runs" / f"a-{key[-2:]}").symlink_to(Path("../../../runs") / key)
    (Path("study") / "runs" / "rk-s0" / "report.html").write_text("<html></html>")
    score = ScoreRecord("rlvr", 0, [], [], [], [])
    runs = [RunData(row / "runs" / f"a-s{s}", s, {}, score, [], [], 1.0) for s in (0, 1)]
    table = _runs_table([ArmData("a", runs)], row)
    assert table[4] == "| a | 0 | runs/a-s0 | [report](runs/a-s0/report.html) |"
    assert table[5] == "| a | 1 | runs/a-s1 | - |"
    assert (row / "runs" / "a-s0" / "report.html").is_file()
