"""Sequence-masked TIS (``staleness=seq_mask_tis``): rows whose geometric-mean ratio
g_b = exp(mean_t log(p_old / p_behaviour)) leaves [low, high] are masked, the kept rows'
tokens weighted by min(r_t, cap). Hand-derived, against a per-row loop of the published
definition, and wrong variants the checks must reject."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import pytest
import torch

from recipe_arena.staleness.base import StalenessInput, StalenessResult
from recipe_arena.staleness.seq_mask_tis import SeqMaskTISParams, seq_mask_tis
from tests.wrong_variants import assert_fails_a_check

Fn = Callable[[StalenessInput, SeqMaskTISParams], StalenessResult]
L = math.log


def _inp(old: list[list[float]], beh: list[list[float]], mask: list[list[float]]) -> StalenessInput:
    old_BL = torch.tensor(old)
    return StalenessInput(
        logprobs_BL=old_BL + 0.3,  # a policy that moved: the ratio must come from pi_old
        old_logprobs_BL=old_BL,
        behavior_logprobs_BL=torch.tensor(beh),
        advantages_BL=torch.full_like(old_BL, -2.0),  # not the mask: metrics must not read it
        mask_BL=torch.tensor(mask),
        versions_BL=torch.zeros_like(old_BL, dtype=torch.long),
        learner_version=0,
    )


def _hand() -> StalenessInput:
    """Row 0: r = (1.25, 0.8), g = sqrt(1) = 1. Row 1: r = (1.1, 1.1), g = 1.1. Row 2:
    r = (3, 1/3), g = 1. Row 3: r = 1 on its one trained token, then a padding token
    whose ratio (50) must not enter g."""
    return _inp(
        [[L(0.5), L(0.4)], [L(0.55), L(0.55)], [L(0.9), L(0.1)], [L(0.5), L(1.0)]],
        [[L(0.4), L(0.5)], [L(0.5), L(0.5)], [L(0.3), L(0.3)], [L(0.5), L(0.02)]],
        [[1, 1], [1, 1], [1, 1], [1, 0]],
    )


def _check_hand(fn: Fn) -> None:
    """Band [0.999, 1.001], cap 2: rows 0, 2, 3 kept (g = 1), row 1 masked (g = 1.1).
    Weights: row 0 (1.25, 0.8); row 2 (min(3, 2), 1/3) = (2, 1/3); row 3 (1, 0); row 1 0.
    Masked rows 1/4; mean g over the 4 rows (1 + 1.1 + 1 + 1)/4 = 1.025; capped tokens
    over the 5 kept trained tokens: 1/5. With cap null row 2 keeps r = 3."""
    out = fn(_hand(), SeqMaskTISParams())
    assert out.mask_BL.tolist() == [[1, 1], [0, 0], [1, 1], [1, 0]]
    expected = torch.tensor([[1.25, 0.8], [0.0, 0.0], [2.0, 1 / 3], [1.0, 0.0]])
    assert torch.allclose(out.token_weights_BL, expected, atol=1e-5)
    assert out.metrics["staleness/seq_masked_frac"] == pytest.approx(1 / 4)
    assert out.metrics["staleness/seq_geo_ratio_mean"] == pytest.approx(1.025, rel=1e-5)
    assert out.metrics["staleness/seq_mask_tis_capped_frac"] == pytest.approx(1 / 5)
    raw = fn(_hand(), SeqMaskTISParams(cap=None))
    assert raw.token_weights_BL[2].tolist() == pytest.approx([3.0, 1 / 3], rel=1e-5)
    assert raw.metrics["staleness/seq_mask_tis_capped_frac"] == 0.0


def _reference(
    inp: StalenessInput, p: SeqMaskTISParams
) -> tuple[list[list[float]], list[list[float]]]:
    """Row by row: g_b from the trained tokens' log-ratios, the row kept iff low <= g_b <= high,
    then each kept token's min(r, cap) (r itself with no cap)."""
    masks, weights = [], []
    B, T = inp.mask_BL.shape
    for b in range(B):
        logs = [
            float(inp.old_logprobs_BL[b, t]) - float(inp.behavior_logprobs_BL[b, t])
            for t in range(T)
        ]
        trained = [t for t in range(T) if inp.mask_BL[b, t] > 0]
        g = math.exp(sum(logs[t] for t in trained) / len(trained)) if trained else 1.0
        keep = bool(trained) and p.low <= g <= p.high
        mrow, wrow = [], []
        for t in range(T):
            on = keep and t in trained
            r = math.exp(logs[t])
            mrow.append(1.0 if on else 0.0)
            wrow.append((r if p.cap is None else min(r, p.cap)) if on else 0.0)
        masks.append(mrow)
        weights.append(wrow)
    return masks, weights


def _check_random(fn: Fn) -> None:
    """Random batches (per-token log-ratios ~ N(0, 0.05^2) around a per-row offset so that
    some rows fall inside each band) over cap 2 / 1.02 / null and three bands: mask and
    weights equal the per-row loop."""
    gen = torch.Generator().manual_seed(1)
    bands = ((0.999, 1.001), (0.97, 1.03), (0.5, 2.0))
    for cap, (low, high) in itertools.product((2.0, 1.02, None), bands):
        p = SeqMaskTISParams(low=low, high=high, cap=cap)
        for _ in range(3):
            old = -torch.rand(6, 5, generator=gen) * 3
            offset = torch.randn(6, 1, generator=gen) * 0.03
            beh = old - offset - torch.randn(6, 5, generator=gen) * 0.05
            mask = (torch.rand(6, 5, generator=gen) > 0.3).float()
            mask[0] = 0.0  # a row with nothing trained
            inp = _inp(old.tolist(), beh.tolist(), mask.tolist())
            out = fn(inp, p)
            ref_mask, ref_w = _reference(inp, p)
            assert out.mask_BL.tolist() == ref_mask
            assert torch.allclose(out.token_weights_BL, torch.tensor(ref_w), rtol=1e-5)


def test_seq_mask_tis_by_hand() -> None:
    _check_hand(seq_mask_tis)


def test_seq_mask_tis_matches_the_published_definition_on_random_batches() -> None:
    _check_random(seq_mask_tis)


def _wrong_mask_after_reweighting(inp: StalenessInput, p: SeqMaskTISParams) -> StalenessResult:
    """Wrong: the geometric mean of the truncated weights min(r, cap) decides the mask, so
    row 2 of the hand batch (g of the weights sqrt(2/3) = 0.82) is dropped."""
    mask_BL = inp.mask_BL
    r_BL = torch.exp(inp.old_logprobs_BL - inp.behavior_logprobs_BL) * mask_BL
    w_BL = r_BL if p.cap is None else r_BL.clamp(max=p.cap)
    logw_BL = torch.log(w_BL.clamp(min=1e-30)) * mask_BL
    g_B = torch.exp(logw_BL.sum(-1) / mask_BL.sum(-1).clamp(min=1.0))
    keep_BL = mask_BL * ((g_B >= p.low) & (g_B <= p.high)).float()[:, None]
    return StalenessResult(
        w_BL * keep_BL, torch.zeros_like(mask_BL), keep_BL, seq_mask_tis(inp, p).metrics
    )


def _wrong_padding_in_the_mean(inp: StalenessInput, p: SeqMaskTISParams) -> StalenessResult:
    """Wrong: g_b averages over every position, padding included."""
    return seq_mask_tis(
        StalenessInput(
            inp.logprobs_BL,
            inp.old_logprobs_BL,
            inp.behavior_logprobs_BL,
            inp.advantages_BL,
            torch.ones_like(inp.mask_BL),
            inp.versions_BL,
            inp.learner_version,
        ),
        p,
    )


def _wrong_product_not_mean(inp: StalenessInput, p: SeqMaskTISParams) -> StalenessResult:
    """Wrong: the sequence ratio as the product of token ratios (sequence IS), not the
    geometric mean; rows 0 and 2 still give 1, but longer rows leave the band."""
    mask_BL = inp.mask_BL
    log_r_BL = (inp.old_logprobs_BL - inp.behavior_logprobs_BL) * mask_BL
    g_B = torch.exp(log_r_BL.sum(-1))
    keep_BL = mask_BL * ((g_B >= p.low) & (g_B <= p.high)).float()[:, None]
    r_BL = torch.exp(log_r_BL)
    w_BL = r_BL if p.cap is None else r_BL.clamp(max=p.cap)
    return StalenessResult(
        w_BL * keep_BL, torch.zeros_like(mask_BL), keep_BL, seq_mask_tis(inp, p).metrics
    )


@pytest.mark.parametrize(
    "wrong", [_wrong_mask_after_reweighting, _wrong_padding_in_the_mean, _wrong_product_not_mean]
)
def test_wrong_variants_fail_the_checks(wrong: Fn) -> None:
    """Each named wrong variant fails the hand-derived check or the reference check."""
    assert_fails_a_check(wrong, _check_hand, _check_random)


def test_band_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="low < high"):
        SeqMaskTISParams(low=1.1, high=0.9)
