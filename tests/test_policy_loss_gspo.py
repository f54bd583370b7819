"""GSPO (``policy_loss=gspo``): the sequence-level ratio s_b = exp(mean_t log r_bt),
clipped at the sequence level. Hand-derived values and gradients, the loop reference of
the paper's objective on random batches, and wrong variants the checks must reject.

The hand batch: row 0 trains 2 tokens with r = p_theta / p_old = 0.6/0.5 = 1.2 and
0.45/0.5 = 0.9, A = +1 (a padding token after them); row 1 trains 3 tokens with
r = 0.25/0.5 = 0.5, 1, 1, A = -1. Geometric means: s_0 = sqrt(1.08) = 1.039230,
s_1 = 0.5^(1/3) = 0.793701.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch
from policy_loss_reference import check_against_reference

from recipe_arena.policy_loss.base import LossConfig, PolicyLossInput, PolicyLossResult
from recipe_arena.policy_loss.gspo import GSPOParams, gspo_loss
from tests.wrong_variants import assert_fails_a_check

Fn = Callable[[PolicyLossInput, GSPOParams], PolicyLossResult]
L = math.log
S0, S1 = math.sqrt(1.08), 0.5 ** (1 / 3)


def _hand(fn: Fn, params: GSPOParams, how: str) -> tuple[float, list[float], dict[str, float]]:
    logp = torch.tensor([[L(0.6), L(0.45), 0.0], [L(0.25), L(0.3), L(0.2)]], requires_grad=True)
    old = torch.tensor([[L(0.5), L(0.5), -9.0], [L(0.5), L(0.3), L(0.2)]])
    adv = torch.tensor([[1.0, 1.0, 0.0], [-1.0, -1.0, -1.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    out = fn(PolicyLossInput(logp, old, adv, mask, LossConfig(normalisation=how), 3), params)
    out.loss.backward()
    assert logp.grad is not None
    return float(out.loss.detach()), logp.grad.flatten().tolist(), out.metrics


def _check_hand(fn: Fn) -> None:
    """clip_low 0.25, clip_high 0.05: s_0 = 1.0392 < 1.05 and s_1 = 0.7937 > 0.75, so no
    row is clipped: l_0 = -s_0 A_0 = -1.039230 on each of its 2 tokens, l_1 = +0.793701 on
    each of 3. A row's gradient in each of its logp_t is -A_b s_b / |T_b|: -0.519615 (row 0),
    +0.264567 (row 1).
    sample: loss (l_0 + l_1)/2 = -0.122765; gradients halved: -0.259808, +0.132283.
    token:  loss (2 l_0 + 3 l_1)/5 = 0.060528; gradients x 2/5 and x 3/5: -0.207846, +0.158740.
    The paper's clips (3e-4, 4e-4) clip both rows (s_0 > 1.0004 with A > 0, s_1 < 0.9997
    with A < 0): sample loss (-1.0004 + 0.9997)/2 = -0.00035, no gradient, clip fractions
    1/2 each."""
    wide = GSPOParams(clip_low=0.25, clip_high=0.05)
    loss, grad, m = _hand(fn, wide, "sample")
    assert loss == pytest.approx(-0.122765, abs=1e-5)
    assert grad == pytest.approx([-0.259808, -0.259808, 0.0] + [0.132283] * 3, abs=1e-5)
    assert m["loss/ratio_mean"] == pytest.approx((S0 + S1) / 2, rel=1e-5)
    loss, grad, _ = _hand(fn, wide, "token")
    assert loss == pytest.approx(0.060528, abs=1e-5)
    assert grad == pytest.approx([-0.207846, -0.207846, 0.0] + [0.158740] * 3, abs=1e-5)
    loss, grad, m = _hand(fn, GSPOParams(), "sample")
    assert loss == pytest.approx((-1.0004 + 0.9997) / 2, abs=1e-6)
    assert grad == pytest.approx([0.0] * 6, abs=1e-7)
    assert m["loss/clip_high_frac"] == pytest.approx(0.5)
    assert m["loss/clip_low_frac"] == pytest.approx(0.5)


def _row_terms(
    logp: Sequence[torch.Tensor], old: Sequence[float], adv: float, p: Any
) -> list[torch.Tensor]:
    """The paper: s = (prod_t pi_theta / pi_old)^(1/|y|), term -min(s A, clip(s) A), the
    same for every token of the row."""
    prod = torch.ones(())
    for lp, lo in zip(logp, old, strict=True):
        prod = prod * torch.exp(lp - lo)
    s = prod ** (1.0 / len(logp))
    clipped = torch.clamp(s, 1.0 - p.clip_low, 1.0 + p.clip_high)
    term = -torch.minimum(s * adv, clipped * adv)
    return [term] * len(logp)


PARAMS = [
    GSPOParams(),
    GSPOParams(clip_low=0.1, clip_high=0.15),
    GSPOParams(clip_low=1.0, clip_high=10.0),
]


def _check_random(fn: Fn) -> None:
    check_against_reference(fn, _row_terms, PARAMS, seed=3, old_spread=0.15)


def test_gspo_by_hand() -> None:
    _check_hand(gspo_loss)


def test_gspo_matches_the_paper_on_random_batches() -> None:
    _check_random(gspo_loss)


def _wrong_token_level_ratio(inp: PolicyLossInput, p: GSPOParams) -> PolicyLossResult:
    """Wrong: PPO's token-level ratio and clip (with GSPO's clip range) where the
    sequence-level one is defined."""
    from recipe_arena.policy_loss.base import finish_loss

    r = torch.exp(inp.logprobs_BL - inp.old_logprobs_BL)
    lo, hi = 1.0 - p.clip_low, 1.0 + p.clip_high
    pg = -torch.minimum(r * inp.advantages_BL, torch.clamp(r, lo, hi) * inp.advantages_BL)
    if inp.token_weights_BL is not None:
        pg = pg * inp.token_weights_BL
    return finish_loss(pg * inp.mask_BL, inp, gspo_loss(inp, p).metrics)


def _wrong_product_ratio(inp: PolicyLossInput, p: GSPOParams) -> PolicyLossResult:
    """Wrong: the sequence ratio as the product of token ratios (no 1/|y| power)."""
    n = inp.mask_BL.sum(-1, keepdim=True).clamp(min=1.0)
    scaled = inp.old_logprobs_BL + (inp.logprobs_BL - inp.old_logprobs_BL) * n
    return gspo_loss(
        PolicyLossInput(
            scaled,
            inp.old_logprobs_BL,
            inp.advantages_BL,
            inp.mask_BL,
            inp.cfg,
            inp.constant_len,
            inp.token_weights_BL,
            inp.extra_loss_BL,
            inp.ref_logprobs_BL,
        ),
        p,
    )


@pytest.mark.parametrize("wrong", [_wrong_token_level_ratio, _wrong_product_ratio])
def test_wrong_variants_fail_the_checks(wrong: Fn) -> None:
    """Each named wrong variant fails the hand-derived check or the reference check."""
    assert_fails_a_check(wrong, _check_hand, _check_random)


def test_clip_fractions_count_rows_by_the_sign_of_their_advantage() -> None:
    """Three rows with s = 1.2 (one token): A = +1 (clipped above), A = 0 (no clip
    counts: min(0, 0) binds nothing), A = -1 (s above the band, the unclipped branch is
    the active one for A < 0): clip_high_frac 1/3, clip_low_frac 0."""
    logp = torch.full((3, 1), L(0.6), requires_grad=True)
    old = torch.full((3, 1), L(0.5))
    adv = torch.tensor([[1.0], [0.0], [-1.0]])
    out = gspo_loss(
        PolicyLossInput(logp, old, adv, torch.ones(3, 1), LossConfig(), 1), GSPOParams()
    )
    assert out.metrics["loss/clip_high_frac"] == pytest.approx(1 / 3)
    assert out.metrics["loss/clip_low_frac"] == 0.0
