"""CISPO (``policy_loss=cispo``): REINFORCE weighted by the stop-gradient clipped IS
ratio, -sg(clip(r)) A logp_theta per token. Hand-derived values and gradients, the loop
reference of the paper's objective on random batches, and wrong variants the checks
must reject.

The hand batch: row 0 trains p_theta = 0.6, 0.45 with p_old = 0.5, 0.5 (r = 1.2, 0.9),
A = +1, then a padding token; row 1 trains p_theta = 0.25, 0.3, 0.2 with r = 0.5, 1, 1,
A = -1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch
from policy_loss_reference import check_against_reference

from recipe_arena.policy_loss.base import LossConfig, PolicyLossInput, PolicyLossResult
from recipe_arena.policy_loss.cispo import CISPOParams, cispo_loss
from tests.wrong_variants import assert_fails_a_check

Fn = Callable[[PolicyLossInput, CISPOParams], PolicyLossResult]
L = math.log


def _hand(fn: Fn, params: CISPOParams) -> tuple[float, list[float], dict[str, float]]:
    logp = torch.tensor([[L(0.6), L(0.45), 0.0], [L(0.25), L(0.3), L(0.2)]], requires_grad=True)
    old = torch.tensor([[L(0.5), L(0.5), -9.0], [L(0.5), L(0.3), L(0.2)]])
    adv = torch.tensor([[1.0, 1.0, 0.0], [-1.0, -1.0, -1.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    out = fn(PolicyLossInput(logp, old, adv, mask, LossConfig(), 3), params)
    out.loss.backward()
    assert logp.grad is not None
    return float(out.loss.detach()), logp.grad.flatten().tolist(), out.metrics


def _check_hand(fn: Fn) -> None:
    """clip_high 0.1, no lower bound, token normalisation over N = 5: weights
    r^ = (min(1.2, 1.1), 0.9 | 0.5, 1, 1) = (1.1, 0.9 | 0.5, 1, 1).
    l = -r^ A logp: (-1.1 log 0.6, -0.9 log 0.45 | 0.5 log 0.25, log 0.3, log 0.2)
      = (0.561904, 0.718662 | -0.693147, -1.203973, -1.609438), loss = sum/5 = -0.445198.
    Gradient -r^ A / N: (-0.22, -0.18, 0 | 0.1, 0.2, 0.2): the clipped token (r = 1.2)
    keeps a gradient (PPO's clip would zero it). Clip fractions: high 1/5, low 0; mean
    ratio (1.2 + 0.9 + 0.5 + 1 + 1)/5 = 0.92. With clip_low 0.2 the r = 0.5 token's weight
    rises to 0.8: its gradient 0.16."""
    loss, grad, m = _hand(fn, CISPOParams(clip_high=0.1))
    assert loss == pytest.approx(-0.445198, abs=1e-5)
    assert grad == pytest.approx([-0.22, -0.18, 0.0, 0.1, 0.2, 0.2], abs=1e-6)
    assert m["loss/clip_high_frac"] == pytest.approx(0.2)
    assert m["loss/clip_low_frac"] == 0.0
    assert m["loss/ratio_mean"] == pytest.approx(0.92)
    _, grad, m = _hand(fn, CISPOParams(clip_low=0.2, clip_high=0.1))
    assert grad[3] == pytest.approx(0.16, abs=1e-6)
    assert m["loss/clip_low_frac"] == pytest.approx(0.2)


def _row_terms(
    logp: Sequence[torch.Tensor], old: Sequence[float], adv: float, p: Any
) -> list[torch.Tensor]:
    """MiniMax-M1 eq. (4): sg(r^_t) A log pi_theta(y_t), r^ = clip(r, 1 - eps_low, 1 + eps_high)."""
    out = []
    for lp, lo in zip(logp, old, strict=True):
        r = math.exp(float(lp.detach()) - lo)  # a Python float: no gradient flows through it
        w = min(max(r, 1.0 - p.clip_low), 1.0 + p.clip_high)
        out.append(-w * adv * lp)
    return out


PARAMS = [CISPOParams(), CISPOParams(clip_low=0.2, clip_high=0.1), CISPOParams(clip_high=5.0)]


def _check_random(fn: Fn) -> None:
    check_against_reference(fn, _row_terms, PARAMS, seed=4)


def test_cispo_by_hand() -> None:
    _check_hand(cispo_loss)


def test_cispo_matches_the_paper_on_random_batches() -> None:
    _check_random(cispo_loss)


def _wrong_missing_stop_gradient(inp: PolicyLossInput, p: CISPOParams) -> PolicyLossResult:
    """Wrong: the clipped weight carries gradient (no sg), adding -A logp d r^/d logp."""
    from recipe_arena.policy_loss.base import finish_loss

    r = torch.exp(inp.logprobs_BL - inp.old_logprobs_BL)
    pg = -torch.clamp(r, 1.0 - p.clip_low, 1.0 + p.clip_high) * inp.advantages_BL * inp.logprobs_BL
    if inp.token_weights_BL is not None:
        pg = pg * inp.token_weights_BL
    return finish_loss(pg, inp, cispo_loss(inp, p).metrics)


def _wrong_ppo_clip_drops_tokens(inp: PolicyLossInput, p: CISPOParams) -> PolicyLossResult:
    """Wrong: PPO's clipped surrogate with CISPO's range, which drops clipped tokens from
    the gradient."""
    from recipe_arena.policy_loss.base import finish_loss

    r = torch.exp(inp.logprobs_BL - inp.old_logprobs_BL)
    a = inp.advantages_BL
    pg = -torch.minimum(r * a, torch.clamp(r, 1.0 - p.clip_low, 1.0 + p.clip_high) * a)
    if inp.token_weights_BL is not None:
        pg = pg * inp.token_weights_BL
    return finish_loss(pg, inp, cispo_loss(inp, p).metrics)


@pytest.mark.parametrize("wrong", [_wrong_missing_stop_gradient, _wrong_ppo_clip_drops_tokens])
def test_wrong_variants_fail_the_checks(wrong: Fn) -> None:
    """Each named wrong variant fails the hand-derived check or the reference check."""
    assert_fails_a_check(wrong, _check_hand, _check_random)
