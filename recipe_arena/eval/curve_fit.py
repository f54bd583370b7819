"""ScaleRL's compute curve: the sigmoid fit of held-out pass rate against compute, and
the analysis the comparison report prints for each arm.

Khatri et al. 2025, "The Art of Scaling Reinforcement Learning Compute for LLMs":
``R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B)``, A the asymptote, B the efficiency, C_mid
the compute at half the gain, R0 the pass rate at the start (fixed, measured).

- ``scaling_curve``: R(C) at given compute (R(0) = R0).
- ``fit_compute_curve``: least-squares fit of A, B, C_mid by scipy.optimize.curve_fit,
  C_mid on a log scale, with the curve's derivatives in closed form
  (``CURVE_JACOBIAN``) and at most ``CURVE_MAX_EVALS`` evaluations.
- ``curve_analysis``: one arm's fit on the first part of its run (compute in learner
  tokens), the RMSE of its prediction on the rest, the fit on the whole run, and
  percentile intervals from a crossed bootstrap over seeds and questions (the scheme of
  ``stats.bootstrap_mean``).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from recipe_arena.eval.stats import ALPHA, Estimate

CURVE_MAX_EVALS = 300
"""Evaluations of the model a compute-curve fit may spend before it counts as not
converged: scipy's own default for three parameters (100 per parameter). A fit that
needs more wanders along a flat ridge (a flat curve leaves B and C_mid unidentified)."""
CURVE_JACOBIAN = True
"""Whether a compute-curve fit uses the curve's derivatives in closed form
(``_curve_jacobian``); False estimates them by finite differences, scipy's default,
which costs three more evaluations of the curve per iteration.
``benchmarks/curve_fit.py`` runs the bootstrap both ways side by side."""


def scaling_curve(compute: np.ndarray, r0: float, a: float, b: float, c_mid: float) -> np.ndarray:
    """ScaleRL's R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B); R(0) = R0."""
    c = np.asarray(compute, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore"):  # C = 0: (C_mid / C)^B = inf, R = R0
        return r0 + (a - r0) / (1.0 + (c_mid / c) ** b)


@dataclass(frozen=True)
class CurveFit:
    a: float
    b: float
    c_mid: float
    r0: float


def fit_compute_curve(
    compute: Sequence[float] | np.ndarray,
    reward: Sequence[float] | np.ndarray,
    r0: float,
    bounds_a: tuple[float, float],
) -> CurveFit | None:
    """Least-squares fit of A, B, C_mid (R0 fixed) to points with compute > 0; None when
    there are fewer than three such points or the fit does not converge within
    ``CURVE_MAX_EVALS`` evaluations. C_mid is
    fitted on a log scale (it spans orders of magnitude), B within (0.05, 20], A within
    ``bounds_a`` (for pass rates [0, 1])."""
    c = np.asarray(compute, dtype=np.float64)
    r = np.asarray(reward, dtype=np.float64)
    keep = c > 0
    c, r = c[keep], r[keep]
    if len(c) < 3:
        return None
    scale = float(np.max(c))
    log_x = np.log(c / scale)  # compute on a log scale, the largest at 0

    far = r[np.argmax(c)]
    a0 = float(np.clip(far + (far - r0) * 0.2, bounds_a[0] + 1e-6, bounds_a[1] - 1e-6))
    lo = [bounds_a[0], 0.05, math.log(1e-4)]
    hi = [bounds_a[1], 20.0, math.log(1e3)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            popt, _ = optimize.curve_fit(
                functools.partial(_curve_on_log_scale, r0=r0),
                log_x,
                r,
                p0=[a0, 1.0, math.log(0.5)],
                bounds=(lo, hi),
                maxfev=CURVE_MAX_EVALS,
                jac=functools.partial(_curve_jacobian, r0=r0) if CURVE_JACOBIAN else "2-point",
            )
    except (RuntimeError, ValueError):
        return None
    a, b, log_cm = (float(v) for v in popt)
    return CurveFit(a=a, b=b, c_mid=math.exp(log_cm) * scale, r0=r0)


def _curve_on_log_scale(
    log_x: np.ndarray, a: float, b: float, log_cm: float, *, r0: float
) -> np.ndarray:
    """``scaling_curve`` at x = exp(log_x), C_mid = exp(log_cm), written as
    R0 + (A - R0) s with s = 1 / (1 + exp(z)), z = B (log_cm - log_x), the logistic
    function of -z (``scipy.special.expit``), which neither overflows nor divides by zero
    at any z."""
    return r0 + (a - r0) * special.expit(-b * (log_cm - log_x))


def _curve_jacobian(
    log_x: np.ndarray, a: float, b: float, log_cm: float, *, r0: float
) -> np.ndarray:
    """The derivatives of ``_curve_on_log_scale`` in (A, B, log_cm), one row per point.
    With s as there and ds/dz = -s (1 - s): dR/dA = s, dR/dB = -(A - R0) s (1 - s)
    (log_cm - log_x), dR/dlog_cm = -(A - R0) s (1 - s) B. Given to the fit so that it
    needs no finite differences (three more evaluations of the curve per iteration)."""
    d = log_cm - log_x
    s_N = special.expit(-b * d)
    slope_N = -(a - r0) * s_N * (1.0 - s_N)
    return np.stack([s_N, slope_N * d, slope_N * b], axis=1)


@dataclass(frozen=True)
class CurveAnalysis:
    """One arm's compute curve: ScaleRL's fit on the first part of the run, how well it
    predicts the rest, and the fit on the whole run; intervals from a crossed
    bootstrap over seeds and questions (percentiles of the refitted parameters)."""

    r0: Estimate
    """The pass rate at the RL start (fixed in the fit), with its bootstrap interval."""
    a: Estimate
    b: Estimate
    c_mid: Estimate
    rmse_rest: Estimate
    """Root-mean-square error of the first-part fit's prediction on the later points."""
    full_a: Estimate
    fit_points: int
    rest_points: int
    failed_boot: float
    """Share of bootstrap replicates whose fit did not converge (left out)."""
    fit: CurveFit
    full: CurveFit | None


def _percentile(values: list[float], point: float, level: float) -> Estimate:
    if not values:
        return Estimate(point, math.nan, math.nan)
    tail = (1 - level) / 2
    lo, hi = np.quantile(np.asarray(values), [tail, 1 - tail])
    return Estimate(point, float(lo), float(hi))


def _fit_and_score(
    c_T: np.ndarray, r_T: np.ndarray, n_fit: int, bounds_a: tuple[float, float]
) -> tuple[CurveFit | None, float, CurveFit | None]:
    fit = fit_compute_curve(c_T[:n_fit], r_T[:n_fit], float(r_T[0]), bounds_a)
    rmse = math.nan
    if fit is not None and n_fit < len(c_T):
        pred = scaling_curve(c_T[n_fit:], fit.r0, fit.a, fit.b, fit.c_mid)
        rmse = float(np.sqrt(np.mean((pred - r_T[n_fit:]) ** 2)))
    full = fit_compute_curve(c_T, r_T, float(r_T[0]), bounds_a)
    return fit, rmse, full


def curve_analysis(
    compute_ST: np.ndarray,
    scores_STQ: np.ndarray,
    fit_fraction: float = 0.5,
    n_boot: int = 200,
    seed: int = 0,
    bounds_a: tuple[float, float] = (0.0, 1.0),
    level: float = 1 - ALPHA,
) -> CurveAnalysis | None:
    """Fit R(C) to an arm's held-out pass rate against compute (learner tokens).

    ``compute_ST[s, t]`` is seed s's cumulative compute at its t-th evaluation (the
    first at compute 0: the RL start, which gives R0); ``scores_STQ`` the per-question
    scores there. The curve is the mean over seeds and questions at each evaluation,
    compute the mean over seeds. The fit uses the evaluations up to ``fit_fraction``
    of the final compute and is scored (RMSE) on the rest. None when the first part
    has fewer than three evaluations after the start."""
    c = np.asarray(compute_ST, dtype=np.float64)
    y = np.asarray(scores_STQ, dtype=np.float64)
    s, t, q = y.shape
    c_T, r_T = c.mean(axis=0), y.mean(axis=(0, 2))
    n_fit = int(np.sum(c_T <= fit_fraction * c_T[-1]))
    if n_fit < 4:
        return None
    fit, rmse, full = _fit_and_score(c_T, r_T, n_fit, bounds_a)
    if fit is None:
        return None
    rng = np.random.default_rng(seed)
    w_s = rng.multinomial(s, np.full(s, 1.0 / s), size=n_boot).astype(np.float64)
    w_q = rng.multinomial(q, np.full(q, 1.0 / q), size=n_boot).astype(np.float64)
    boot_r = np.einsum("bs,stq,bq->bt", w_s, y, w_q) / (s * q)
    boot_c = w_s @ c / s
    draws: dict[str, list[float]] = {"a": [], "b": [], "c": [], "rmse": [], "full_a": []}
    failed = 0
    for i in range(n_boot):
        bf, brmse, bfull = _fit_and_score(boot_c[i], boot_r[i], n_fit, bounds_a)
        if bf is None:
            failed += 1
            continue
        draws["a"].append(bf.a)
        draws["b"].append(bf.b)
        draws["c"].append(bf.c_mid)
        if not math.isnan(brmse):
            draws["rmse"].append(brmse)
        if bfull is not None:
            draws["full_a"].append(bfull.a)
    return CurveAnalysis(
        r0=_percentile([float(v) for v in boot_r[:, 0]], fit.r0, level),
        a=_percentile(draws["a"], fit.a, level),
        b=_percentile(draws["b"], fit.b, level),
        c_mid=_percentile(draws["c"], fit.c_mid, level),
        rmse_rest=_percentile(draws["rmse"], rmse, level),
        full_a=_percentile(draws["full_a"], full.a if full else math.nan, level),
        fit_points=n_fit,
        rest_points=t - n_fit,
        failed_boot=failed / n_boot,
        fit=fit,
        full=full,
    )
