"""The same RLVR stage on the Ray backend: a local Ray cluster, two actor processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipe_arena.config import RunConfig
from recipe_arena.data.micro import generate_split
from recipe_arena.models.factory import TinyModelSpec, build_micro, load_checkpoint, save_checkpoint
from recipe_arena.rundir import RunDir
from recipe_arena.stages.rlvr import run_rlvr


@pytest.mark.ray
@pytest.mark.slow
def test_rlvr_on_ray_with_two_actors(tmp_path: Path) -> None:
    """cluster.backend=ray, rl.num_actors=2: ray.init() starts a local cluster, two Ray
    actors each load the checkpoint, generate and score; weights go to them through the
    object store after every step. Three optimiser steps run (a random model's groups are
    often all-equal, so a batch may close short after its draw limit), actors generate
    tokens, the weights change, and nothing trained lags by more than max_staleness = 1.
    Slow: starting Ray and two actor processes takes most of a minute on two cores."""
    spec = TinyModelSpec(
        hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=256
    )
    model, tok = build_micro(spec, seed=0)
    init = save_checkpoint(model, tok, tmp_path / "init")
    cfg = RunConfig.model_validate(
        {
            "seed": 1,
            "cluster": {"backend": "ray", "num_cpus": 2},
            "engine": {"max_batch_size": 8},
            "rewards": {"ifeval_partial_credit": True, "workers": 1},
            "rl": {
                "steps": 3,
                "prompts_per_step": 2,
                "group_size": 4,
                "max_new_tokens": 8,
                "num_actors": 2,
                "pipeline_depth": 2,
                "max_staleness": 1,
                "domain_weights": {"ifeval": 1.0},
                "lr": 0.01,
            },
        }
    )
    run = RunDir(cfg, tmp_path / "run")
    final = run_rlvr(cfg, run, init, generate_split("ifeval", "train", 200, seed=0), [])
    records = [json.loads(line) for line in run.metrics_path.read_text().splitlines()]
    steps = [r for r in records if r["stage"] == "rlvr"]
    assert [r["step"] for r in steps] == [1, 2, 3]
    assert all(r["sampling/groups_kept"] >= 1 and r["staleness/lag_max"] <= 1 for r in steps)
    assert steps[-1]["throughput/actor_tokens"] > 0
    trained, _ = load_checkpoint(final)
    before = model.state_dict()
    assert any(not v.equal(before[k]) for k, v in trained.state_dict().items())
