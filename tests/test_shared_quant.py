"""Shared quantisation through the real actor (torch engine) and learner: with the
engine on int8 weights and the trainer on full precision the two disagree; with both on
the same int8 weights they agree to float rounding. The straight-through forward still
trains the full-precision weights."""

from __future__ import annotations

import pytest
import torch

from recipe_arena.advantages import CenteredParams
from recipe_arena.config import EngineConfig, RLConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core.actor import ActorTask
from recipe_arena.core.batch import build_learner_batch
from recipe_arena.data.micro import generate_split
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.staleness import NoCorrectionParams, SharedQuantParams
from recipe_arena.wiring import (
    ActorSettings,
    LearnerSettings,
    advantage_hook,
    make_actor,
    make_learner,
)


def _sharp_model() -> tuple[torch.nn.Module, object]:
    """A random micro model with its logits scaled up (a random init is near-uniform,
    where no weight error shows in the logprobs)."""
    spec = TinyModelSpec(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128)
    model, tok = build_micro(spec, seed=0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("_proj.weight"):
                p.mul_(4.0)
    return model, tok


@pytest.fixture(scope="module")
def quantised_rollouts() -> tuple[torch.nn.Module, object, object]:
    model, tok = _sharp_model()
    row = generate_split("math", "train", 1, seed=0)[0]
    actor = make_actor(
        0,
        model,
        tok,
        "torch",
        EngineConfig(max_batch_size=8),
        RewardsConfig(workers=1),
        ActorSettings(
            group_size=4,
            temperature=1.0,
            max_new_tokens=24,
            staleness=SharedQuantParams(quant_bits=8),
        ),
    )
    try:
        groups = actor.rollouts([ActorTask(row, seed=5, tag="q")])
    finally:
        actor.close()
    batch = build_learner_batch(groups, advantage_hook(CenteredParams()), int(tok.pad_token_id))
    return model, tok, batch


def test_gap_is_large_with_only_the_engine_quantised_and_vanishes_when_shared(
    quantised_rollouts: tuple[torch.nn.Module, object, object],
) -> None:
    """Same rollouts (sampled by the int8 engine): a full-precision trainer
    (staleness=none) reports a mean |logp_trainer - logp_engine| over 100 times the one a
    trainer on the same int8 weights (staleness=shared_quant) reports, which is float
    rounding (< 1e-4)."""
    model, _, batch = quantised_rollouts
    gaps = {}
    for name, staleness in (("engine_only", NoCorrectionParams()), ("both", SharedQuantParams())):
        learner = make_learner(model, LearnerSettings(rl=RLConfig(), staleness=staleness))
        _, metrics = learner.compute_loss(batch)
        gaps[name] = metrics["staleness/logprob_diff_mean"]
    assert gaps["both"] < 1e-4
    assert gaps["engine_only"] > 100 * gaps["both"], gaps


def test_straight_through_trains_the_full_precision_weights(
    quantised_rollouts: tuple[torch.nn.Module, object, object],
) -> None:
    """One shared_quant step moves the full-precision projection weights (the gradient
    passes the rounding) and reports the weights' relative quantisation error, which for
    int8 per-channel is well under 1% and above 0."""
    import copy

    model, _, batch = quantised_rollouts
    model = copy.deepcopy(model)
    before = model.model.layers[0].self_attn.q_proj.weight.detach().clone()
    learner = make_learner(
        model, LearnerSettings(rl=RLConfig(lr=1e-3), staleness=SharedQuantParams())
    )
    metrics = learner.train_step(batch)
    assert not torch.equal(before, model.model.layers[0].self_attn.q_proj.weight)
    assert 0.0 < metrics["staleness/quant_error"] < 0.01


def test_quantised_weights_and_their_error_by_hand() -> None:
    """2 bits (qmax = 2^1 - 1 = 1), so Q keeps each row's largest entry and rounds the
    rest to 0 or +-that entry. A decoder projection [[0.5, 0.2], [0, 0]]: row 0 has scale
    0.5 and 0.2 / 0.5 = 0.4 rounds to 0, so Q = [0.5, 0]; row 1 is all zero and stays
    zero (its scale is floored above 0, not 0/0 = NaN). The embedding and the 1-D norm
    are not quantised. The error the learner logs (staleness/quant_error) is over the
    quantised weights only: ||Q(W) - W|| / ||W|| = sqrt(0.2^2 / (0.5^2 + 0.2^2)) =
    sqrt(0.04 / 0.29) = 0.371391 (the embedding would add 0.1^2 to both sums). Weights
    that are all zero have error 0, not 0/0."""
    from recipe_arena.staleness.shared_quant import quant_error, quantise_state_dict

    named = {
        "model.layers.0.mlp.down_proj.weight": torch.tensor([[0.5, 0.2], [0.0, 0.0]]),
        "model.embed_tokens.weight": torch.tensor([[3.0, 0.1]]),
        "model.norm.weight": torch.tensor([1.0, 0.3]),
    }
    q = quantise_state_dict(named, bits=2)
    assert torch.equal(q["model.layers.0.mlp.down_proj.weight"], torch.tensor([[0.5, 0], [0, 0]]))
    assert torch.equal(q["model.embed_tokens.weight"], named["model.embed_tokens.weight"])
    assert torch.equal(q["model.norm.weight"], named["model.norm.weight"])
    assert quant_error(named.items(), bits=2) == pytest.approx(0.371391, abs=1e-6)
    zero = [("model.layers.0.self_attn.q_proj.weight", torch.zeros(2, 3))]
    assert quant_error(zero, bits=8) == 0.0
