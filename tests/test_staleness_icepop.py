"""IcePop (``staleness=icepop``): token masks outside [alpha, beta] of the
engine/trainer ratio k_t = p_old / p_behaviour, hand-derived, against a per-token loop
of the published definition, and two wrong variants the checks must reject."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import pytest
import torch

from recipe_arena.staleness.base import StalenessInput, StalenessResult
from recipe_arena.staleness.icepop import IcePopParams, icepop
from tests.wrong_variants import assert_fails_a_check

Fn = Callable[[StalenessInput, IcePopParams], StalenessResult]


def _inp(old: list[list[float]], beh: list[list[float]], mask: list[list[float]]) -> StalenessInput:
    old_BL = torch.tensor(old)
    return StalenessInput(
        logprobs_BL=old_BL - 0.7,  # a policy that moved: IcePop must read old, not this
        old_logprobs_BL=old_BL,
        behavior_logprobs_BL=torch.tensor(beh),
        advantages_BL=torch.full_like(old_BL, -2.0),  # not the mask: metrics must not read it
        mask_BL=torch.tensor(mask),
        versions_BL=torch.zeros_like(old_BL, dtype=torch.long),
        learner_version=0,
    )


L = math.log


def _hand() -> StalenessInput:
    return _inp(
        [[L(0.2), L(0.5), L(0.9), L(0.6)], [L(0.5), L(1.0), 0.0, 0.0]],
        [[L(0.5), L(0.4), L(0.3), L(0.1)], [L(0.5), L(0.01), 0.0, 0.0]],
        [[1, 1, 1, 1], [1, 0, 0, 0]],
    )


def _check_hand(fn: Fn) -> None:
    """Band [0.5, 5]: k = (0.4, 1.25, 3, 6 | 1, pad). Tokens 0 (k < 0.5) and 3 (k > 5)
    are masked, the rest kept: mask (0, 1, 1, 0 | 1, 0). Default w = 1 everywhere; with
    reweight w = k on kept tokens: (0, 1.25, 3, 0 | 1, 0). Fractions over the 5 trained
    tokens: 1/5 low, 1/5 high."""
    out = fn(_hand(), IcePopParams())
    assert out.mask_BL.tolist() == [[0, 1, 1, 0], [1, 0, 0, 0]]
    assert torch.equal(out.token_weights_BL, torch.ones(2, 4))
    assert out.metrics["staleness/icepop_low_frac"] == pytest.approx(1 / 5)
    assert out.metrics["staleness/icepop_high_frac"] == pytest.approx(1 / 5)
    rw = fn(_hand(), IcePopParams(reweight=True))
    assert rw.mask_BL.tolist() == [[0, 1, 1, 0], [1, 0, 0, 0]]
    expected = torch.tensor([[0.0, 1.25, 3.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    assert torch.allclose(rw.token_weights_BL, expected, atol=1e-6)
    assert torch.equal(rw.extra_loss_BL, torch.zeros(2, 4))


def _reference(inp: StalenessInput, p: IcePopParams) -> tuple[list[list[float]], list[list[float]]]:
    """The paper's definition, token by token: M(k) = k (or 1) inside [alpha, beta], else 0."""
    masks, weights = [], []
    for b in range(inp.mask_BL.shape[0]):
        mrow, wrow = [], []
        for t in range(inp.mask_BL.shape[1]):
            k = math.exp(float(inp.old_logprobs_BL[b, t]) - float(inp.behavior_logprobs_BL[b, t]))
            keep = inp.mask_BL[b, t] > 0 and p.alpha <= k <= p.beta
            mrow.append(1.0 if keep else 0.0)
            wrow.append((k if keep else 0.0) if p.reweight else 1.0)
        masks.append(mrow)
        weights.append(wrow)
    return masks, weights


def _check_random(fn: Fn) -> None:
    """Random batches (log-ratios ~ N(0, 1), a third of tokens untrained) over both values
    of ``reweight`` and three bands: mask and weights equal the per-token loop."""
    gen = torch.Generator().manual_seed(0)
    for reweight, (alpha, beta) in itertools.product(
        (False, True), ((0.5, 5.0), (0.8, 1.25), (0.1, 1.0))
    ):
        p = IcePopParams(alpha=alpha, beta=beta, reweight=reweight)
        for _ in range(3):
            old = -torch.rand(4, 7, generator=gen) * 3
            beh = old - torch.randn(4, 7, generator=gen)
            mask = (torch.rand(4, 7, generator=gen) > 0.33).float()
            inp = _inp(old.tolist(), beh.tolist(), mask.tolist())
            out = fn(inp, p)
            ref_mask, ref_w = _reference(inp, p)
            assert out.mask_BL.tolist() == ref_mask
            assert torch.allclose(out.token_weights_BL, torch.tensor(ref_w), rtol=1e-5)


def test_icepop_by_hand() -> None:
    _check_hand(icepop)


def test_icepop_matches_the_published_definition_on_random_batches() -> None:
    _check_random(icepop)


def _wrong_mask_after_truncation(inp: StalenessInput, p: IcePopParams) -> StalenessResult:
    """Wrong: truncates k at 2 (TIS) and then applies the band to the truncated weight, so
    a token with k = 6 survives as weight 2."""
    k_BL = torch.exp(inp.old_logprobs_BL - inp.behavior_logprobs_BL).clamp(max=2.0)
    keep_BL = inp.mask_BL * ((k_BL >= p.alpha) & (k_BL <= p.beta)).float()
    w_BL = k_BL * keep_BL if p.reweight else torch.ones_like(keep_BL)
    return StalenessResult(w_BL, torch.zeros_like(keep_BL), keep_BL, icepop(inp, p).metrics)


def _wrong_current_policy(inp: StalenessInput, p: IcePopParams) -> StalenessResult:
    """Wrong: the ratio from the current (moved) policy instead of pi_old."""
    return icepop(
        StalenessInput(
            inp.logprobs_BL,
            inp.logprobs_BL,
            inp.behavior_logprobs_BL,
            inp.advantages_BL,
            inp.mask_BL,
            inp.versions_BL,
            inp.learner_version,
        ),
        p,
    )


@pytest.mark.parametrize("wrong", [_wrong_mask_after_truncation, _wrong_current_policy])
def test_wrong_variants_fail_the_checks(wrong: Fn) -> None:
    """Each named wrong variant fails the hand-derived check or the reference check."""
    assert_fails_a_check(wrong, _check_hand, _check_random)


def test_band_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="alpha < beta"):
        IcePopParams(alpha=2.0, beta=1.0)


def test_band_edges_are_kept() -> None:
    """k exactly alpha (p_old = p_behaviour / 2: k = 0.5) and exactly beta (k = 5) are
    inside [alpha, beta]: kept."""
    beh = [[-1.0, -3.0]]
    old = [[-1.0 - math.log(2.0), -3.0 + math.log(5.0)]]
    inp = _inp(old, beh, [[1, 1]])
    ratios = torch.exp(inp.old_logprobs_BL - inp.behavior_logprobs_BL)
    assert ratios[0, 0].item() == 0.5 and ratios[0, 1].item() == pytest.approx(5.0)
    out = icepop(inp, IcePopParams(alpha=0.5, beta=float(ratios[0, 1])))
    assert out.mask_BL.tolist() == [[1, 1]]
