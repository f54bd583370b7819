"""OlmoRL policy loss: normalisation, asymmetric clip, KL, hand-derived values."""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch

from recipe_arena.policy_loss import LossConfig, OlmoParams, PolicyLossInput, apply_policy_loss

policy_loss = partial(apply_policy_loss, OlmoParams())
"""The default policy loss (OlmoRL's), as the learner applies it."""


def _two_lengths(normalisation: str) -> torch.Tensor:
    """Gradient of the loss w.r.t. each token logprob for a 10-token and a 100-token response."""
    mask = torch.zeros(2, 100)
    mask[0, :10] = 1
    mask[1, :] = 1
    logp = torch.full((2, 100), -1.0, requires_grad=True)
    adv = torch.ones(2, 100)
    out = policy_loss(
        PolicyLossInput(
            logp, logp.detach(), adv, mask, LossConfig(normalisation=normalisation), 100
        )
    )
    out.loss.backward()
    assert logp.grad is not None
    return logp.grad


def test_token_normalisation_weighs_every_token_equally() -> None:
    """Seed sec. 9.4: 10 + 100 tokens, token-level: every token's gradient is -A/110."""
    g = _two_lengths("token")
    assert g[0, 0].item() == pytest.approx(-1 / 110)
    assert g[1, 0].item() == pytest.approx(-1 / 110)


def test_sample_normalisation_gives_long_tokens_one_tenth() -> None:
    """Per-sample: each response weighs 1/2 in total, so a short-response token gets
    -1/(2*10) = -0.05 and a long-response token -1/(2*100) = -0.005: one tenth."""
    g = _two_lengths("sample")
    assert g[0, 0].item() == pytest.approx(-0.05)
    assert g[1, 0].item() == pytest.approx(-0.005)
    assert g[1, 0].item() / g[0, 0].item() == pytest.approx(0.1)


def test_constant_normalisation_divides_by_batch_times_cap() -> None:
    """Dr.GRPO: sum / (B * L_const) = every token -1/(2*100) = -0.005."""
    g = _two_lengths("constant")
    assert g[0, 0].item() == pytest.approx(-0.005)
    assert g[1, 0].item() == pytest.approx(-0.005)


def _single_token(ratio: float, adv: float) -> tuple[float, float, dict[str, float]]:
    """Loss value and d loss / d logp for one token with given ratio and advantage."""
    old = torch.tensor([[0.0]])
    logp = torch.tensor([[math.log(ratio)]], requires_grad=True)
    out = policy_loss(
        PolicyLossInput(logp, old, torch.tensor([[adv]]), torch.ones(1, 1), LossConfig(), 1)
    )
    out.loss.backward()
    assert logp.grad is not None
    return out.loss.item(), logp.grad.item(), out.metrics


def test_clip_asymmetry_positive_advantage_moves_up_to_1_272() -> None:
    """A = +1: ratio 1.25 < 1.272 is not clipped (loss -1.25, grad -1.25 = -r A);
    ratio 1.3 > 1.272 is clipped (loss -1.272, gradient 0)."""
    loss, grad, m = _single_token(1.25, 1.0)
    assert loss == pytest.approx(-1.25) and grad == pytest.approx(-1.25)
    assert m["loss/clip_high_frac"] == 0.0
    loss, grad, m = _single_token(1.3, 1.0)
    assert loss == pytest.approx(-1.272) and grad == 0.0
    assert m["loss/clip_high_frac"] == 1.0


def test_clip_asymmetry_negative_advantage_stops_at_0_8() -> None:
    """A = -1: ratio 0.75 < 0.8 is clipped (loss = -min(-0.75, -0.8) = 0.8, grad 0);
    ratio 0.85 is not (loss 0.85, grad = -r A = 0.85). The same 0.25 distance above 1
    (ratio 1.25) is within the upper bound for A > 0: the bounds are asymmetric."""
    loss, grad, m = _single_token(0.75, -1.0)
    assert loss == pytest.approx(0.8) and grad == 0.0
    assert m["loss/clip_low_frac"] == 1.0
    loss, grad, _ = _single_token(0.85, -1.0)
    assert loss == pytest.approx(0.85) and grad == pytest.approx(0.85)


def test_one_epoch_ratio_is_one_and_gradient_is_policy_gradient() -> None:
    """logp_old = logp in value: ratio 1, loss = -mean(A) over tokens, grad = -A/n."""
    logp = torch.tensor([[-0.5, -2.0]], requires_grad=True)
    adv = torch.tensor([[0.625, 0.625]])
    out = policy_loss(PolicyLossInput(logp, logp.detach(), adv, torch.ones(1, 2), LossConfig(), 1))
    out.loss.backward()
    assert out.loss.item() == pytest.approx(-0.625)
    assert logp.grad is not None
    assert torch.allclose(logp.grad, torch.tensor([[-0.3125, -0.3125]]))
    assert out.metrics["loss/clip_low_frac"] == 0.0 and out.metrics["loss/clip_high_frac"] == 0.0


def test_token_weights_scale_policy_term() -> None:
    """TIS weight 2 on the first token, 0.5 on the second, A = 1, ratio 1:
    loss = -(2 + 0.5)/2 = -1.25."""
    logp = torch.zeros(1, 2, requires_grad=True)
    out = policy_loss(
        PolicyLossInput(
            logp,
            logp.detach(),
            torch.ones(1, 2),
            torch.ones(1, 2),
            LossConfig(),
            1,
            token_weights_BL=torch.tensor([[2.0, 0.5]]),
        )
    )
    assert out.loss.item() == pytest.approx(-1.25)


def test_k3_kl_added_only_when_beta_positive() -> None:
    """d = logp_ref - logp = log 2: k3 = 2 - log 2 - 1 = 0.30685; A = 0 so loss = beta * k3."""
    logp = torch.tensor([[0.0]], requires_grad=True)
    ref = torch.tensor([[math.log(2.0)]])
    zero_a = torch.zeros(1, 1)
    out = policy_loss(
        PolicyLossInput(
            logp,
            logp.detach(),
            zero_a,
            torch.ones(1, 1),
            LossConfig(kl_beta=0.5),
            1,
            ref_logprobs_BL=ref,
        )
    )
    assert out.loss.item() == pytest.approx(0.5 * (1 - math.log(2.0)))
    assert out.metrics["loss/kl_ref"] == pytest.approx(1 - math.log(2.0))
    out0 = policy_loss(
        PolicyLossInput(
            logp, logp.detach(), zero_a, torch.ones(1, 1), LossConfig(), 1, ref_logprobs_BL=ref
        )
    )
    assert out0.loss.item() == 0.0 and "loss/kl_ref" not in out0.metrics


def test_masked_tokens_do_not_count() -> None:
    """Padding (mask 0) holds a huge advantage that must not enter the loss: loss = -1."""
    logp = torch.zeros(1, 3, requires_grad=True)
    adv = torch.tensor([[1.0, 1.0, 1000.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    out = policy_loss(PolicyLossInput(logp, logp.detach(), adv, mask, LossConfig(), 1))
    assert out.loss.item() == pytest.approx(-1.0)


def test_bad_normalisation_is_named() -> None:
    """The config refuses an unknown rule; the reduction names the allowed ones."""
    from pydantic import ValidationError

    from recipe_arena.policy_loss.base import reduce

    with pytest.raises(ValidationError, match="token"):
        LossConfig(normalisation="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="allowed"):
        reduce(torch.zeros(1, 1), torch.ones(1, 1), "x")
