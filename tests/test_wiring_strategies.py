"""Staleness and length-control strategies on inputs where the trained-token mask and
the advantages differ, checked through the strategy's own function and through the
learner's loss (``strategy_loss``).

The batch has a prompt position (mask 0) and advantages 0.5, -1, 0 on the three trained
tokens, so a strategy that weighted, normalised or averaged by the advantages instead
of the mask, or counted the prompt position, gives other weights, losses and metrics.
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from recipe_arena.core.types import LearnerBatch
from recipe_arena.length_control import (
    DiscardEarlyShortParams,
    apply_length_control,
)
from recipe_arena.length_control.discard_early_short import WindowedInput
from recipe_arena.policy_loss import LossConfig
from recipe_arena.staleness import (
    KimiRegularizerParams,
    NoCorrectionParams,
    StalenessInput,
    TISParams,
    apply_staleness,
)
from recipe_arena.wiring import strategy_loss

MASK = [[0.0, 1.0, 1.0, 1.0]]
"""Position 0 is the prompt, positions 1-3 are trained completion tokens."""
ADV = [[0.0, 0.5, -1.0, 0.0]]
"""Advantages of the four positions: they differ from the mask on every trained token."""
OLD = [[math.log(0.9), math.log(0.5), math.log(0.9), math.log(0.2)]]
"""log pi_old; with BEH the raw TIS ratios are 3 (prompt), 1.25, 3 and 0.5."""
BEH = [[math.log(0.3), math.log(0.4), math.log(0.3), math.log(0.4)]]


def _batch(behaviour: list[list[float]]) -> LearnerBatch:
    return LearnerBatch(
        tokens_BL=torch.tensor([[3, 4, 5, 6]]),
        mask_BL=torch.tensor(MASK),
        advantages_BL=torch.tensor(ADV),
        behavior_logprobs_BL=torch.tensor(behaviour),
        versions_BL=torch.tensor([[-1, 0, 0, 0]]),
    )


def _inp(logp: list[list[float]], behaviour: list[list[float]]) -> StalenessInput:
    t = torch.tensor(logp)
    return StalenessInput(
        logprobs_BL=t,
        old_logprobs_BL=t,
        behavior_logprobs_BL=torch.tensor(behaviour),
        advantages_BL=torch.tensor(ADV),
        mask_BL=torch.tensor(MASK),
        versions_BL=torch.tensor([[-1, 0, 0, 0]]),
        learner_version=0,
    )


def _loss(params: object, logp: list[list[float]], behaviour: list[list[float]]):
    """The learner's loss at logp_theta = logp_old = ``logp`` (ratio 1, one update),
    token normalisation; returns the loss, dloss/dlogp_theta and the metrics.

    Warnings are errors here: the learner computes this loss once per micro-batch with
    gradient, so a metric read from a tensor that carries gradient would make torch
    warn ("Converting a tensor with requires_grad=True to a scalar"). torch gives that
    warning once per process; ``set_warn_always`` makes it fire here whatever ran
    before."""
    leaf = torch.tensor(logp, requires_grad=True)
    always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out, metrics = strategy_loss(
                params, LossConfig(), 1, 0, _batch(behaviour), leaf, leaf.detach(), None
            )
    finally:
        torch.set_warn_always(always)
    out.loss.backward()
    assert leaf.grad is not None
    return out.loss.item(), leaf.grad[0].tolist(), metrics


# ------------------------------------------------------------------------------- TIS
def test_tis_weights_and_metrics_count_trained_tokens_only() -> None:
    """cap 2: raw rho = p_old / p_behaviour = (3, 1.25, 3, 0.5); capped and masked,
    w = (0, 1.25, 2, 0.5). Of the 3 trained tokens one is above the cap (the prompt's 3
    is not counted): capped fraction 1/3; mean weight (1.25 + 2 + 0.5) / 3 = 1.25.
    Weighting or averaging by the advantages instead would give w = (0, 0.625, -2, 0)
    and means of sum(x A) / max(sum A, 1) = -1 (capped) and -1.375 (weight)."""
    out = apply_staleness(TISParams(cap=2.0), _inp(OLD, BEH))
    torch.testing.assert_close(out.token_weights_BL, torch.tensor([[0.0, 1.25, 2.0, 0.5]]))
    assert torch.equal(out.extra_loss_BL, torch.zeros(1, 4))
    assert torch.equal(out.mask_BL, torch.tensor(MASK))
    assert out.metrics["staleness/tis_capped_frac"] == pytest.approx(1 / 3)
    assert out.metrics["staleness/tis_weight_mean"] == pytest.approx(1.25)


def test_tis_weights_reach_the_learner_loss() -> None:
    """At ratio 1 each trained token's loss is -A_t w_t, normalised over the 3 tokens
    of the mask: loss = -(0.5 x 1.25 - 1 x 2 + 0 x 0.5) / 3 = 1.375 / 3, and
    dloss/dlogp_t = -A_t w_t / 3 = (0, -0.625/3, 2/3, 0). A returned mask equal to the
    advantages would divide by max(-0.5, 1) and weight the tokens by A."""
    loss, grad, m = _loss(TISParams(cap=2.0), OLD, BEH)
    assert loss == pytest.approx(1.375 / 3)
    assert grad == pytest.approx([0.0, -0.625 / 3, 2 / 3, 0.0])
    assert m["staleness/tis_capped_frac"] == pytest.approx(1 / 3)


def test_tis_ratio_exactly_at_the_cap_is_not_capped() -> None:
    """cap 1.0; token 1 has logp_old = logp_behaviour, so rho = exp(0) = 1 exactly (equal
    to the cap, not above it); token 2 has rho = 0.9 / 0.3 = 3 > 1. Capped fraction
    1/2 (a >= comparison would give 1); both weights are 1."""
    logp = [[0.0, math.log(0.5), math.log(0.9), 0.0]]
    beh = [[0.0, math.log(0.5), math.log(0.3), 0.0]]
    inp = StalenessInput(
        logprobs_BL=torch.tensor(logp),
        old_logprobs_BL=torch.tensor(logp),
        behavior_logprobs_BL=torch.tensor(beh),
        advantages_BL=torch.tensor([[0.0, 1.0, 1.0, 0.0]]),
        mask_BL=torch.tensor([[0.0, 1.0, 1.0, 0.0]]),
        versions_BL=torch.tensor([[-1, 0, 0, -1]]),
        learner_version=0,
    )
    out = apply_staleness(TISParams(cap=1.0), inp)
    assert out.metrics["staleness/tis_capped_frac"] == 0.5
    assert out.token_weights_BL.tolist() == [[0.0, 1.0, 1.0, 0.0]]


# ----------------------------------------------------------------------------- Kimi
KIMI_LOGP = [[-0.5, -1.0, -2.0, -1.5]]
KIMI_BEH = [[-2.5, -3.0, -1.0, -2.0]]
"""logp_theta - logp_behaviour = (2, 2, -1, 0.5)."""


def test_kimi_penalty_and_metric_count_trained_tokens_only() -> None:
    """tau 0.5: extra_t = 0.25 d_t^2 on the mask = (0, 1, 0.25, 0.0625) (the prompt's
    d = 2 is not penalised); metric = mean over the 3 trained tokens = 1.3125 / 3 =
    0.4375. Masking by the advantages would give extra (0, 0.5, -0.25, 0), and
    averaging by them 0.25 / max(-0.5, 1) = 0.25."""
    out = apply_staleness(KimiRegularizerParams(tau=0.5), _inp(KIMI_LOGP, KIMI_BEH))
    torch.testing.assert_close(out.extra_loss_BL, torch.tensor([[0.0, 1.0, 0.25, 0.0625]]))
    assert torch.equal(out.token_weights_BL, torch.ones(1, 4))
    assert torch.equal(out.mask_BL, torch.tensor(MASK))
    assert out.metrics["staleness/kimi_regularizer"] == pytest.approx(0.4375)


def test_kimi_penalty_reaches_the_learner_loss() -> None:
    """tau 0.5, ratio 1: token loss -A_t + 0.25 d_t^2 over the 3 trained tokens:
    loss = (-(0.5 - 1 + 0) + 1.3125) / 3 = 1.8125 / 3; dloss/dlogp_t = (-A_t + 0.5 d_t)
    / 3 = (0, (-0.5 + 1) / 3, (1 - 0.5) / 3, 0.25 / 3) = (0, 1/6, 1/6, 1/12). The
    metric is read from the penalty without its gradient (no warning)."""
    loss, grad, m = _loss(KimiRegularizerParams(tau=0.5), KIMI_LOGP, KIMI_BEH)
    assert loss == pytest.approx(1.8125 / 3)
    assert grad == pytest.approx([0.0, 1 / 6, 1 / 6, 1 / 12])
    assert m["staleness/kimi_regularizer"] == pytest.approx(0.4375)


# ----------------------------------------------------------------------------- none
def test_no_correction_returns_the_mask_not_the_advantages() -> None:
    """w = 1, extra = 0, mask unchanged (0 on the prompt, 1 on the 3 trained tokens)."""
    out = apply_staleness(NoCorrectionParams(), _inp(OLD, BEH))
    assert torch.equal(out.mask_BL, torch.tensor(MASK))
    assert torch.equal(out.token_weights_BL, torch.ones(1, 4))
    assert torch.equal(out.extra_loss_BL, torch.zeros(1, 4))


def test_no_correction_learner_loss() -> None:
    """Ratio 1, no weights: loss = -(0.5 - 1 + 0) / 3 = 1/6, dloss/dlogp_t = -A_t / 3 =
    (0, -1/6, 1/3, 0)."""
    loss, grad, _ = _loss(NoCorrectionParams(), OLD, BEH)
    assert loss == pytest.approx(1 / 6)
    assert grad == pytest.approx([0.0, -1 / 6, 1 / 3, 0.0])


# ------------------------------------------------------------------ discard early short
def test_discard_early_short_keeps_a_group_with_an_uncounted_phase() -> None:
    """k = 1, W = 100, D = 96: horizon 200. Phases (-1, 150): the first rollout's engine
    did not count decode steps, so the group's latest start is unknown and it is kept,
    logging no horizon. Deciding on the known phase alone would discard it
    (150 + 96 = 246 > 200)."""
    inp = WindowedInput(
        rewards_G=torch.tensor([1.0, 0.0]),
        lengths_G=torch.tensor([5, 5]),
        row_budget=None,
        effort=None,
        finish_seconds_G=torch.zeros(2),
        start_versions_G=torch.zeros(2, dtype=torch.long),
        end_versions_G=torch.zeros(2, dtype=torch.long),
        engine_version=0,
        phase_steps_G=torch.tensor([-1, 150]),
        window_steps=100.0,
        collect_steps=None,
        response_cap=96,
        max_staleness=1,
    )
    out = apply_length_control(DiscardEarlyShortParams(), inp)
    assert out.keep_G.tolist() == [True, True]
    assert out.metrics == {"length/discarded_short": 0.0, "length/discarded_groups": 0.0}
