"""GMPO (``policy_loss=gmpo``): the geometric mean of the clipped token objectives of a
row, clipped in log space. Hand-derived values and gradients, the loop reference of the
paper's objective on random batches, and wrong variants the checks must reject.

The hand batch: row 0 trains 2 tokens with r = p_theta / p_old = 1.2, 0.9 (log-ratios
0.182322, -0.105361), A = +1, then a padding token; row 1 trains 3 tokens with
r = 0.5, 1, 1 (log-ratios -0.693147, 0, 0), A = -1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch
from policy_loss_reference import check_against_reference

from recipe_arena.policy_loss.base import LossConfig, PolicyLossInput, PolicyLossResult
from recipe_arena.policy_loss.gmpo import GMPOParams, gmpo_loss
from tests.wrong_variants import assert_fails_a_check

Fn = Callable[[PolicyLossInput, GMPOParams], PolicyLossResult]
L = math.log


def _hand(fn: Fn, params: GMPOParams, how: str) -> tuple[float, list[float], dict[str, float]]:
    logp = torch.tensor([[L(0.6), L(0.45), 0.0], [L(0.25), L(0.3), L(0.2)]], requires_grad=True)
    old = torch.tensor([[L(0.5), L(0.5), -9.0], [L(0.5), L(0.3), L(0.2)]])
    adv = torch.tensor([[1.0, 1.0, 0.0], [-1.0, -1.0, -1.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    out = fn(PolicyLossInput(logp, old, adv, mask, LossConfig(normalisation=how), 3), params)
    out.loss.backward()
    assert logp.grad is not None
    return float(out.loss.detach()), logp.grad.flatten().tolist(), out.metrics


def _check_hand(fn: Fn) -> None:
    """Clip (-0.4, 0.4) in log space. Row 0 (A > 0): both log-ratios inside, S_0 =
    exp((0.182322 - 0.105361)/2) = sqrt(1.08) = 1.039230. Row 1 (A < 0, pessimistic branch
    = the larger ratio): log 0.5 = -0.693 is clipped to -0.4, so S_1 = exp(-0.4/3) =
    0.875173 and that token has no gradient.
    sample: loss (-S_0 + S_1)/2 = -0.082029; gradient of a free token of row b is
    (1/2)(-A_b S_b / |T_b|): row 0 -0.259808 each, row 1 (0, 0.145862, 0.145862).
    Clip fraction 1/5 of the trained tokens. With clip 1.0 nothing binds: S_1 =
    0.5^(1/3) = 0.793701, sample loss (-1.039230 + 0.793701)/2 = -0.122765."""
    loss, grad, m = _hand(fn, GMPOParams(), "sample")
    assert loss == pytest.approx(-0.082029, abs=1e-5)
    assert grad == pytest.approx([-0.259808, -0.259808, 0.0, 0.0, 0.145862, 0.145862], abs=1e-5)
    assert m["loss/clip_frac"] == pytest.approx(0.2)
    assert m["loss/ratio_mean"] == pytest.approx((1.039230 + 0.875173) / 2, rel=1e-5)
    loss, _, _ = _hand(fn, GMPOParams(clip_low=1.0, clip_high=1.0), "sample")
    assert loss == pytest.approx(-0.122765, abs=1e-5)


def _row_terms(
    logp: Sequence[torch.Tensor], old: Sequence[float], adv: float, p: Any
) -> list[torch.Tensor]:
    """GMPO eq. (3), one row: (prod_t |min(r_t A, clip(r_t, e^-eps_low, e^eps_high) A)|)^(1/|o|)
    sgn(A); the loss is minus it, on every token of the row."""
    if adv == 0:
        return [torch.zeros(()) for _ in logp]
    prod = torch.ones(())
    for lp, lo in zip(logp, old, strict=True):
        r = torch.exp(lp - lo)
        c = torch.clamp(r, math.exp(-p.clip_low), math.exp(p.clip_high))
        prod = prod * torch.abs(torch.minimum(r * adv, c * adv))
    value = prod ** (1.0 / len(logp)) * math.copysign(1.0, adv)
    return [-value] * len(logp)


PARAMS = [GMPOParams(), GMPOParams(clip_low=0.1, clip_high=0.3)]


def _check_random(fn: Fn) -> None:
    check_against_reference(fn, _row_terms, PARAMS, seed=5)


def test_gmpo_by_hand() -> None:
    _check_hand(gmpo_loss)


def test_gmpo_matches_the_paper_on_random_batches() -> None:
    _check_random(gmpo_loss)


def _wrong_arithmetic_mean(inp: PolicyLossInput, p: GMPOParams) -> PolicyLossResult:
    """Wrong: the arithmetic mean of the clipped token ratios (token-level averaging) where
    the geometric mean is defined."""
    from recipe_arena.policy_loss.base import finish_loss

    mask = inp.mask_BL
    n = mask.sum(-1).clamp(min=1.0)
    adv = (inp.advantages_BL * mask).sum(-1) / n
    sign = torch.sign(adv)[:, None]
    rho = inp.logprobs_BL - inp.old_logprobs_BL
    m = sign * torch.minimum(sign * rho, sign * torch.clamp(rho, -p.clip_low, p.clip_high))
    s = (torch.exp(m) * mask).sum(-1) / n
    pg = (-adv * s)[:, None] * mask
    if inp.token_weights_BL is not None:
        pg = pg * inp.token_weights_BL
    return finish_loss(pg, inp, gmpo_loss(inp, p).metrics)


def _wrong_ratio_space_clip(inp: PolicyLossInput, p: GMPOParams) -> PolicyLossResult:
    """Wrong: PPO's ratio-space clip [1 - eps, 1 + eps] in place of [e^-eps, e^eps]."""
    lo, hi = math.log(1.0 - p.clip_low), math.log(1.0 + p.clip_high)
    return gmpo_loss(inp, GMPOParams(clip_low=-lo, clip_high=hi))


@pytest.mark.parametrize("wrong", [_wrong_arithmetic_mean, _wrong_ratio_space_clip])
def test_wrong_variants_fail_the_checks(wrong: Fn) -> None:
    """Each named wrong variant fails the hand-derived check or the reference check."""
    assert_fails_a_check(wrong, _check_hand, _check_random)


def test_clip_fraction_of_one_token() -> None:
    """One trained token, A = -1, r = 0.5 (log-ratio -0.693 < -0.4): clipped, so the clip
    fraction is 1/1 and the loss is -A e^-0.4 = 0.670320."""
    logp = torch.tensor([[L(0.25)]], requires_grad=True)
    out = gmpo_loss(
        PolicyLossInput(
            logp, torch.tensor([[L(0.5)]]), -torch.ones(1, 1), torch.ones(1, 1), LossConfig(), 1
        ),
        GMPOParams(),
    )
    assert out.metrics["loss/clip_frac"] == 1.0
    assert float(out.loss.detach()) == pytest.approx(math.exp(-0.4), rel=1e-6)
