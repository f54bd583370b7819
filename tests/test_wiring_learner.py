"""The staleness strategies' effect on the tensors the optimiser steps on.

Each test drives the real learner (``Learner.train_step``) or its loss
(``strategy_loss``) and checks the gradient or the loss, not only the strategy's own
return value: a strategy that computes the right mask but whose mask never reaches the
loss would pass a test of the strategy alone. The boundary cases pin every comparison
of DeepSeek's rule (advantage exactly 0, off-policy KL exactly delta, token lag exactly
the allowed lag).
"""

from __future__ import annotations

import copy

import pytest
import torch

from recipe_arena.config import RLConfig
from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.core.types import LearnerBatch
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.policy_loss import LossConfig
from recipe_arena.staleness import DeepSeekMaskParams
from recipe_arena.wiring import LearnerSettings, make_learner, strategy_loss

SPEC = TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64)


def _model() -> torch.nn.Module:
    return build_micro(SPEC, seed=0)[0]


def _rows(adv: list[float], offset: list[float], model: torch.nn.Module) -> LearnerBatch:
    """Rows of 2 prompt + 3 completion tokens (row b uses tokens 8+b.. so rows differ),
    advantage ``adv[b]`` on its completion, and behaviour logprobs equal to the model's
    own logprobs (temperature 1) plus ``offset[b]`` on every completion token, so the
    row's mean logp_behaviour - logp_theta is exactly offset[b] at the model's weights."""
    b = len(adv)
    tokens_BL = torch.tensor([[8 + i, 9 + i, 10 + i, 11 + i, 12 + i] for i in range(b)])
    mask_BL = torch.tensor([[0.0, 0.0, 1.0, 1.0, 1.0]] * b)
    with torch.no_grad():
        logp_BL = sequence_logprobs(model, tokens_BL)
    return LearnerBatch(
        tokens_BL=tokens_BL,
        mask_BL=mask_BL,
        advantages_BL=torch.tensor(adv)[:, None] * mask_BL,
        behavior_logprobs_BL=(logp_BL + torch.tensor(offset)[:, None]) * mask_BL,
        versions_BL=torch.tensor([[-1, -1, 0, 0, 0]] * b),
    )


def _settings(epochs: int = 1, delta: float = 0.05, lr: float = 1e-3) -> LearnerSettings:
    return LearnerSettings(
        rl=RLConfig(lr=lr, temperature=1.0, epochs=epochs, grad_clip=1e9, weight_decay=0.0),
        staleness=DeepSeekMaskParams(delta=delta, max_token_lag=1),
    )


def _grads(model: torch.nn.Module) -> list[torch.Tensor]:
    return [
        torch.zeros_like(p) if p.grad is None else p.grad.detach().clone()
        for p in model.parameters()
    ]


def test_a_dropped_row_contributes_no_gradient_to_the_step() -> None:
    """deepseek_mask, delta 0.05: row 0 has A = -1 and behaviour logprobs 1 nat above
    the trainer's (mean log-ratio 1 > 0.05: dropped); row 1 has A = +1 (kept). The
    step's gradient, and the weights after it, equal those of the same learner given
    row 1 alone: the dropped row's tokens leave both the numerator and the token count
    (token normalisation divides by the 3 tokens of row 1, not 6). A loss given the
    batch's own mask instead of the strategy's would train row 0 and halve row 1's
    share."""
    full, alone = _model(), _model()
    batch = _rows([-1.0, 1.0], [1.0, 0.0], full)
    learner = make_learner(full, _settings())
    metrics = learner.train_step(batch)
    assert metrics["staleness/masked_seq_frac"] == 0.5
    ref = make_learner(alone, _settings())
    ref.train_step(batch.select([1]))
    for g, h in zip(_grads(full), _grads(alone), strict=True):
        torch.testing.assert_close(g, h, rtol=1e-5, atol=1e-8)
    for p, q in zip(full.parameters(), alone.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-8)
    assert any(bool(g.abs().sum() > 0) for g in _grads(full))


def test_second_epoch_bounds_the_kl_of_the_current_not_the_old_policy() -> None:
    """epochs 2, lr 1e-2, one row with A = -1 whose behaviour logprobs sit 0.04 nats
    above pi_old's (the trainer's before the step) on every token, delta 0.05.

    Update 1: logp_theta = logp_old in value, KL = 0.04 <= 0.05, kept; the update
    lowers the row's logprobs (A < 0). Update 2: KL = 0.04 + mean(logp_old - logp_theta)
    > 0.05 once they fell by more than 0.01 nats, so the row is dropped and the
    gradient the optimiser steps on is exactly 0. A bound computed from pi_old would
    still read 0.04 and keep training the row. With epochs 1 the same row is kept."""
    model = _model()
    batch = _rows([-1.0], [0.04], model)
    learner = make_learner(model, _settings(epochs=2, lr=1e-2))
    metrics = learner.train_step(batch)
    assert metrics["staleness/offpolicy_kl_mean"] > 0.05  # the policy moved
    assert metrics["loss/ratio_mean"] < 1.0
    assert metrics["staleness/masked_seq_frac"] == 1.0
    assert all(bool((g == 0).all()) for g in _grads(model))

    once = _model()
    metrics = make_learner(once, _settings(epochs=1, lr=1e-2)).train_step(
        _rows([-1.0], [0.04], once)
    )
    assert metrics["staleness/masked_seq_frac"] == 0.0
    assert metrics["staleness/offpolicy_kl_mean"] == pytest.approx(0.04, abs=1e-6)
    assert any(bool(g.abs().sum() > 0) for g in _grads(once))


def test_epochs_train_against_pi_old_and_differ_from_one_epoch() -> None:
    """epochs 2 on a kept row (A = +1, behaviour = pi_old): the second update's ratio
    pi_theta / pi_old is above 1 (the first update raised the tokens' probability), and
    the weights differ from those after one update; the version still goes up by one."""
    two, one = _model(), _model()
    batch = _rows([1.0], [0.0], two)
    learner = make_learner(two, _settings(epochs=2, lr=1e-2))
    m = learner.train_step(batch)
    assert learner.version == 1 and m["loss/ratio_mean"] > 1.0
    assert m["staleness/masked_seq_frac"] == 0.0
    make_learner(one, _settings(epochs=1, lr=1e-2)).train_step(copy.deepcopy(batch))
    assert any(
        not torch.equal(p, q) for p, q in zip(two.parameters(), one.parameters(), strict=True)
    )


# ----------------------------------------------------------------------------- boundaries
def _two_rows(
    adv0: float, behaviour0: float, versions: tuple[int, int] = (0, 0)
) -> tuple[LearnerBatch, torch.Tensor]:
    """Row 0: A = adv0, logp_theta = -1 on both completion tokens, behaviour = behaviour0
    (mean log-ratio behaviour0 + 1). Row 1: A = +1, logp_theta = behaviour = -1, token
    versions ``versions``. Position 0 is the prompt. Returns the batch and a leaf
    logp_theta (the gradient is checked on it)."""
    logp = torch.tensor([[0.0, -1.0, -1.0], [0.0, -1.0, -1.0]], requires_grad=True)
    batch = LearnerBatch(
        tokens_BL=torch.tensor([[3, 4, 5], [3, 6, 7]]),
        mask_BL=torch.tensor([[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]),
        advantages_BL=torch.tensor([[0.0, adv0, adv0], [0.0, 1.0, 1.0]]),
        behavior_logprobs_BL=torch.tensor([[0.0, behaviour0, behaviour0], [0.0, -1.0, -1.0]]),
        versions_BL=torch.tensor([[-1, 0, 0], [-1, *versions]]),
    )
    return batch, logp


def _loss(
    batch: LearnerBatch, logp: torch.Tensor, params: DeepSeekMaskParams, version: int = 0
) -> tuple[float, torch.Tensor, dict[str, float]]:
    out, metrics = strategy_loss(params, LossConfig(), 1, version, batch, logp, logp.detach(), None)
    out.loss.backward()
    assert logp.grad is not None
    return out.loss.item(), logp.grad, metrics


def test_zero_advantage_row_is_not_dropped_by_the_sequence_bound() -> None:
    """Row 0: A = 0 with mean log-ratio -0.5 - (-1) = 0.5 > delta 0.25. The bound drops
    only A < 0, so row 0 stays trained: it adds nothing to the numerator (A = 0) but its
    2 tokens count. Ratio 1, token normalisation: loss = -(1 + 1) / 4 = -0.5 and
    dloss/dlogp of a row-1 token = -1/4. Dropped (A <= 0) it would be -2/2 = -1."""
    batch, logp = _two_rows(0.0, -0.5)
    loss, grad, m = _loss(batch, logp, DeepSeekMaskParams(delta=0.25))
    assert loss == pytest.approx(-0.5)
    assert grad[1, 1].item() == pytest.approx(-0.25)
    assert m["staleness/masked_seq_frac"] == 0.0


@pytest.mark.parametrize(("delta", "dropped"), [(0.5, False), (0.4999, True)])
def test_sequence_bound_at_exactly_delta(delta: float, dropped: bool) -> None:
    """Row 0: A = -1, logp_theta = -1, behaviour = -0.5: mean log-ratio exactly 0.5
    (binary-exact). At delta 0.5 (KL = delta, not above) it is kept: loss =
    (-(-1)x2 - (1)x2) / 4 = 0 and row 0's token gradient is -A/4 = +0.25. At delta
    0.4999 it is dropped: loss = -2 / 2 = -1, row 0's gradient 0, row 1's -1/2."""
    batch, logp = _two_rows(-1.0, -0.5)
    loss, grad, m = _loss(batch, logp, DeepSeekMaskParams(delta=delta))
    if dropped:
        assert loss == pytest.approx(-1.0) and grad[0, 1].item() == 0.0
        assert grad[1, 1].item() == pytest.approx(-0.5)
        assert m["staleness/masked_seq_frac"] == 0.5
    else:
        assert loss == pytest.approx(0.0) and grad[0, 1].item() == pytest.approx(0.25)
        assert m["staleness/masked_seq_frac"] == 0.0


def test_token_lag_equal_to_the_bound_is_trained() -> None:
    """Learner version 3, max_token_lag 1, row 1's tokens from versions 2 and 1 (lags 1
    and 2): lag 1 is not above the bound and stays, lag 2 is masked. Row 0 (A = +1
    here, behaviour = theta: not dropped) from version 0 is masked whole (lag 3).
    One trained token, A = +1: loss = -1, its gradient -1, the masked ones 0."""
    batch, logp = _two_rows(1.0, -1.0, versions=(2, 1))
    loss, grad, m = _loss(batch, logp, DeepSeekMaskParams(delta=0.05, max_token_lag=1), 3)
    assert loss == pytest.approx(-1.0)
    assert grad[1].tolist() == pytest.approx([0.0, -1.0, 0.0])
    assert grad[0].tolist() == [0.0, 0.0, 0.0]
    assert m["staleness/stale_token_frac"] == pytest.approx(3 / 4)


def test_one_token_rows_and_empty_rows() -> None:
    """Row 0: one trained token, A = -1, logp_theta = -1, behaviour -0.5: its mean
    log-ratio is 0.5 / 1 token = 0.5 > delta 0.3, dropped (loss 0, nothing else
    trained). Row 1: an aborted rollout with no trained token (A = 0): it neither
    counts as a sequence nor turns the means into 0/0. Metrics: masked_seq_frac =
    1 dropped / 1 sequence, offpolicy_kl_mean = 0.5. A batch of empty rows only gives
    zeros, not a division by zero."""
    logp = torch.tensor([[0.0, -1.0], [0.0, 0.0]], requires_grad=True)
    batch = LearnerBatch(
        tokens_BL=torch.tensor([[3, 4], [3, 0]]),
        mask_BL=torch.tensor([[0.0, 1.0], [0.0, 0.0]]),
        advantages_BL=torch.tensor([[0.0, -1.0], [0.0, 0.0]]),
        behavior_logprobs_BL=torch.tensor([[0.0, -0.5], [0.0, 0.0]]),
        versions_BL=torch.tensor([[-1, 0], [-1, -1]]),
    )
    loss, grad, m = _loss(batch, logp, DeepSeekMaskParams(delta=0.3))
    assert loss == 0.0 and grad.abs().sum().item() == 0.0
    assert m["staleness/masked_seq_frac"] == 1.0
    assert m["staleness/offpolicy_kl_mean"] == pytest.approx(0.5)
    empty = LearnerBatch(
        tokens_BL=torch.tensor([[3, 0]]),
        mask_BL=torch.zeros(1, 2),
        advantages_BL=torch.zeros(1, 2),
        behavior_logprobs_BL=torch.zeros(1, 2),
        versions_BL=torch.full((1, 2), -1),
    )
    leaf = torch.zeros(1, 2, requires_grad=True)
    _, _, m = _loss(empty, leaf, DeepSeekMaskParams())
    assert m["staleness/masked_seq_frac"] == 0.0 and m["staleness/offpolicy_kl_mean"] == 0.0
