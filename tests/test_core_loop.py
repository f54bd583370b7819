"""The async loop on the local backend, and the synchronous minimal loop beside it.

Real parts throughout: a randomly initialised micro model, the torch engine, the real
ifeval verifier with partial credit (a random character model sometimes avoids commas
and sometimes not, so groups carry reward variance without any training).
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest
import torch

from recipe_arena.advantages import CenteredParams
from recipe_arena.config import EngineConfig, RLConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core.backends import LocalBackend, make_backend, threads_per_op
from recipe_arena.core.learner import Learner
from recipe_arena.core.loop import LoopSettings, train
from recipe_arena.core.minimal_loop import minimal_train
from recipe_arena.core.prompts import PromptSource
from recipe_arena.data.micro import generate_split
from recipe_arena.data.schema import PromptRow
from recipe_arena.models.factory import TinyModelSpec, build_micro, load_checkpoint, save_checkpoint
from recipe_arena.wiring import (
    ActorSettings,
    ActorSpec,
    LearnerSettings,
    advantage_hook,
    make_actor,
    make_learner,
)

SPEC = TinyModelSpec(
    hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=256
)
REWARDS = RewardsConfig(ifeval_partial_credit=True, workers=1)
ACTOR = ActorSettings(group_size=4, temperature=1.0, max_new_tokens=12, max_groups_in_engine=4)


@pytest.fixture(scope="module")
def init_ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model, tok = build_micro(SPEC, seed=0)
    return save_checkpoint(model, tok, tmp_path_factory.mktemp("init") / "model")


@pytest.fixture(scope="module")
def rows() -> list[PromptRow]:
    return generate_split("ifeval", "train", 40, seed=0)


def _settings(steps: int, depth: int, max_staleness: int = 1) -> LoopSettings:
    # A draw cap far above what a batch needs: whether a batch fills is then up to the
    # loop's active sampling, not to how many groups a loaded machine lets go stale.
    rl = RLConfig(
        steps=steps,
        prompts_per_step=2,
        max_staleness=max_staleness,
        pipeline_depth=depth,
        max_resample_factor=64,
    )
    return LoopSettings(rl=rl, advantages=advantage_hook(CenteredParams()), seed=3, pad_id=0)


def _learner(ckpt: Path) -> Learner:
    model, _ = load_checkpoint(ckpt)
    return make_learner(model, LearnerSettings(rl=RLConfig(lr=1e-2, temperature=1.0)))


def _spec(ckpt: Path) -> ActorSpec:
    return ActorSpec(str(ckpt), "torch", EngineConfig(max_batch_size=16), REWARDS, ACTOR)


def test_async_loop_trains_with_in_flight_updates(init_ckpt: Path, rows: list[PromptRow]) -> None:
    """Three steps, two batches in flight, max_staleness 1: the version reaches 3, the
    weights change, every batch holds N = 2 prompts, no trained token lags by more than 1,
    the learner reported each closed batch to the actor's on-batch-closed hook (3 reports,
    each at an engine step count no smaller than the one before), and the stable metric
    names are present."""
    learner = _learner(init_ckpt)
    before = {k: v.clone() for k, v in learner.model.state_dict().items()}
    source = PromptSource(rows, {"ifeval": 1.0}, seed=3)
    backend = LocalBackend(_spec(init_ckpt))
    closed: list[int | None] = []  # the hook records what the actor hands it
    actor = backend.actors[0]
    actor.hooks = dataclasses.replace(actor.hooks, on_batch_closed=closed.append)
    records = train(learner, backend, source, _settings(3, depth=2))
    assert learner.version == 3 and [r.step for r in records] == [1, 2, 3]
    steps = [int(c) for c in closed if c is not None]
    assert len(closed) == 3 and len(steps) == 3 and steps == sorted(steps)
    assert all(len(r.trained) == 2 for r in records)
    assert any(not torch.equal(before[k], v) for k, v in learner.model.state_dict().items())
    for r in records:
        assert r.metrics["staleness/lag_max"] <= 1
        for name in (
            "reward/ifeval/mean",
            "reward/pass_rate",
            "length/p95",
            "loss/clip_high_frac",
            "staleness/tis_capped_frac",
            "staleness/logprob_diff_max",
            "staleness/kl_engine_trainer",
            "throughput/learner_idle_frac",
            "throughput/actor_tokens_per_s",
            "throughput/step_time_s",
            "sampling/zero_variance_groups",
            "sampling/resampled_groups",
        ):
            assert name in r.metrics, name


def test_async_loop_and_minimal_loop_give_the_same_loss(
    init_ckpt: Path, rows: list[PromptRow]
) -> None:
    """pipeline_depth 1 makes the async loop draw exactly what the minimal loop draws
    (same prompts, same per-draw sampling seeds, same weights), so the first step trains
    the same prompts and its loss and gradient norm agree to float tolerance: the two
    loops share their stage functions, not just their intent. The gradient norm is the
    check that cannot pass vacuously: on the first step the ratio is 1, so the token-level
    loss is -sum_i A_i n_i / sum_i n_i over responses i of n_i tokens, which is exactly 0
    whenever every response hits the 12-token cap (advantages sum to 0 in each group), as
    the random model's do on some processors; its gradient -sum A_i grad log p_i is not."""
    s = _settings(1, depth=1, max_staleness=0)
    rec_async = train(
        _learner(init_ckpt),
        LocalBackend(_spec(init_ckpt)),
        PromptSource(rows, {"ifeval": 1.0}, 3),
        s,
    )[0]
    learner = _learner(init_ckpt)
    model, tok = load_checkpoint(init_ckpt)
    actor = make_actor(
        0,
        model,
        tok,
        "torch",
        EngineConfig(max_batch_size=16),
        REWARDS,
        ACTOR,
    )
    try:
        rec_sync = minimal_train(learner, actor, PromptSource(rows, {"ifeval": 1.0}, 3), s)[0]
    finally:
        actor.close()
    assert sorted(rec_async.trained) == sorted(rec_sync.trained)
    assert sorted(rec_async.zero_variance) == sorted(rec_sync.zero_variance)
    assert rec_async.metrics["loss/total"] == pytest.approx(
        rec_sync.metrics["loss/total"], abs=1e-5
    )
    assert rec_async.metrics["loss/grad_norm"] == pytest.approx(
        rec_sync.metrics["loss/grad_norm"], rel=1e-4
    )
    assert rec_async.metrics["loss/grad_norm"] > 0.0


def test_local_actors_and_the_learner_share_the_cores_between_their_ops(init_ckpt: Path) -> None:
    """The cores torch gives one op are split between the learner and the actors' engines
    (at least 1 each): 2 cores and 1 actor: 1; 4 and 1: 2; 4 and 3: 1; 16 and 3: 4; 1
    and 1: 1. A local backend built with torch at 4 threads and 1 actor runs the
    learner's thread and a thread started meanwhile (as an engine's decode thread is) at
    2; after shutdown the learner's thread is back at 4. When generation and training do
    not overlap (``rl.pipeline_depth`` 1: the RL stage passes ``overlap=False``) torch's
    4 threads are left alone."""
    cases = [(2, 1, 1), (4, 1, 2), (4, 3, 1), (16, 3, 4), (1, 1, 1)]
    assert [threads_per_op(c, a) for c, a, _ in cases] == [want for *_, want in cases]
    before = torch.get_num_threads()
    torch.set_num_threads(4)
    try:
        backend = LocalBackend(_spec(init_ckpt))
        seen: list[int] = []
        probe = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        probe.start()
        probe.join()
        assert torch.get_num_threads() == 2 and seen == [2]
        backend.shutdown()
        assert torch.get_num_threads() == 4
        sequential = make_backend("local", _spec(init_ckpt), 1, overlap=False)
        assert torch.get_num_threads() == 4
        sequential.shutdown()
        assert torch.get_num_threads() == 4
    finally:
        torch.set_num_threads(before)
