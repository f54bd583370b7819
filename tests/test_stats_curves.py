"""The compute-curve fits of the comparison statistics (``fit_compute_curve``,
``curve_analysis``) on pass rates that follow a known curve R(C): the parameters come back,
the held-back points are predicted, and the search's bounds and failed bootstrap fits
behave as stated."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recipe_arena.eval import curve_fit


def test_curve_fit_recovers_known_parameters() -> None:
    """Noise-free points of R(C) = 0.2 + (0.7 - 0.2) / (1 + (2e5 / C)^1.3) at 20
    compute values from 1e4 to 1e6: the fit returns A = 0.7, B = 1.3, C_mid = 2e5."""
    c = np.linspace(1e4, 1e6, 20)
    r = curve_fit.scaling_curve(c, 0.2, 0.7, 1.3, 2e5)
    fit = curve_fit.fit_compute_curve(c, r, r0=0.2, bounds_a=(0.0, 1.0))
    assert fit is not None
    assert (fit.a, fit.b, fit.c_mid) == pytest.approx((0.7, 1.3, 2e5), rel=1e-3)


def test_curve_jacobian_by_hand_and_against_differences() -> None:
    """At log x = log C_mid (z = 0) the logistic s is 1/2, so with A = 0.9, R0 = 0.1,
    B = 2: R = 0.1 + 0.8 / 2 = 0.5, dR/dA = 1/2, dR/dB = 0 (it is multiplied by
    log_cm - log x = 0) and dR/dlog_cm = -(A - R0) s (1 - s) B = -0.8 * 0.25 * 2 = -0.4.
    Elsewhere the closed form agrees with central differences, and both fits (closed
    form and finite differences) recover the same parameters; the closed form is called
    only when ``CURVE_JACOBIAN`` is on."""
    log_cm = math.log(0.5)
    x = np.array([log_cm, math.log(0.05), 0.0])
    r = curve_fit._curve_on_log_scale(x, 0.9, 2.0, log_cm, r0=0.1)
    jac = curve_fit._curve_jacobian(x, 0.9, 2.0, log_cm, r0=0.1)
    assert r[0] == pytest.approx(0.5)
    assert jac[0] == pytest.approx([0.5, 0.0, -0.4])
    p, h = np.array([0.9, 2.0, log_cm]), 1e-6
    numeric = [
        (
            curve_fit._curve_on_log_scale(x, *(p + e), r0=0.1)
            - curve_fit._curve_on_log_scale(x, *(p - e), r0=0.1)
        )
        / (2 * h)
        for e in np.eye(3) * h
    ]
    assert jac == pytest.approx(np.stack(numeric, axis=1), abs=1e-8)
    c = np.linspace(1e4, 1e6, 20)
    r_C = curve_fit.scaling_curve(c, 0.2, 0.7, 1.3, 2e5)
    fits, jacobian_calls = [], []
    real_jacobian = curve_fit._curve_jacobian

    def counted(*args: object, **kwargs: float) -> np.ndarray:
        jacobian_calls[-1] += 1
        return real_jacobian(*args, **kwargs)  # type: ignore[arg-type]

    for closed_form in (True, False):
        try:
            curve_fit.CURVE_JACOBIAN = closed_form
            curve_fit._curve_jacobian = counted  # type: ignore[assignment]
            jacobian_calls.append(0)
            fits.append(curve_fit.fit_compute_curve(c, r_C, r0=0.2, bounds_a=(0.0, 1.0)))
        finally:
            curve_fit.CURVE_JACOBIAN = True
            curve_fit._curve_jacobian = real_jacobian
    # the closed form is what the fit differentiates with, and only when switched on
    assert jacobian_calls[0] > 0 and jacobian_calls[1] == 0
    assert fits[0] is not None and fits[1] is not None
    assert (fits[0].a, fits[0].b, fits[0].c_mid) == pytest.approx(
        (fits[1].a, fits[1].b, fits[1].c_mid), rel=1e-4
    )


def test_curve_analysis_on_sampled_scores_recovers_and_predicts() -> None:
    """Per-question scores sampled from the same curve: 3 seeds x 2,000 questions,
    evaluations at compute 0, 1e5, ..., 1.9e6 (20 points, so the first half by compute
    holds 10: up to 0.9e6 <= 1.9e6 / 2). Each question's pass probability follows R(C) (expit of its curve on the
    logit scale would change the mean; here every question has probability R(C)), so
    the mean pass rate is R(C) up to sampling noise (s.e. ~0.006). The fit on the first
    half recovers A = 0.6 +- 0.05 and C_mid within 30%, its bootstrap interval for A
    covers 0.6, and its prediction of the second half is off by under 0.03 (RMSE)."""
    rng = np.random.default_rng(5)
    steps = np.arange(20) * 1e5
    r_T = curve_fit.scaling_curve(steps, 0.15, 0.6, 1.5, 5e5)
    r_T[0] = 0.15
    compute_ST = np.tile(steps, (3, 1))
    scores_STQ = (rng.random((3, 20, 2000)) < r_T[None, :, None]).astype(np.float64)
    res = curve_fit.curve_analysis(compute_ST, scores_STQ, n_boot=100)
    assert res is not None
    assert res.fit_points == 10 and res.rest_points == 10
    assert res.a.value == pytest.approx(0.6, abs=0.05)
    assert res.a.lo <= 0.6 <= res.a.hi
    assert res.c_mid.value == pytest.approx(5e5, rel=0.3)
    assert res.rmse_rest.value < 0.03
    assert res.failed_boot < 0.1


def test_curve_analysis_needs_three_points_after_the_start() -> None:
    """Evaluations at compute 0, 1, 2 (the first half holds 0 and 1): no fit."""
    y = np.zeros((1, 3, 4))
    assert curve_fit.curve_analysis(np.array([[0.0, 1.0, 2.0]]), y) is None


def _passing(r_T: np.ndarray, questions: int) -> np.ndarray:
    """Scores of 2 seeds x len(r_T) evaluations x ``questions``: at evaluation t the
    first round(questions * r_T[t]) questions pass (1.0), the rest fail."""
    y = np.zeros((2, len(r_T), questions))
    for t, n in enumerate(np.round(r_T * questions).astype(int)):
        y[:, t, :n] = 1.0
    return y


def test_curve_analysis_fits_with_exactly_three_points_after_the_start() -> None:
    """Evaluations at compute 0, 1, ..., 6, so the first half (compute <= 3) holds the
    start and three points: just enough for A, B and C_mid, so the fit is made (4 fit
    points, 3 held back). The scores are 100 questions of which round(100 R(C)) pass,
    R(C) the curve with R0 0.2, A 0.8, B 1.5, C_mid 2 (0.2, 0.357, 0.5, 0.589 on the fit
    part), so A comes back near 0.8 (the rounding to whole questions moves it by a few
    hundredths)."""
    steps = np.arange(7) * 1.0
    r_T = curve_fit.scaling_curve(steps, 0.2, 0.8, 1.5, 2.0)
    res = curve_fit.curve_analysis(np.tile(steps, (2, 1)), _passing(r_T, 100), n_boot=20)
    assert res is not None
    assert (res.fit_points, res.rest_points) == (4, 3)
    assert res.a.value == pytest.approx(0.8, abs=0.1)


def test_a_curve_that_falls_to_the_lower_bound_is_fitted() -> None:
    """A pass rate that RL drives down: R0 0.5, A 0 (the lower bound of a pass rate),
    B 1.5, C_mid 2, evaluated exactly at compute 1, 2, 4, 8, 1000: R = 0.5 - 0.5 /
    (1 + (2 / C)^1.5) = 0.369, 0.25, 0.131, 0.056, 0.0000447. The fit's starting A,
    extrapolated a fifth of the way past the last point (0.0000447 - 0.1 < 0), is put
    just inside the bound, where the optimiser may start; the fit recovers A 0, B 1.5,
    C_mid 2."""
    c = np.array([1.0, 2, 4, 8, 1000])
    r = 0.5 - 0.5 / (1 + (2 / c) ** 1.5)
    assert np.allclose(curve_fit.scaling_curve(c, 0.5, 0.0, 1.5, 2.0), r)
    fit = curve_fit.fit_compute_curve(c, r, 0.5, (0.0, 1.0))
    assert fit is not None
    assert (fit.a, fit.b, fit.c_mid) == pytest.approx((0.0, 1.5, 2.0), abs=1e-3)


def test_a_pass_rates_fitted_ceiling_is_at_most_one() -> None:
    """Pass rates that follow R(C) with R0 0.1, A 1.3, B 1, C_mid 10 at compute 0..10
    (0.1, 0.209, 0.3, ..., 0.7: every one a valid pass rate, 1,000 questions of which
    round(1000 R) pass, two seeds). Unbounded, the curve through them levels off at 1.3,
    which no pass rate can reach: the report's curve analysis (its default bounds)
    keeps the ceiling A, and the ceiling of the fit on all points, at most 1, and here
    at 1 (the bound is what stops it)."""
    steps = np.arange(11) * 1.0
    r_T = curve_fit.scaling_curve(steps, 0.1, 1.3, 1.0, 10.0)
    res = curve_fit.curve_analysis(np.tile(steps, (2, 1)), _passing(r_T, 1000), n_boot=20)
    assert res is not None
    assert res.a.value == pytest.approx(1.0, abs=1e-6) and res.a.hi <= 1.0
    assert res.full_a.value == pytest.approx(1.0, abs=1e-6) and res.full_a.hi <= 1.0


def test_c_mid_is_searched_up_to_a_thousand_times_the_largest_compute() -> None:
    """``fit_compute_curve`` searches C_mid within [1e-4, 1e3] times the largest
    compute. Points at compute 1..10 from a curve whose midpoint lies far beyond that
    (R0 0.1, A 50, B 0.5, C_mid 1e5, i.e. 1e4 times the largest compute; wide bounds on
    A so that A does not stop the fit first) are fitted with C_mid at the search's
    upper end, 1e3 * 10 = 1e4: a wider search would move it further out."""
    c = np.arange(1, 11) * 1.0
    r = curve_fit.scaling_curve(c, 0.1, 50.0, 0.5, 1e5)
    fit = curve_fit.fit_compute_curve(c, r, 0.1, (0.0, 1e12))
    assert fit is not None
    assert fit.c_mid == pytest.approx(1e4, rel=1e-6)


def test_bootstrap_replicates_whose_fit_fails_are_counted_and_left_out(monkeypatch) -> None:
    """A bootstrap replicate whose curve fit fails is counted in ``failed_boot`` (the
    share of the n_boot replicates) and adds nothing to the intervals. Failed fits of
    resampled curves do not happen on data a test can state, so this test injects them
    (a mock, for a fault that cannot be produced otherwise): the fit of the first part
    of every even-numbered replicate returns None. ``_fit_and_score`` fits twice per
    curve (first part, then all points), so the calls are 1-2 for the point estimate
    and 2i+3, 2i+4 for replicate i; with n_boot 20, replicates 0, 2, ..., 18 fail:
    failed_boot = 10 / 20 = 0.5, and the held-back RMSE is computed only for the fits
    that exist (the replicate is skipped, not scored with a missing fit)."""
    steps = np.arange(7) * 1.0
    r_T = curve_fit.scaling_curve(steps, 0.2, 0.8, 1.5, 2.0)
    y = np.zeros((2, 7, 100))
    for t, n in enumerate(np.round(r_T * 100).astype(int)):
        y[:, t, :n] = 1.0
    real = curve_fit.fit_compute_curve
    calls = {"n": 0}

    def failing_on_even_replicates(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls["n"] += 1
        k = calls["n"]
        if k >= 3 and k % 2 == 1 and ((k - 3) // 2) % 2 == 0:
            return None
        return real(*args, **kwargs)

    monkeypatch.setattr(curve_fit, "fit_compute_curve", failing_on_even_replicates)
    res = curve_fit.curve_analysis(np.tile(steps, (2, 1)), y, n_boot=20)
    assert calls["n"] == 2 + 2 * 20
    assert res is not None
    assert res.failed_boot == pytest.approx(0.5)
    assert res.a.lo <= res.a.value <= res.a.hi
