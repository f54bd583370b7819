"""Recipes differ in configuration alone, one axis at a time.

Swapping one strategy axis on the command line (``staleness=deepseek_mask``) changes
that axis of the resolved config and nothing else; the Kimi K3 and DeepSeek recipes
differ from OLMo 3's only in their strategy axes and their pipeline (and their name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recipe_arena.compose import load_config
from recipe_arena.helptext import axis_options

RECIPES = Path(__file__).resolve().parents[1] / "recipes"
REGISTRIES = axis_options()
"""Strategy axis (the config field, and its folder of recipes/) -> its registry's
entries: advantage, staleness, length_control, policy_loss."""
AXES = tuple(REGISTRIES)
OPTIONS = [(axis, p.stem) for axis in AXES for p in sorted((RECIPES / axis).glob("*.yaml"))]
NO_RECIPE_FILE = {("advantage", "distill")}
"""Registry entries no recipe file selects: the distillation stages set the distill
advantage for their own RL stages (a plain RL stage has no teacher's logprobs)."""


def _flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out or {prefix.rstrip("."): {}}
    return {prefix.rstrip("."): obj}


def _diff(overrides: list[str], base: list[str]) -> set[str]:
    a = _flat(load_config(overrides).model_dump(mode="json"))
    b = _flat(load_config(base).model_dump(mode="json"))
    return {k for k in a.keys() | b.keys() if a.get(k, "<absent>") != b.get(k, "<absent>")}


def test_every_axis_has_its_options() -> None:
    """Every registry entry has its YAML file under recipes/<axis>/ and every file there
    names an entry (its file name is the entry's name), derived from the registries;
    the shipped ones are among them (staleness 5, length control 3)."""
    assert set(AXES) >= {"advantage", "staleness", "length_control", "policy_loss"}
    for axis, names in REGISTRIES.items():
        files = {o for a, o in OPTIONS if a == axis}
        assert files == set(names) - {o for a, o in NO_RECIPE_FILE if a == axis}, axis
        for option in files:
            assert load_config([f"{axis}={option}"]).model_dump()[axis]["name"] == option
    assert {"none", "tis", "kimi_regularizer", "shared_quant", "deepseek_mask"} <= set(
        REGISTRIES["staleness"]
    )
    assert {"none", "token_budget", "discard_early_short"} <= set(REGISTRIES["length_control"])


@pytest.mark.parametrize("recipe", ["olmo3_think", "kimi_k3", "deepseek_v4_flash"])
@pytest.mark.parametrize(("axis", "option"), OPTIONS)
def test_swapping_one_axis_changes_only_that_axis(recipe: str, axis: str, option: str) -> None:
    changed = _diff([f"recipe={recipe}", f"{axis}={option}"], [f"recipe={recipe}"])
    assert all(k.split(".")[0] == axis for k in changed), changed
    resolved = load_config([f"recipe={recipe}", f"{axis}={option}"])
    assert getattr(resolved, axis).name == option


@pytest.mark.parametrize(
    ("recipe", "axes", "fields"),
    [
        (
            "kimi_k3",
            {"staleness": "shared_quant", "length_control": "token_budget"},
            {"rewards.chat": "rubric_tournament"},
        ),
        (
            "deepseek_v4_flash",
            {"staleness": "deepseek_mask", "length_control": "discard_early_short"},
            {},
        ),
    ],
)
def test_recipes_differ_from_olmo3_only_in_their_strategies(
    recipe: str, axes: dict[str, str], fields: dict[str, str]
) -> None:
    """Besides the strategy axes and the pipeline, Kimi K3 differs in its chat reward
    alone (its rubric tournament, ``recipes/rewards/kimi_k3.yaml``)."""
    changed = _diff([f"recipe={recipe}"], ["recipe=olmo3_think"])
    assert {k for k in changed if k.split(".")[0] not in {"recipe", "pipeline", *axes}} == set(
        fields
    ), changed
    cfg = _flat(load_config([f"recipe={recipe}"]).model_dump(mode="json"))
    assert {k: cfg[k] for k in fields} == fields
    resolved = load_config([f"recipe={recipe}"])
    assert {a: getattr(resolved, a).name for a in axes} == axes


# The metric each shipped option's run must log (its strategy ran in the RL stage); an
# option not listed is run and its config checked.
SIGNATURE = {
    ("staleness", "none"): None,
    ("staleness", "tis"): "staleness/tis_weight_mean",
    ("staleness", "kimi_regularizer"): "staleness/kimi_regularizer",
    ("staleness", "shared_quant"): "staleness/quant_error",
    ("staleness", "deepseek_mask"): "staleness/masked_token_frac",
    ("staleness", "icepop"): "staleness/icepop_high_frac",
    ("staleness", "seq_mask_tis"): "staleness/seq_masked_frac",
    ("staleness", "m2po"): "staleness/m2po_masked_frac",
    ("policy_loss", "olmo"): "loss/clip_high_frac",
    ("policy_loss", "gspo"): "loss/clip_high_frac",
    ("policy_loss", "cispo"): "loss/clip_high_frac",
    ("policy_loss", "gmpo"): "loss/clip_frac",
    ("length_control", "none"): None,
    ("length_control", "token_budget"): "length/budget_violations",
    ("length_control", "discard_early_short"): "length/discarded_short",
    ("advantage", "centered"): "advantage/abs_mean",
    ("advantage", "standard"): "advantage/abs_mean",
}


@pytest.mark.slow
@pytest.mark.parametrize(("axis", "option"), OPTIONS)
def test_every_axis_option_runs_through_the_cli(axis: str, option: str, tmp_path: Path) -> None:
    """``recipe-arena run recipe=olmo3_think budget=smoke <axis>=<option>`` finishes, its
    resolved config holds the option, and the RL stage logged the strategy's metric.
    Slow: one smoke run each (about 30 s on an idle machine)."""
    import json
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "recipe_arena.cli",
            "run",
            "recipe=olmo3_think",
            "budget=smoke",
            f"{axis}={option}",
            f"out_dir={tmp_path}",
            "name=axis",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    run = tmp_path / "axis"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if r["stage"] == "rlvr" and "loss/policy" in r]
    assert steps
    assert f"name: {option}" in (run / "config.yaml").read_text()
    metric = SIGNATURE.get((axis, option))
    if metric is not None:
        assert any(metric in r for r in steps), metric
