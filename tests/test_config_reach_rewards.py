"""The rewards section reaches what it names: chat's rubric tournament judges the groups
of the RL actors and of the prompt filter, and each field of ``rewards.label_flip``
changes the rewards an RL actor's finished group hands on."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from recipe_arena import wiring
from recipe_arena.config import EngineConfig, RunConfig
from recipe_arena.config_rewards import LabelFlipConfig, RewardsConfig
from recipe_arena.data.micro import generate_split
from recipe_arena.models.factory import TinyModelSpec, build_micro
from tests.test_config_reach import _same


# ----------------------------------------------------------------------------- chat judge
@pytest.fixture(scope="module")
def tournament_scorer() -> Any:
    from recipe_arena.engines import build_engine
    from recipe_arena.rewards import build_scorer
    from recipe_arena.rewards.judge import EngineGenerator, Judge

    model, tok = build_micro(TinyModelSpec(max_position_embeddings=1024), seed=0)
    gen = EngineGenerator(build_engine("hf", model, tok), tok, max_new_tokens=4)
    cfg = RewardsConfig(chat="rubric_tournament", workers=1)
    with build_scorer(cfg, judge=Judge(gen)) as scorer:
        yield scorer
    gen.close()


def test_rubric_tournament_scores_the_rl_actors_groups(tournament_scorer: Any) -> None:
    """An RL actor's chat group of G = 3 is judged as a tournament: all pairs in both
    orders, 3 x 2 = 6 games (the plain judge would play none)."""
    from recipe_arena.core.actor import ActorTask
    from recipe_arena.wiring import ActorSettings, make_actor

    model, tok = build_micro(TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1), seed=0)
    row = generate_split("chat", "train", 1, seed=0)[0]
    before = tournament_scorer.counts["chat/tournament_games"]
    actor = make_actor(
        0,
        model,
        tok,
        "torch",
        EngineConfig(max_batch_size=4),
        tournament_scorer.cfg,
        ActorSettings(group_size=3, temperature=1.0, max_new_tokens=6),
        scorer=tournament_scorer,
    )
    try:
        actor.rollouts([ActorTask(row, seed=1, tag="t")])
    finally:
        actor.engine.close()
    assert tournament_scorer.counts["chat/tournament_games"] - before == 6


def test_rubric_tournament_scores_the_prompt_filters_groups(tournament_scorer: Any) -> None:
    """The prompt filter's k = 2 rollouts of each of 2 chat prompts are judged as two
    tournaments of 2 x 1 = 2 games each, 4 in all; the math prompt beside them goes to
    its verifier."""
    from recipe_arena.engines import build_engine
    from recipe_arena.stages.prompt_filter import _pass_rates

    model, tok = build_micro(TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1), seed=0)
    rows = generate_split("chat", "train", 2, seed=0) + generate_split("math", "train", 1, seed=0)
    cfg = RunConfig.model_validate(
        {
            "prompt_filter": {"rollouts": 2},
            "rl": {"max_new_tokens": 6},
            "rewards": {"chat": "rubric_tournament"},
        }
    )
    engine = build_engine("torch", model, tok, EngineConfig(max_batch_size=8))
    before = tournament_scorer.counts["chat/tournament_games"]
    try:
        rates = _pass_rates(cfg, engine, tok, tournament_scorer, rows, seed=0)
    finally:
        engine.close()
    assert tournament_scorer.counts["chat/tournament_games"] - before == 4
    assert len(rates) == 3 and all(0.0 <= r <= 1.0 for r in rates)


# ----------------------------------------------------------------------------- label flip
def _label_flip_view(flip: LabelFlipConfig) -> Any:
    """The rewards an RL actor's group-finished hook hands on for a math group of four
    whose verifier paid [1, 0, 1, 0] (seed 7), with the flips it counted."""
    from recipe_arena.core.hooks import FinishedGroup

    settings = wiring.actor_settings(RunConfig(rewards=RewardsConfig(label_flip=flip)))
    hook = wiring.actor_hooks(settings).on_group_finished
    group = FinishedGroup(
        row=generate_split("math", "train", 1, seed=0)[0],
        seed=7,
        rewards_G=torch.tensor([1.0, 0.0, 1.0, 0.0]),
        lengths_G=torch.tensor([3, 3, 3, 3]),
        finish_seconds_G=torch.zeros(4),
        start_versions_G=torch.zeros(4, dtype=torch.long),
        end_versions_G=torch.zeros(4, dtype=torch.long),
        start_steps=(None,) * 4,
        engine_version=0,
    )
    verdict = hook(group) if hook is not None else None
    return None if verdict is None else (verdict.rewards_G, verdict.metrics)


# field -> (a context the field matters in, the changed value)
LABEL_FLIP_CHANGES: dict[str, tuple[dict[str, Any], Any]] = {
    "p": ({}, 1.0),
    "domains": ({"p": 1.0}, ["code"]),
}


def test_every_label_flip_field_is_listed() -> None:
    assert set(LABEL_FLIP_CHANGES) == set(LabelFlipConfig.model_fields)


@pytest.mark.parametrize("field", sorted(LABEL_FLIP_CHANGES))
def test_label_flip_field_reaches_the_actors_rewards(field: str) -> None:
    """rewards.label_flip.p 0 -> 1 turns [1, 0, 1, 0] into [0, 1, 0, 1]; at p = 1,
    domains [code] leaves the math group's [1, 0, 1, 0] as the verifier paid it."""
    context, value = LABEL_FLIP_CHANGES[field]
    base = _label_flip_view(LabelFlipConfig(**context))
    changed = _label_flip_view(LabelFlipConfig(**{**context, field: value}))
    assert not _same(base, changed), f"rewards.label_flip.{field} changed nothing"
