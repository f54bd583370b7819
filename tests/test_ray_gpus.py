"""Ray places actors and reserves the learner's share with the GPU requests the dry
run's plan lays out (core.placement): fractional GPUs on one GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipe_arena.compose import load_config
from recipe_arena.core.placement import role_gpus
from recipe_arena.plan import placement_plan


def test_one_gpu_plan_holds_the_learner_and_an_actor() -> None:
    """learner_gpus=0.5 and gpus_per_actor=0.5 with one actor: both on node 0, GPU 0,
    one node in all; the requests are the ones the Ray backend places (0.5 each, 1.0 in
    all). Whole GPUs above 1 must be whole: 1.5 is refused naming the value."""
    cfg = load_config(
        [
            "budget=smoke",
            "cluster.backend=ray",
            "cluster.learner_gpus=0.5",
            "cluster.gpus_per_actor=0.5",
            "rl.num_actors=1",
        ]
    )
    req = role_gpus(cfg.cluster, cfg.rl.num_actors)
    assert req.roles() == {"learner": 0.5, "actor-0": 0.5} and req.total == 1.0
    plan = placement_plan(cfg)
    assert plan.nodes == 1
    assert {(p.role, p.node, p.gpus) for p in plan.placements} == {
        ("learner", 0, (0,)),
        ("actor-0", 0, (0,)),
    }
    from recipe_arena.compose import ConfigError

    with pytest.raises(ConfigError, match="1.5"):
        load_config(["budget=smoke", "cluster.learner_gpus=1.5"])


@pytest.mark.ray
@pytest.mark.slow
def test_ray_backend_places_fractional_gpus(tmp_path: Path) -> None:
    """A local Ray cluster declaring one GPU: the learner's 0.5 is reserved in a
    placement group and the actor is placed with 0.5, so no GPU is left for a third
    role; the actor runs (its engine on the CPU: the GPU is Ray's bookkeeping here).
    Slow: Ray and an actor process take most of a minute on two cores."""
    import ray

    from recipe_arena.config import RunConfig
    from recipe_arena.core.backends import RayBackend
    from recipe_arena.models.factory import TinyModelSpec, build_micro, save_checkpoint
    from recipe_arena.wiring import actor_spec

    spec = TinyModelSpec(
        hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=64
    )
    model, tok = build_micro(spec, seed=0)
    init = save_checkpoint(model, tok, tmp_path / "init")
    cfg = RunConfig.model_validate(
        {
            "cluster": {"backend": "ray", "learner_gpus": 0.5, "gpus_per_actor": 0.5},
            "rewards": {"workers": 1},
        }
    )
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False)
    try:
        backend = RayBackend(
            actor_spec(cfg, init, 0), 1, gpus=role_gpus(cfg.cluster, cfg.rl.num_actors)
        )
        try:
            assert backend.actor_stats()[0]["tokens"] == 0.0  # the actor is up
            assert ray.available_resources().get("GPU", 0.0) == 0.0
        finally:
            backend.start()
            backend.shutdown()
    finally:
        ray.shutdown()
