"""Learning speed and compute in comparisons: the area under the held-out curve, the
learner tokens to reach 80% of the baseline's gain, and the learner compute of pipeline
arms (specialists' and distillation stages counted, teachers' scored tokens beside).

Runs are not trained here: run directories are written the way a finished run writes
them (config.yaml through RunDir, stages.json, metrics.jsonl, eval_scores.jsonl), with
held-out curves and trained tokens chosen so that every figure follows by hand. The
comparison directory is a study's row (``study.row_plan``), so the study report is
rendered from the same artifacts, as ``recipe-arena report`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recipe_arena.compose import load_config
from recipe_arena.data.schema import Message, PromptRow
from recipe_arena.eval.comparison import (
    MATCHING_RULE,
    group_runs,
    load_comparison,
)
from recipe_arena.eval.report import write_report
from recipe_arena.eval.scores import log_eval_scores
from recipe_arena.eval.speed import speed_comparisons, trapezoid_auc
from recipe_arena.rundir import RunDir
from recipe_arena.study import row_plan
from recipe_arena.study_export import STUDY_FILE
from recipe_arena.study_spec import StudySpec

ROWS = [
    PromptRow(id=f"{d}-{i}", messages=[Message(role="user", content=f"{d} {i}")], domain=d)  # type: ignore[arg-type]
    for d, n in (("math", 20), ("ifeval", 2))
    for i in range(n)
]
STEPS = [0, 4, 8, 10]
"""Evaluation steps of every curve: every 4 steps and at the last (10): unequal spacing."""
TOKENS = 100.0
"""Trained tokens per step of the RL stage (baseline and slow arm)."""

SPEC = StudySpec.model_validate(
    {
        "name": "speed",
        "seeds": [0, 1, 2],
        "common": ["budget=smoke"],
        "rows": [
            {
                "name": "pipeline",
                "arms": {
                    "mixed_rlvr": [],
                    "slow": ["rl.lr=2e-6"],
                    "specialists_mopd": ["pipeline=specialists_mopd"],
                },
                "design": "Matched on learner tokens by choosing each arm's steps.",
            }
        ],
    }
)
SLOW = {0: 10, 1: 12, 2: 11}
"""Seed -> how many math questions the slow arm solves only from step 8 on."""


def _curve(solved_from: list[int | None]) -> dict[int, list[float]]:
    """Step -> per-question scores: question q scores 1 from step solved_from[q] on."""
    return {t: [float(s is not None and t >= s) for s in solved_from] for t in STEPS}


def _write_run(
    root: Path,
    overrides: list[str],
    name: str,
    seed: int,
    curve: dict[int, list[float]],
    stages: dict[str, list[dict[str, float]]],
    curve_stage: str,
) -> None:
    """A finished run: ``stages`` maps a metrics.jsonl stage to its records of steps
    1, 2, ...; ``curve`` is ``curve_stage``'s held-out evaluations; the final
    evaluation is the curve's last."""
    cfg = load_config([*overrides, f"seed={seed}", f"out_dir={root}", f"name={name}"])
    run = RunDir(cfg, root / name)
    run.write_json(
        "stages.json", {"checkpoint": None, "done": {s: 1.0 for s in cfg.pipeline.stages}}
    )
    for stage, records in stages.items():
        for step, metrics in enumerate(records, start=1):
            run.log(stage, step, metrics)
    for step, scores in curve.items():
        log_eval_scores(run.path, curve_stage, step, ROWS, scores)
    log_eval_scores(run.path, "eval", 0, ROWS, curve[max(curve)])


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study of one row, three arms, seeds 0, 1 and 2, 20 math and 2 ifeval questions
    (ifeval never solved).

    mixed_rlvr (baseline): every math question solved from step 4; RL stage 10 steps of
    100 trained tokens. slow: the same RL stage, but SLOW[seed] math questions solved
    only from step 8 (the rest from 4): the same final scores, a slower curve.
    specialists_mopd: two specialists of 2 steps (50 and 60 trained tokens a step),
    then MOPD of 10 steps (30 trained tokens a step, the teachers scoring the same 30);
    its final policy's curve is MOPD's, every math question solved from MOPD step 4."""
    root = tmp_path_factory.mktemp("study") / "speed"
    row = SPEC.rows[0]
    plan = row_plan(SPEC, row, "default")
    where = root / "rows" / "pipeline.default"
    where.mkdir(parents=True)
    (where / "comparison.json").write_text(json.dumps(plan.to_json()))
    (root / STUDY_FILE).write_text(json.dumps(SPEC.model_dump(mode="json")))
    rl = {"rlvr": [{"throughput/trained_tokens": TOKENS}] * 10}
    arms = {a.name: [*plan.common, *a.overrides] for a in plan.arms}
    for seed in SPEC.seeds:
        runs = where / "runs"
        fast = _curve([4] * 20 + [None] * 2)
        slow = _curve([8] * SLOW[seed] + [4] * (20 - SLOW[seed]) + [None] * 2)
        _write_run(runs, arms["mixed_rlvr"], f"mixed_rlvr-s{seed}", seed, fast, rl, "rlvr")
        _write_run(runs, arms["slow"], f"slow-s{seed}", seed, slow, rl, "rlvr")
        mopd = {
            "specialist_math_low": [{"throughput/trained_tokens": 50.0}] * 2,
            "specialist_math_high": [{"throughput/trained_tokens": 60.0}] * 2,
            "mopd": [{"throughput/trained_tokens": 30.0, "distill/all/tokens": 30.0}] * 10,
        }
        name = f"specialists_mopd-s{seed}"
        _write_run(runs, arms["specialists_mopd"], name, seed, fast, mopd, "mopd")
    return root


def test_trapezoid_area_weighs_unequally_spaced_evaluations() -> None:
    """Steps 0, 4, 8, 10. A question solved from step 4 (scores 0, 1, 1, 1):
    (4 (0 + 1)/2 + 4 (1 + 1)/2 + 2 (1 + 1)/2) / 10 = (2 + 4 + 2) / 10 = 0.8; solved from
    step 8 (0, 0, 1, 1): (0 + 4 (0 + 1)/2 + 2 (1 + 1)/2) / 10 = 0.4. The plain mean of the
    evaluations would give 0.75 and 0.5 (the last, 2-step interval counted as 4); the
    final score, 1 and 1. A flat curve at 0.3 has area 0.3."""
    y_TQ = np.array([[0, 0, 0.3], [1, 0, 0.3], [1, 1, 0.3], [1, 1, 0.3]])
    assert trapezoid_auc(STEPS, y_TQ) == pytest.approx([0.8, 0.4, 0.3])
    with pytest.raises(ValueError, match="increasing steps"):
        trapezoid_auc([0, 4, 4], y_TQ[:3])


def test_area_under_the_curve_is_compared_paired_with_its_interval(study: Path) -> None:
    """slow against mixed_rlvr. Per seed, SLOW[seed] math questions lose 0.8 - 0.4 =
    0.4 of area, the others 0: math difference -0.4 x 10/20 = -0.20 (seed 0),
    -0.4 x 12/20 = -0.24 (seed 1), -0.4 x 11/20 = -0.22 (seed 2), mean -0.220; ifeval 0; mean over domains -0.110.
    The baseline's area: math 0.8, ifeval 0, mean 0.4. The final scores are equal
    (difference 0.000), so a comparison of final scores, or of the plain mean of the
    evaluations (-0.25 x 11/20 = -0.1375 on math), would not give these figures. The
    pipeline arm's final policy is trained by MOPD, not the RL stage: its area is not
    compared, and the report says why."""
    _, arms = load_comparison(study / "rows" / "pipeline.default")
    speed = speed_comparisons(arms)
    assert speed is not None and speed.stage == "rlvr" and speed.steps == STEPS
    assert speed.auc["mixed_rlvr"]["math"].value == pytest.approx(0.8)
    assert speed.auc["mixed_rlvr"]["mean"].value == pytest.approx(0.4)
    by = {(c.arm, c.domain): c.test for c in speed.comps}
    assert by[("slow", "math")].diff.value == pytest.approx(-0.22)
    assert by[("slow", "mean")].diff.value == pytest.approx(-0.11)
    assert by[("slow", "ifeval")].diff.value == pytest.approx(0.0)
    math = by[("slow", "math")]
    assert math.diff.lo < -0.22 < math.diff.hi and math.mde > 0 and math.p < 0.05
    assert set(speed.excluded) == {"specialists_mopd"}
    assert "stage mopd" in speed.excluded["specialists_mopd"]


def test_learner_tokens_to_reach_80_percent_of_the_baseline_gain(study: Path) -> None:
    """Mean over domains (ifeval stays 0): the baseline goes 0 -> 0.5 at step 4 and stays,
    so the target is 0 + 0.8 x 0.5 = 0.4, reached at 0.4/0.5 of the way to step 4's
    400 tokens: 320. slow, seed 0: 0.25 at step 4 (400 tokens), 0.5 at step 8 (800):
    400 + (0.4 - 0.25)/0.25 x 400 = 640; seed 1: 0.2 at step 4, 0.5 at 8: 400 + 0.2/0.3 x
    400 = 666.7; seed 2: 0.225 at step 4: 400 + 0.175/0.275 x 400 = 654.5; mean 653.7,
    333.7 more than the baseline. specialists_mopd: its
    specialists' 220 tokens come before MOPD's first step, then 30 a step: 220 at MOPD
    step 0 (0), 340 at step 4 (0.5): 220 + 0.8 x 120 = 316 in every seed, 4 fewer."""
    _, arms = load_comparison(study / "rows" / "pipeline.default")
    speed = speed_comparisons(arms)
    assert speed is not None
    reach = {r.arm: r for r in speed.reach}
    per_seed = [640, 400 + 0.2 / 0.3 * 400, 400 + 0.175 / 0.275 * 400]
    assert reach["mixed_rlvr"].tokens == pytest.approx([320] * 3)
    assert reach["slow"].tokens == pytest.approx(per_seed)
    assert reach["slow"].estimate is not None and reach["slow"].diff is not None
    assert reach["slow"].estimate.value == pytest.approx(np.mean(per_seed))
    assert reach["slow"].diff.value == pytest.approx(np.mean(per_seed) - 320)
    assert reach["slow"].estimate.lo < 640 and reach["slow"].estimate.hi > per_seed[1]
    assert reach["specialists_mopd"].tokens == pytest.approx([316] * 3)
    assert reach["specialists_mopd"].diff.value == pytest.approx(-4)


def test_pipeline_compute_counts_specialists_and_distillation(study: Path) -> None:
    """specialists_mopd: learner tokens 2 x 50 + 2 x 60 (specialists, 220) + 10 x 30
    (MOPD, 300) = 520; the teachers scored 10 x 30 = 300, reported beside, not added.
    mixed_rlvr: the RL stage's 10 x 100 = 1000, nothing else. An RL-stage-only count
    would give the pipeline 0."""
    _, arms = load_comparison(study / "rows" / "pipeline.default")
    by = {a.name: a for a in arms}
    pipe = by["specialists_mopd"].runs[0]
    assert pipe.curve_stage == "mopd"
    assert pipe.learner_tokens == 520
    assert pipe.specialist_tokens == 220
    assert pipe.distill_tokens == 300
    assert pipe.teacher_tokens == 300
    assert pipe.curve_compute(4) == 220 + 4 * 30
    base = by["mixed_rlvr"].runs[0]
    assert (base.learner_tokens, base.specialist_tokens, base.teacher_tokens) == (1000, 0, 0)


def test_reports_show_speed_compute_and_the_matching_rule(study: Path) -> None:
    """The comparison report has the area table beside the final scores and the compute
    table with its parts; the study report (re-rendered from the artifacts alone) has
    a learning-speed summary whose verdict follows from the interval (slow: worse on
    math, Holm p below 0.05), the row's design note and the matching rule."""
    md = write_report(study).read_text()
    row = (study / "rows" / "pipeline.default" / "report.md").read_text()
    speed = row.split("## Learning speed")[1].split("\n## ")[0]
    assert "| slow | math | -0.220 [" in speed
    assert (
        "| specialists_mopd | 316 [316, 316] | -4 [-4, -4] | s0: 316, s1: 316, s2: 316 |" in speed
    )
    compute = row.split("## Compute\n")[1].split("\n## ")[0]
    assert MATCHING_RULE in compute
    assert "| specialists_mopd | 520 [520, 520] | 220 [220, 220] | 300 [300, 300] | 300" in compute
    summary = md.split("### Learning speed")[1].split("\n## ")[0]
    line = next(x for x in summary.splitlines() if "| slow |" in x)
    assert "-0.220 [" in line and line.endswith("| worse on math, mean |")
    assert "| specialists_mopd" not in summary.split("not compared")[0].split("| slow |")[1]
    assert "not compared" in summary and "stage mopd" in summary
    assert "Matched on learner tokens by choosing each arm's steps." in md
    assert MATCHING_RULE in md
    # the final scores are equal: the final-score summary sees no difference
    final = md.split("## Summary")[1].split("### Learning speed")[0]
    assert "| slow | +0.000 [+0.000, +0.000]" in final


def test_areas_over_other_evaluation_steps_are_refused(tmp_path: Path) -> None:
    """An arm evaluated at steps 0, 4, 8, 12 (rl.steps=12) against a baseline at 0, 4, 8,
    10: their areas average over different spans, so the arm's is not compared and the
    reason names both step lists; its tokens to reach the baseline's gain still are
    (100 a step, solved from step 4 as the baseline: 320 both)."""
    rl = {"rlvr": [{"throughput/trained_tokens": TOKENS}] * 12}
    solved = [1.0] * 20 + [0.0] * 2
    start = [0.0] * 22
    base = {0: start, 4: solved, 8: solved, 10: solved}
    longer = {0: start, 4: solved, 8: solved, 12: solved}
    _write_run(tmp_path, ["budget=smoke"], "base", 0, base, rl, "rlvr")
    _write_run(tmp_path, ["budget=smoke", "rl.steps=12"], "longer", 0, longer, rl, "rlvr")
    arms = group_runs([tmp_path / "base", tmp_path / "longer"])
    speed = speed_comparisons(arms)
    assert speed is not None and not speed.comps
    why = speed.excluded["rl.steps=12"]
    assert "steps [0, 4, 8, 12]" in why and "baseline at [0, 4, 8, 10]" in why
    assert [r.tokens for r in speed.reach] == [pytest.approx([320]), pytest.approx([320])]


def test_an_arm_that_never_reaches_the_target_is_said_so(tmp_path: Path) -> None:
    """The baseline (seed 0) solves every math question from step 4 (target 0.4 on the
    mean over domains); an arm with rl.lr=0 stays at 0: "not reached", no interval and
    no difference, rather than a number. A second pair of seeds (1) where the baseline
    does not gain either has no target: "no target" for both arms there."""
    rl = {"rlvr": [{"throughput/trained_tokens": TOKENS}] * 10}
    fast, flat = _curve([4] * 20 + [None] * 2), _curve([None] * 22)
    _write_run(tmp_path, ["budget=smoke"], "base0", 0, fast, rl, "rlvr")
    _write_run(tmp_path, ["budget=smoke", "rl.lr=0"], "frozen0", 0, flat, rl, "rlvr")
    _write_run(tmp_path, ["budget=smoke"], "base1", 1, flat, rl, "rlvr")
    _write_run(tmp_path, ["budget=smoke", "rl.lr=0"], "frozen1", 1, flat, rl, "rlvr")
    paths = [tmp_path / n for n in ("base0", "frozen0", "base1", "frozen1")]
    md = write_report(*paths).read_text()
    reach = md.split("### Learner tokens to reach 80%")[1].split("\n## ")[0]
    assert (
        "| rl.lr=0.0 | not reached in 1 of 2 seeds (the baseline gained nothing in seed 1) "
        in reach
    )
    assert "| - | s0: not reached, s1: no target |" in reach
    # the baseline's own tokens over the seed with a target (one seed: no spread)
    assert (
        "| baseline | 320 [320, 320] (the baseline gained nothing in seed 1) | +0 [+0, +0] "
        in reach
    )
    assert "s0: 320, s1: no target |" in reach
