"""One smoke run per recipe through the real entry point on the micro world.

Each runs `recipe-arena run recipe=NAME budget=smoke` as a user would, then checks that
every configured stage ran in order, that the RL stage changed the parameters it started
from, and that the run directory holds its files (config, metrics, stages.json, held-out
scores, reports). Recipes with a pipeline of their own are checked against it: OLMo 3
Think is SFT -> DPO -> RLVR with RL starting from the DPO checkpoint; RL-Zero starts RL
from the base model with the simple template; Kimi K3 trains its specialists and distils
them into the SFT checkpoint (MOPD); DeepSeek-V4.1-Flash distils its RL checkpoint into
the SFT checkpoint (OPD).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file

RECIPES = sorted(p.stem for p in (Path(__file__).parents[1] / "recipes").glob("*.yaml"))
PIPELINES = {
    "olmo3_think": ["base", "sft", "dpo", "prompt_filter", "rlvr", "eval"],
    "olmo3_rl_zero": ["base", "prompt_filter", "rlvr", "eval"],
    "kimi_k3": ["base", "sft", "specialists", "mopd", "eval"],
    "deepseek_v4_flash": ["base", "sft", "prompt_filter", "rlvr", "opd", "eval"],
}
"""The stages a recipe runs by default, where a test pins them."""


def _changed(a: Path, b: Path) -> bool:
    """Whether two checkpoint directories hold different weights."""
    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    return any(not (wa[k] == wb[k]).all() for k in wb)


KNOWN_FAILING: dict[str, str] = {}
"""Recipes whose smoke run is known not to meet every check below, with the reason;
strict, so the mark must go once the run meets them."""


@pytest.mark.parametrize(
    "recipe",
    [
        pytest.param(r, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILING[r]))
        if r in KNOWN_FAILING
        else r
        for r in RECIPES
    ],
)
def test_recipe_smoke_run(recipe: str, tmp_path: Path) -> None:
    # The default cache: the base model is built once per machine and shared with `make run`.
    env = dict(os.environ)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "recipe_arena.cli",
            "run",
            f"recipe={recipe}",
            "budget=smoke",
            f"out_dir={tmp_path}",
            "name=smoke",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    run = tmp_path / "smoke"
    for name in (
        "config.yaml",
        "metrics.jsonl",
        "stages.json",
        "eval.json",
        "report.md",
        "report.html",
    ):
        assert (run / name).exists(), name
    stages = json.loads((run / "stages.json").read_text())
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    # every configured stage finished (stages.json is written with sorted keys; the order
    # shows in each stage's recorded input: RL from DPO's checkpoint, and so on, below)
    assert sorted(stages["done"]) == sorted(cfg["pipeline"]["stages"])
    assert cfg["pipeline"]["stages"] == PIPELINES.get(recipe, cfg["pipeline"]["stages"])
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    evals = json.loads((run / "eval.json").read_text())
    assert 0.0 <= evals["eval/mean/pass@1"] <= 1.0
    if recipe == "kimi_k3":  # no rlvr stage: specialists, then MOPD
        _check_mopd(run, records, stages, cfg)
        return
    # Every RL step ran, sampled, kept groups with reward variance and trained on them
    # (the smoke world is sized so that its policy is right on some samples and wrong on
    # others: recipes/budget/smoke.yaml); the scorer's counters reached the step's metrics.
    ran = [r for r in records if r["stage"] == "rlvr" and "sampling/groups_received" in r]
    assert len(ran) == cfg["rl"]["steps"]
    for r in ran:
        assert r["sampling/groups_kept"] > 0 and "loss/policy" in r, r
        assert r["reward/math/checks"] > 0, r
    # The RL stage's last evaluation splits its change from the RL start into the rows it
    # fixed and the rows it broke: change = fixed - broken, per domain.
    start_eval, last_eval = (r for r in records if r["stage"] == "rlvr" and "eval/math/pass@1" in r)
    for d in ("math", "code", "ifeval", "chat"):
        change = last_eval[f"eval/{d}/pass@1"] - start_eval[f"eval/{d}/pass@1"]
        assert last_eval[f"eval/{d}/fixed"] - last_eval[f"eval/{d}/broken"] == pytest.approx(change)
    # Per-question scores of every evaluation: the RL start, its last evaluation and the
    # eval stage's; each domain's mean is the pass@1 the metrics report.
    from recipe_arena.eval.scores import final_scores, read_eval_scores, rl_evaluations

    scored = read_eval_scores(run)
    assert [r.step for r in rl_evaluations(scored)] == [0, last_eval["step"]]
    final = final_scores(scored)
    assert final is not None and final.stage == "eval"
    for d in ("math", "code", "ifeval", "chat"):
        mine = [s for s, dom in zip(final.scores, final.domains, strict=True) if dom == d]
        assert sum(mine) / len(mine) == pytest.approx(evals[f"eval/{d}/pass@1"])
    # RL changed the weights it started from (and the run's final weights are not RL's
    # start either).
    rl_final = run / "checkpoints" / "rlvr" / "final"
    assert _changed(Path(stages["inputs"]["rlvr"]), rl_final)
    assert _changed(Path(stages["inputs"]["rlvr"]), Path(stages["checkpoint"]))
    if "dpo" in stages["done"]:  # DPO trained from SFT, and RL started from DPO
        assert Path(stages["inputs"]["rlvr"]).name == "dpo"
        dpo = json.loads((run / "dpo.json").read_text())
        assert all(size["steps_run"] >= 1 for size in dpo["sizes"])
        # the kept checkpoint differs from SFT iff a trained size validated above the start
        # (size 0 is the start itself, which early stopping keeps on a tie)
        kept_start = dpo["chosen"]["size"] == 0
        assert kept_start != _changed(Path(stages["inputs"]["dpo"]), Path(stages["inputs"]["rlvr"]))
        assert dpo["length_delta"]["all"]["before"]["n"] >= dpo["length_delta"]["all"]["after"]["n"]
        assert "Length difference" in (run / "report.md").read_text()
    if recipe == "deepseek_v4_flash":  # OPD: the RL output teaches the RL input
        assert stages["inputs"]["opd"] == str(run / "checkpoints" / "rlvr" / "final")
        _check_distilled(run, records, "opd", ["any"], stages["inputs"]["rlvr"], cfg)
    if recipe == "olmo3_rl_zero":  # RL from the base model, prompts without chat markers
        assert stages["inputs"]["rlvr"] == stages["inputs"]["prompt_filter"]
        assert Path(stages["inputs"]["rlvr"]).parent.name == "base"  # the base model cache
        assert cfg["prompt_template"] == "simple"
    _check_log(proc.stdout + proc.stderr, run, start_eval, last_eval, stages)


def _check_mopd(run: Path, records: list[dict], stages: dict, cfg: dict) -> None:
    """One specialist per configured effort (budget=smoke: math at low and high), each
    run specialists.steps (1) steps from the SFT checkpoint and saved as a teacher;
    MOPD then trains the SFT checkpoint itself (the specialists stage leaves it current)."""
    sft = stages["inputs"]["specialists"]
    assert Path(sft).name == "sft" and stages["inputs"]["mopd"] == sft
    routes = [
        f"{d}/{e}" for d in cfg["specialists"]["domains"] for e in cfg["specialists"]["efforts"]
    ]
    assert routes == ["math/low", "math/high"]
    assert sorted(stages["teachers"]) == sorted(routes)
    for route in routes:
        stage = "specialist_" + route.replace("/", "_")
        assert stages["teachers"][route] == str(run / "checkpoints" / stage / "final")
        # Like an RL step (above): each specialist ran its one step, kept groups and
        # trained on them, so the teacher differs from the SFT checkpoint it started from.
        steps = [r for r in records if r["stage"] == stage and "sampling/groups_received" in r]
        assert len(steps) == cfg["specialists"]["steps"] == 1
        for r in steps:
            assert r["sampling/groups_kept"] > 0 and "loss/policy" in r, (stage, r)
        assert _changed(Path(sft), Path(stages["teachers"][route]))
    _check_distilled(run, records, "mopd", ["math-low", "math-high"], sft, cfg)
    assert "Specialists: held-out pass@1" in (run / "report.md").read_text()


def _check_distilled(
    run: Path, records: list[dict], stage: str, teachers: list[str], student: str, cfg: dict
) -> None:
    """distill.steps (2) steps, each with per-token gaps of the teachers it met (named
    by route) and none other; the student's weights moved; each teacher is compared with
    the student on its route's held-out prompts; the report shows both."""
    steps = [r for r in records if r["stage"] == stage and "loss/policy" in r]
    assert len(steps) == cfg["distill"]["steps"] == 2
    met = {k.split("/")[1] for r in steps for k in r if k.startswith("distill/")} - {"all"}
    assert met and met <= set(teachers), met
    assert all(r["distill/all/tokens"] > 0 for r in steps)
    final = json.loads((run / "stages.json").read_text())["checkpoint"]
    assert Path(final) == run / "checkpoints" / stage / "final"
    assert _changed(Path(student), Path(final))
    compared = next(r for r in records if r["stage"] == stage and any("route/" in k for k in r))
    for t in teachers:
        assert 0.0 <= compared[f"route/{t}/math/teacher"] <= 1.0
        assert 0.0 <= compared[f"route/{t}/math/student"] <= 1.0
    assert f"{stage}: per-token gap" in (run / "report.md").read_text()


def _check_log(log: str, run: Path, start_eval: dict, last_eval: dict, stages: dict) -> None:
    """The captured log (stderr is not a terminal here) reads as lines: no carriage
    returns, no library progress bars (transformers' checkpoint bars, tqdm's '|###|'
    bars), no warning line twice; the RL bar line carries the latest held-out result;
    the closing summary names the report, RL start -> end per domain with the change
    (end - start, from metrics.jsonl) and a wall time for every finished stage."""
    assert "\r" not in log
    lines = log.splitlines()
    for bar in ("Loading weights", "Writing model shards", "%|"):
        assert not [ln for ln in lines if bar in ln], bar
    warned = [ln for ln in lines if "warn" in ln.lower()]
    assert len(warned) == len(set(warned)), warned
    rl_bar = [ln for ln in lines if ln.startswith("rlvr:")]
    assert rl_bar and "held-out @" in rl_bar[-1]
    assert f"run finished: {run}" in lines
    assert f"  report      {run / 'report.html'}  (and report.md)" in lines
    for d in ("math", "code", "ifeval", "chat"):
        before, after = start_eval[f"eval/{d}/pass@1"], last_eval[f"eval/{d}/pass@1"]
        row = f"{d:<14} {before:>8.3f}  {after:>8.3f}  {after - before:+.3f}"
        assert any(ln.strip().startswith(row) for ln in lines), row
    times = next(ln for ln in lines if ln.startswith("  wall time"))
    assert all(f" {stage} " in times for stage in stages["done"])
