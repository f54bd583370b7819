"""The loop learns: OlmoRL raises a real verifier's reward on a random micro model."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipe_arena.advantages import CenteredParams
from recipe_arena.config import EngineConfig, RLConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core.backends import LocalBackend
from recipe_arena.core.loop import LoopSettings, train
from recipe_arena.core.prompts import PromptSource
from recipe_arena.data.micro import generate_split
from recipe_arena.models.factory import TinyModelSpec, build_micro, load_checkpoint, save_checkpoint
from recipe_arena.wiring import (
    ActorSettings,
    ActorSpec,
    LearnerSettings,
    advantage_hook,
    make_learner,
)


@pytest.mark.slow
def test_async_olmorl_raises_the_lowercase_reward(tmp_path: Path) -> None:
    """IFEval 'use only lowercase letters' prompts, 8-token answers from a random model:
    with ~26 of ~100 characters uppercase, P(pass) ~ (0.74)^8 ~ 0.09 at best, and the
    measured start is ~0.01. Fifteen async steps (N = 8, G = 8, in-flight updates,
    max_staleness 1) must lift the mean reward of the last three steps above 0.05 and
    above three times that of the first three. Slow: about 40 s."""
    spec = TinyModelSpec(
        hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=256
    )
    m, t = build_micro(spec, seed=0)
    init = save_checkpoint(m, t, tmp_path / "init")
    rows = [
        r
        for r in generate_split("ifeval", "train", 400, seed=0)
        if r.ground_truth["instruction_id_list"] == ["change_case:english_lowercase"]
    ]
    model, tok = load_checkpoint(init)
    learner = make_learner(model, LearnerSettings(rl=RLConfig(lr=1e-2, temperature=1.0)))
    actor = ActorSpec(
        str(init),
        "torch",
        EngineConfig(max_batch_size=64),
        RewardsConfig(workers=1),
        ActorSettings(group_size=8, temperature=1.0, max_new_tokens=8, max_groups_in_engine=8),
    )
    rl = RLConfig(steps=15, prompts_per_step=8, max_staleness=1, pipeline_depth=2)
    s = LoopSettings(
        rl=rl, advantages=advantage_hook(CenteredParams()), seed=0, pad_id=int(tok.pad_token_id)
    )
    recs = train(learner, LocalBackend(actor), PromptSource(rows, {"ifeval": 1.0}, 0), s)
    first = sum(r.metrics["reward/mean"] for r in recs[:3]) / 3
    last = sum(r.metrics["reward/mean"] for r in recs[-3:]) / 3
    assert last > 0.05 and last > 3 * first, (first, last)
