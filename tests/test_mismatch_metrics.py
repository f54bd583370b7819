"""The engine/trainer mismatch metrics every run logs (``staleness.mismatch``), by hand."""

from __future__ import annotations

import math

import pytest
import torch

from recipe_arena.staleness.mismatch import correction_metrics

L = math.log
# Row 0: r = p_trainer / p_engine = 0.5/0.4 = 1.25, 0.9/0.3 = 3. Row 1: r = 0.2/0.4 = 0.5,
# then a padding token (trainer 0, engine log 0.01) that no metric may read.
TRAINER = torch.tensor([[L(0.5), L(0.9)], [L(0.2), 0.0]])
ENGINE = torch.tensor([[L(0.4), L(0.3)], [L(0.4), L(0.01)]])
MASK = torch.tensor([[1.0, 1.0], [1.0, 0.0]])


def test_divergences_by_hand() -> None:
    """N = 3 trained tokens, log r = (log 1.25, log 3, log 0.5), sum log 1.875.
    kl (k1) = -log(1.875)/3 = -0.209536; k3 = mean(r - 1 - log r) = (1.75 - log 1.875)/3
    = 0.373797; chi2_token = (1.5625 + 9 + 0.25)/3 - 1 = 2.604167; chi2_seq: sequence
    ratios 3.75 and 0.5, (14.0625 + 0.25)/2 - 1 = 6.15625. No correction: ESS 1, IS mean
    1, nothing masked or clipped."""
    m = correction_metrics(TRAINER, ENGINE, MASK)
    assert m["staleness/kl"] == pytest.approx(-L(1.875) / 3, rel=1e-5)
    assert m["staleness/k3_kl"] == pytest.approx((1.75 - L(1.875)) / 3, rel=1e-5)
    assert m["staleness/chi2_token"] == pytest.approx(10.8125 / 3 - 1, rel=1e-5)
    assert m["staleness/chi2_seq"] == pytest.approx(6.15625, rel=1e-5)
    assert m["staleness/rollout_is_eff_sample_size"] == pytest.approx(1.0)
    assert m["staleness/rollout_is_mean"] == pytest.approx(1.0)
    assert m["staleness/correction_masked_frac"] == 0.0
    assert m["staleness/correction_clipped_frac"] == 0.0


def test_truncated_weights_give_ess_and_clipped_fraction() -> None:
    """TIS at cap 2: w = (1.25, 2, 0.5), the 3 truncated: clipped 1/3.
    ESS = (sum w)^2 / (N sum w^2) = 3.75^2 / (3 x 5.8125) = 14.0625 / 17.4375 = 0.806452;
    IS mean 1.25."""
    w = torch.tensor([[1.25, 2.0], [0.5, 0.0]])
    m = correction_metrics(TRAINER, ENGINE, MASK, weights_BL=w, kept_BL=MASK)
    assert m["staleness/rollout_is_eff_sample_size"] == pytest.approx(14.0625 / 17.4375, rel=1e-5)
    assert m["staleness/rollout_is_mean"] == pytest.approx(1.25)
    assert m["staleness/correction_clipped_frac"] == pytest.approx(1 / 3)
    assert m["staleness/correction_masked_frac"] == 0.0


def test_mask_counts_dropped_tokens_and_ess_reads_only_kept_ones() -> None:
    """The correction drops the r = 3 token and weights the rest 1: masked 1/3, ESS 1
    over the 2 kept tokens, clipped 0 (it applies no weights). With weights (1.25, -, 0.5)
    on the kept tokens (their raw ratios): ESS = 1.75^2 / (2 x 1.8125) = 0.844828, clipped
    0."""
    kept = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    m = correction_metrics(TRAINER, ENGINE, MASK, torch.ones(2, 2), kept)
    assert m["staleness/correction_masked_frac"] == pytest.approx(1 / 3)
    assert m["staleness/rollout_is_eff_sample_size"] == pytest.approx(1.0)
    assert m["staleness/correction_clipped_frac"] == 0.0
    w = torch.tensor([[1.25, 0.0], [0.5, 0.0]])
    m = correction_metrics(TRAINER, ENGINE, MASK, w, kept)
    assert m["staleness/rollout_is_eff_sample_size"] == pytest.approx(1.75**2 / 3.625, rel=1e-5)
    assert m["staleness/correction_clipped_frac"] == 0.0


def test_nothing_trained_gives_no_metrics() -> None:
    assert correction_metrics(TRAINER, ENGINE, torch.zeros(2, 2)) == {}


def test_sequence_chi2_clamps_a_long_row_and_one_kept_token_has_an_ess() -> None:
    """One row of 25 tokens, each log r = 1: the row's log-ratio 25 is clamped to 20, so
    chi2_seq = exp(40) - 1, not exp(50) - 1. A correction that keeps a single token with
    weight 2: ESS = 2^2 / (1 x 4) = 1, IS mean 2."""
    m = correction_metrics(torch.ones(1, 25), torch.zeros(1, 25), torch.ones(1, 25))
    assert m["staleness/chi2_seq"] == pytest.approx(math.exp(40.0) - 1.0, rel=1e-4)
    kept = torch.zeros(1, 25)
    kept[0, 0] = 1.0
    w = 2.0 * kept
    m = correction_metrics(torch.ones(1, 25), torch.zeros(1, 25), torch.ones(1, 25), w, kept)
    assert m["staleness/rollout_is_eff_sample_size"] == pytest.approx(1.0)
    assert m["staleness/rollout_is_mean"] == pytest.approx(2.0)
