"""Learner metrics by hand, and one real optimiser step on a fixed batch."""

from __future__ import annotations

import math

import pytest
import torch

from recipe_arena.core.learner import Learner, LearnerSettings, mismatch_metrics
from recipe_arena.core.types import LearnerBatch
from recipe_arena.models.factory import TinyModelSpec, build_micro


def _batch(behavior: list[float], versions: list[int]) -> LearnerBatch:
    n = len(behavior)
    return LearnerBatch(
        tokens_BL=torch.tensor([[8] * (n + 1)]),
        mask_BL=torch.tensor([[0.0] + [1.0] * n]),
        advantages_BL=torch.tensor([[0.0] + [0.625] * n]),
        behavior_logprobs_BL=torch.tensor([[0.0, *behavior]]),
        versions_BL=torch.tensor([[-1, *versions]]),
    )


def _positive_batch() -> LearnerBatch:
    """One sequence: two prompt tokens, three completion tokens with A = +0.625."""
    return LearnerBatch(
        tokens_BL=torch.tensor([[8, 9, 10, 11, 12]]),
        mask_BL=torch.tensor([[0.0, 0.0, 1.0, 1.0, 1.0]]),
        advantages_BL=torch.tensor([[0.0, 0.0, 0.625, 0.625, 0.625]]),
        behavior_logprobs_BL=torch.zeros(1, 5),
        versions_BL=torch.tensor([[-1, -1, 0, 0, 0]]),
    )


def test_mismatch_metrics_by_hand() -> None:
    """trainer - engine = (+0.1, -0.2): mean |d| = 0.15, max 0.2,
    k3 = mean(e^d - d - 1) = ((e^0.1 - 1.1) + (e^-0.2 - 0.8)) / 2;
    learner version 3, token versions (3, 2): lags (0, 1), half each."""
    batch = _batch([-1.1, -0.8], [3, 2])
    trainer = torch.tensor([[0.0, -1.0, -1.0]])
    m = mismatch_metrics(trainer, batch, learner_version=3)
    assert m["staleness/logprob_diff_mean"] == pytest.approx(0.15)
    assert m["staleness/logprob_diff_max"] == pytest.approx(0.2)
    k3 = ((math.exp(0.1) - 1.1) + (math.exp(-0.2) - 0.8)) / 2
    assert m["staleness/kl_engine_trainer"] == pytest.approx(k3, rel=1e-4)
    assert m["staleness/lag_hist/0"] == 0.5 and m["staleness/lag_hist/1"] == 0.5
    assert m["staleness/lag_max"] == 1


def test_train_step_raises_logprob_of_positive_advantage_tokens() -> None:
    """A = +0.625 on every completion token (the correct rollout of the seed example):
    after one step with lr 1e-2 the trainer's log-probability of those tokens goes up,
    and the version goes from 0 to 1."""
    model, _ = build_micro(
        TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64), seed=0
    )
    learner = Learner(model, LearnerSettings(lr=1e-2, temperature=1.0))
    batch = _positive_batch()
    from recipe_arena.core.logprobs import sequence_logprobs

    with torch.no_grad():
        before = sequence_logprobs(model, batch.tokens_BL)[0, 2:].sum()
    metrics = learner.train_step(batch)
    with torch.no_grad():
        after = sequence_logprobs(model, batch.tokens_BL)[0, 2:].sum()
    assert after > before and learner.version == 1
    assert metrics["loss/ratio_mean"] == pytest.approx(1.0)


def test_epochs_reuse_the_batch_against_a_fixed_pi_old() -> None:
    """epochs = 3 on one batch: three updates, one version (0 -> 1). The last update's
    ratio is pi_theta2 / pi_old with pi_old taken before the first update, so after two
    updates that raised the tokens' log-probability it is above 1 (with epochs = 1 it is
    exactly 1). The result equals doing it by hand: old logprobs once, then three
    compute_loss / backward / clip / step rounds on a copy of the same model."""
    import copy

    from recipe_arena.core.logprobs import sequence_logprobs

    model, _ = build_micro(
        TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64), seed=0
    )
    twin = copy.deepcopy(model)
    batch = _positive_batch()
    settings = LearnerSettings(lr=1e-3, temperature=1.0, epochs=3)
    learner = Learner(model, settings)
    metrics = learner.train_step(batch)
    assert learner.version == 1
    assert metrics["loss/ratio_mean"] > 1.0

    by_hand = Learner(twin, LearnerSettings(lr=1e-3, temperature=1.0))
    with torch.no_grad():
        old_BL = sequence_logprobs(twin, batch.tokens_BL)
    for _ in range(3):
        loss, _ = by_hand.compute_loss(batch, old_BL)
        by_hand.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(twin.parameters(), 1.0)
        by_hand.optimizer.step()
    for a, b in zip(model.parameters(), twin.parameters(), strict=True):
        assert torch.equal(a, b)
    one = Learner(
        build_micro(
            TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64), seed=0
        )[0],
        LearnerSettings(lr=1e-3, temperature=1.0),
    )
    assert one.train_step(batch)["loss/ratio_mean"] == 1.0
