"""Each new policy loss and off-policy correction runs as an arm through the real entry
point: ``recipe-arena run recipe=olmo3_rl_zero budget=smoke staleness=<s> policy_loss=<l>``
on the micro world (the command line's ``main``, in the test process: the pipeline a
user's run takes, without a fresh interpreter importing torch, transformers and the
report's libraries again for each arm), RL from the cached smoke base
(``pipeline.stages=[base,rlvr]``), on the deterministic schedule one version behind
(``rl.lag=1``) so the corrections see stale tokens. Three runs cover the three losses
and the three corrections, a pair each, and the precision settings ride along (a
float16 engine with its LM head in float32; a float16 learner with its LM head in
float32). Each run must finish, hold the options in its resolved config, and log, at
every RL step, the loss's and the correction's own metric and the mismatch metrics
every run logs (``staleness.mismatch``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipe_arena.cli import main

MISMATCH = (
    "staleness/kl",
    "staleness/k3_kl",
    "staleness/chi2_token",
    "staleness/rollout_is_eff_sample_size",
    "staleness/correction_masked_frac",
    "staleness/correction_clipped_frac",
)
"""Logged by every run, whatever its correction."""

ARMS = [
    ("icepop", "gspo", [], ("staleness/icepop_high_frac", "loss/clip_high_frac")),
    (
        "m2po",
        "cispo",
        ["engine.dtype=float16", "engine.lm_head_fp32=true"],
        ("staleness/m2po_masked_frac", "loss/clip_high_frac"),
    ),
    (
        "seq_mask_tis",
        "gmpo",
        ["rl.fp16=true", "rl.lm_head_fp32=true"],
        ("staleness/seq_masked_frac", "loss/clip_frac", "loss/grad_scale"),
    ),
]


@pytest.mark.parametrize(("staleness", "loss", "extra", "signature"), ARMS)
def test_new_options_run_as_arms(
    staleness: str, loss: str, extra: list[str], signature: tuple[str, ...], tmp_path: Path
) -> None:
    code = main(
        [
            "run",
            "recipe=olmo3_rl_zero",
            "budget=smoke",
            f"staleness={staleness}",
            f"policy_loss={loss}",
            "pipeline.stages=[base,rlvr]",
            "rl.schedule=deterministic",
            "rl.lag=1",
            *extra,
            f"out_dir={tmp_path}",
            "name=arm",
        ]
    )
    assert code == 0
    run = tmp_path / "arm"
    config = (run / "config.yaml").read_text()
    assert f"name: {staleness}" in config and f"name: {loss}" in config
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if r["stage"] == "rlvr" and "loss/policy" in r]
    assert len(steps) == 2  # budget=smoke: rl.steps 2
    for r in steps:
        for key in (*signature, *MISMATCH):
            assert key in r, key
        assert r["loss/grad_norm"] > 0
    assert steps[-1]["staleness/lag_mean"] == pytest.approx(1.0)
