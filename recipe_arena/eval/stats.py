"""Statistics for comparisons: intervals, paired tests, detectable effects.

Scores come as a matrix ``scores_SQ``: one row per seed (a training run), one column
per held-out question, the verifier's score of that question under that run. Two
sources of noise make a difference between arms look larger or smaller than it is:
which questions were asked (``Q`` of them) and which runs happened (``S`` seeds;
published seed-to-seed spreads of RL results are as large as many claimed effects).
Every interval here accounts for both.

- ``two_way_interval``: an arm's mean with a 95% t interval over seeds and questions
  (the seed part on S - 1 degrees of freedom, the question part on Q - 1, half-widths
  combined in quadrature); what the comparison report prints.
- ``bootstrap_mean``: a mean with a 95% interval from a crossed bootstrap (seeds and
  questions resampled independently, the percentile interval); the single-run report
  prints it over questions. With 2 to 4 seeds it undercovers (two seeds give the
  seed draw three distinct outcomes); benchmarks/stats_coverage.py measures it.
- ``paired_bootstrap``: the same bootstrap of the paired differences arm - baseline,
  the same seeds and questions drawn for both arms.
- ``paired_test``: the paired per-question difference ``d_sq = arm_sq - base_sq`` (same
  seed index, same question) under the two-way random-effects model
  ``d_sq = delta + a_s + b_q + e_sq``. Its mean has variance
  ``sigma_a^2/S + sigma_b^2/Q + sigma_e^2/(S Q)``, estimated from the two-way ANOVA mean
  squares with the seed term floored at the residual's (``variance_components``); the
  test is Student's t on the seed term's S - 1 degrees of freedom (scipy.stats.t), so
  that with 2 or 3 seeds the interval widens as it must (one seed: questions only,
  Q - 1, and the interval then ignores seed-to-seed noise). Questions that share a
  source (the same prompt asked twice) are averaged into one unit first (clustering).
- ``min_detectable_effect``: the true difference the test finds with probability
  ``power`` at level ``alpha`` (the test's critical value on S - 1 degrees of freedom,
  its variance estimate's spread on Satterthwaite's; a noncentral t when they agree),
  at this number of seeds and questions and this noise: 16.33 standard errors with 2
  seeds, 5.65 with 3, 2.80 with many. ``design_mde`` gives it for a planned design.
- ``holm``: Holm's step-down correction across arms (statsmodels' values, computed here).
- ``pass_at_k``: the unbiased pass@k estimator from n samples with c correct (Chen et
  al. 2021): ``1 - C(n - c, k) / C(n, k)``.

ScaleRL's compute-curve fit (``fit_compute_curve``, ``curve_analysis``) lives in
``eval.curve_fit``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special
from scipy import stats as sps
from scipy.special import comb

ALPHA = 0.05
"""Two-sided level of every test and 1 - coverage of every interval (95%)."""
POWER = 0.8
"""Power at which the minimum detectable effect is stated (the usual 80%)."""


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval [lo, hi]."""

    value: float
    lo: float
    hi: float

    def fmt(self, digits: int = 3, signed: bool = False) -> str:
        s = "+" if signed else ""
        return f"{self.value:{s}.{digits}f} [{self.lo:{s}.{digits}f}, {self.hi:{s}.{digits}f}]"


def _check_matrix(scores_SQ: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(scores_SQ, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"{what}: expected a seeds x questions matrix, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{what}: scores must be finite")
    return a


def bootstrap_mean(
    scores_SQ: np.ndarray, n_boot: int = 2000, seed: int = 0, level: float = 1 - ALPHA
) -> Estimate:
    """Mean of ``scores_SQ`` with the percentile interval of a crossed bootstrap: each
    replicate draws S seeds and Q questions with replacement, independently, and takes
    the mean of the selected rows and columns (as multinomial counts: w_s^T Y w_q / SQ)."""
    y = _check_matrix(scores_SQ, "bootstrap_mean")
    s, q = y.shape
    rng = np.random.default_rng(seed)
    w_s = rng.multinomial(s, np.full(s, 1.0 / s), size=n_boot).astype(np.float64)
    w_q = rng.multinomial(q, np.full(q, 1.0 / q), size=n_boot).astype(np.float64)
    means = np.einsum("bs,sq,bq->b", w_s, y, w_q) / (s * q)
    tail = (1 - level) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return Estimate(float(y.mean()), float(lo), float(hi))


def paired_differences(
    arm_SQ: Sequence[Sequence[float]] | np.ndarray,
    base_SQ: Sequence[Sequence[float]] | np.ndarray,
    weights_Q: Sequence[float] | np.ndarray | None,
    clusters_Q: Sequence[str] | None,
    who: str,
) -> np.ndarray:
    """arm - baseline per (seed, question), questions re-weighted by ``weights_Q`` (scaled
    to mean 1) and averaged within ``clusters_Q``: what the paired test and the paired
    bootstrap both work on."""
    a = _check_matrix(arm_SQ, f"{who} arm")
    b = _check_matrix(base_SQ, f"{who} baseline")
    if a.shape != b.shape:
        raise ValueError(f"{who}: arm {a.shape} and baseline {b.shape} are not paired")
    d = a - b
    if weights_Q is not None:
        w = np.asarray(weights_Q, dtype=np.float64)
        d = d * (w / w.mean())[None, :]
    return cluster_means(d, clusters_Q)


def paired_bootstrap(
    arm_SQ: np.ndarray,
    base_SQ: np.ndarray,
    clusters_Q: Sequence[str] | None = None,
    weights_Q: Sequence[float] | np.ndarray | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 1 - ALPHA,
) -> Estimate:
    """Mean of ``arm - base`` with the percentile interval of a paired crossed
    bootstrap: the difference d_sq = arm_sq - base_sq is formed per seed index and
    question first (weighted and clustered as in ``paired_test``), and each replicate
    draws S seeds and Q questions with replacement, the same draw for both arms (so
    whatever the arms share, a hard question or a lucky data order, cancels). Seeds
    and questions are drawn independently because the design is crossed: every seed
    answers the same questions, so a nested draw (other questions per seed) would
    treat the question effect as independent across seeds and understate it.
    With 2 to 4 seeds the seed draw has few distinct outcomes and the interval
    undercovers (benchmarks/stats_coverage.py); the reports print
    ``paired_test``'s interval instead."""
    d = paired_differences(arm_SQ, base_SQ, weights_Q, clusters_Q, "paired_bootstrap")
    return bootstrap_mean(d, n_boot=n_boot, seed=seed, level=level)


def two_way_interval(
    scores_SQ: np.ndarray, level: float = 1 - ALPHA, satterthwaite: bool = False
) -> Estimate:
    """Mean of ``scores_SQ`` with a t interval from the two-way random-effects model
    y_sq = mu + a_s + b_q + e_sq, for one arm's pass rate. Its variance is
    (max(MS_S, MS_E) + max(0, MS_Q - MS_E)) / (SQ) (``variance_components``: the seed term
    floored at the residual's): a seed part on S - 1 degrees of freedom and a question
    part on about Q - 1. The half-width combines the two parts' own t half-widths in
    quadrature, sqrt(t_{S-1}^2 max(MS_S, MS_E) + t_{Q-1}^2 max(0, MS_Q - MS_E)) / sqrt(SQ)
    (the modified
    large-sample method's form): exact when either part dominates, a little wide
    between. ``satterthwaite=True`` instead uses one t on Satterthwaite's degrees of
    freedom, which undercovers with 2 seeds when the seed part is large
    (benchmarks/stats_coverage.py). One seed: questions only, on Q - 1.
    The comparison report prints it: the crossed bootstrap (``bootstrap_mean``)
    undercovers with 2 to 4 seeds (benchmarks/stats_coverage.py)."""
    y = _check_matrix(scores_SQ, "two_way_interval")
    s, q = y.shape
    m = float(y.mean())
    if q < 2:
        return Estimate(m, m, m) if s < 2 else t_interval(y[:, 0], level)
    tail = 0.5 + level / 2
    ms_s, ms_q, ms_e = _mean_squares(y)
    ms_s = seed_term(ms_s, ms_e)
    if s == 1:
        half = float(sps.t.ppf(tail, q - 1)) * math.sqrt(ms_q / q)
    elif satterthwaite:
        var = (ms_s + max(0.0, ms_q - ms_e)) / (s * q)
        df = _satterthwaite(s, q, ms_s, ms_q, ms_e)
        half = float(sps.t.ppf(tail, df)) * math.sqrt(var)
    else:
        seed_part = float(sps.t.ppf(tail, s - 1)) ** 2 * ms_s
        question_part = float(sps.t.ppf(tail, q - 1)) ** 2 * max(0.0, ms_q - ms_e)
        half = math.sqrt((seed_part + question_part) / (s * q))
    return Estimate(m, m - half, m + half)


def noise_bound(d_SQ: np.ndarray, confidence: float = 0.95) -> float:
    """How far the mean of ``d_SQ`` (seeds x questions, e.g. per-question rises) reaches
    on noise alone, one-sided at ``confidence``:
    sqrt(t_{c,S-1}^2 max(MS_S, MS_E) + t_{c,Q-1}^2 max(0, MS_Q - MS_E)) / sqrt(SQ), in
    the scores' unit, >= 0. The seed part alone is t_{c,S-1} sd(row means) / sqrt(S);
    it is never taken below the residual mean square, because E[MS_S] = Q sa2 + se2 >=
    E[MS_E]: seeds whose means agree by chance (three runs that each gain one question
    of 100) still carry each question's binomial noise. The question part adds what
    questions shared by every seed contribute (the same question flipping in every
    run). Needs at least 2 seeds and 2 questions."""
    y = _check_matrix(d_SQ, "noise_bound")
    s, q = y.shape
    if s < 2 or q < 2:
        raise ValueError(f"noise_bound: needs at least 2 seeds and 2 questions, got {s} x {q}")
    ms_s, ms_q, ms_e = _mean_squares(y)
    seed_part = float(sps.t.ppf(confidence, s - 1)) ** 2 * seed_term(ms_s, ms_e)
    question_part = float(sps.t.ppf(confidence, q - 1)) ** 2 * max(0.0, ms_q - ms_e)
    return math.sqrt((seed_part + question_part) / (s * q))


def t_interval(values: Sequence[float], level: float = 1 - ALPHA) -> Estimate:
    """Mean of a few per-seed figures (compute, wall time) with Student's t interval;
    a single value has no spread to show (lo = hi = value)."""
    x = np.asarray(values, dtype=np.float64)
    m = float(x.mean())
    if len(x) < 2:
        return Estimate(m, m, m)
    half = float(sps.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return Estimate(m, m - half, m + half)


def cluster_means(scores_SQ: np.ndarray, clusters_Q: Sequence[str] | None) -> np.ndarray:
    """Columns that share a cluster label averaged into one column (order of first
    appearance); ``None`` or all-distinct labels return the matrix unchanged."""
    y = np.asarray(scores_SQ, dtype=np.float64)
    if clusters_Q is None:
        return y
    if len(clusters_Q) != y.shape[1]:
        raise ValueError(f"cluster_means: {len(clusters_Q)} labels for {y.shape[1]} questions")
    order: dict[str, list[int]] = {}
    for i, c in enumerate(clusters_Q):
        order.setdefault(c, []).append(i)
    if len(order) == y.shape[1]:
        return y
    return np.stack([y[:, idx].mean(axis=1) for idx in order.values()], axis=1)


@dataclass(frozen=True)
class PairedTest:
    """The paired difference arm - baseline and what it takes to trust it."""

    diff: Estimate
    """Mean difference with its 95% t interval."""
    se: float
    df: float
    """Degrees of freedom of the t reference distribution (S - 1; Q - 1 with one seed)."""
    p: float
    """Two-sided p-value (before any multiplicity correction)."""
    mde: float
    """Minimum detectable effect at ALPHA and POWER for these seeds, questions, noise."""
    seeds: int
    units: int
    """Questions, or clusters of questions that share a source."""
    sd_seed: float
    """Estimated seed-to-seed standard deviation of the difference (sigma_a)."""


def variance_components(d_SQ: np.ndarray) -> tuple[float, float, float, float, float]:
    """Two-way random-effects decomposition of ``d_SQ`` (one observation per cell):
    returns (variance of the grand mean, its degrees of freedom, sigma_a^2, sigma_b^2,
    sigma_e^2).

    Mean squares: MS_S = Q var_s(row means), MS_Q = S var_q(column means), MS_E the
    residual of the additive fit; E[MS_S] = Q sa2 + se2, E[MS_Q] = S sb2 + se2,
    E[MS_E] = se2, and the variance of the mean is sa2/S + sb2/Q + se2/(SQ)
    = (E[MS_S] + E[MS_Q] - E[MS_E]) / (SQ). The estimate keeps the seed term whole and
    never lets it fall below the residual's, var = (max(MS_S, MS_E) + max(0, MS_Q - MS_E))
    / (SQ) (``seed_term``): MS_S/(SQ) alone is the variance of the mean of the per-seed
    means (a t-test over seeds, exact when questions add nothing), and the question term
    is added when the data show one. The seed term is never dropped for looking small:
    with 2 or 3 seeds it often does by chance, and a test that then trusts the questions
    alone flags noise far more often than its level. The degrees of freedom are the seed
    term's, S - 1, which is slightly more conservative than Satterthwaite's
    (benchmarks/stats_calibration.py measures both)."""
    s, q = d_SQ.shape
    ms_s, ms_q, ms_e = _mean_squares(d_SQ)
    if s == 1:
        # one seed: the seed term is not estimable; questions are the only unit
        return ms_q / q, float(q - 1), 0.0, max(0.0, ms_q), 0.0
    sa2 = max(0.0, (ms_s - ms_e) / q)
    sb2 = max(0.0, (ms_q - ms_e) / s)
    var = (seed_term(ms_s, ms_e) + max(0.0, ms_q - ms_e)) / (s * q)
    return var, float(s - 1), sa2, sb2, ms_e


def seed_term(ms_s: float, ms_e: float) -> float:
    """The seed term of every variance here, max(MS_S, MS_E), in the scores' unit squared
    times Q: MS_S floored at the residual mean square. Under the two-way model E[MS_S] =
    Q sa2 + se2 >= E[MS_E], so an MS_S below MS_E says the seeds agreed by chance, not
    that the runs' noise vanished; it is what a REML fit gives at a zero seed variance.
    Why: with 4 seeds MS_S < MS_E / 4 on about 1 draw in 13 where runs differ little
    from seed to seed, and on those draws the interval on MS_S alone covered 80% instead
    of 95%; floored, 99% (benchmarks/conditional_coverage.py, 20,000 draws), at 9% more
    width over all draws."""
    return max(ms_s, ms_e)


def _mean_squares(d_SQ: np.ndarray) -> tuple[float, float, float]:
    """(MS_S, MS_Q, MS_E) of the two-way layout ``d_SQ`` (one observation per cell);
    MS_S and MS_E are 0 with one seed (not estimable)."""
    s, q = d_SQ.shape
    if q < 2:
        raise ValueError("paired_test: needs at least 2 questions")
    grand = d_SQ.mean()
    row = d_SQ.mean(axis=1)
    col = d_SQ.mean(axis=0)
    ms_q = s * float(((col - grand) ** 2).sum()) / (q - 1)
    if s == 1:
        return 0.0, ms_q, 0.0
    ms_s = q * float(((row - grand) ** 2).sum()) / (s - 1)
    resid = d_SQ - row[:, None] - col[None, :] + grand
    ms_e = float((resid**2).sum()) / ((s - 1) * (q - 1))
    return ms_s, ms_q, ms_e


def paired_test(
    arm_SQ: np.ndarray,
    base_SQ: np.ndarray,
    clusters_Q: Sequence[str] | None = None,
    weights_Q: Sequence[float] | np.ndarray | None = None,
    alpha: float = ALPHA,
    power: float = POWER,
) -> PairedTest:
    """Paired per-question test of ``mean(arm) - mean(base)``: rows paired by seed
    index (the same seed, so the same data order), columns by question.

    ``weights_Q`` re-weights questions (mean 1), e.g. so that each domain counts
    equally in a mean over domains: the test then runs on ``w_q * d_sq``."""
    d = paired_differences(arm_SQ, base_SQ, weights_Q, clusters_Q, "paired_test")
    s, q = d.shape
    var, df, sa2, _, _ = variance_components(d)
    mean = float(d.mean())
    se = math.sqrt(var)
    if se == 0:
        p = 1.0 if mean == 0 else 0.0
        return PairedTest(Estimate(mean, mean, mean), 0.0, df, p, 0.0, s, q, 0.0)
    df_se = df if s == 1 else _satterthwaite(s, q, *_mean_squares(d))
    tdist = sps.t(df)
    half = float(tdist.ppf(1 - alpha / 2)) * se
    p = float(2 * tdist.sf(abs(mean) / se))
    return PairedTest(
        diff=Estimate(mean, mean - half, mean + half),
        se=se,
        df=df,
        p=p,
        mde=min_detectable_effect(se, df, alpha, power, df_se),
        seeds=s,
        units=q,
        sd_seed=math.sqrt(sa2),
    )


def min_detectable_effect(
    se: float,
    df: float,
    alpha: float = ALPHA,
    power: float = POWER,
    df_se: float | None = None,
) -> float:
    """Smallest true difference that a two-sided t-test at ``alpha``, with critical value
    from Student's t on ``df`` degrees of freedom and an estimate of standard error
    ``se``, finds with probability ``power``: ``lambda * se`` with lambda the root of
    ``t_test_power(lambda, t_{1-alpha/2, df}, df_se) = power``. ``df_se`` is the degrees
    of freedom of the squared standard error's estimate (``se_hat^2 ~ se^2
    chi2_{df_se} / df_se``); by default ``df``, the noncentral t. ``paired_test``
    passes its estimate's Satterthwaite degrees of freedom, which exceed S - 1 when
    the question term adds to the variance. For large df this is the familiar
    (z_{1-alpha/2} + z_{power}) se = 2.80 se; on 1 degree of freedom 16.33 se."""
    if se == 0:
        return 0.0
    return _noncentrality(float(df), alpha, power, float(df if df_se is None else df_se)) * se


def t_test_power(lam: float, crit: float, df_se: float) -> float:
    """Probability that ``|Z + lam| / sqrt(W) > crit`` with Z standard normal and W ~
    chi2_{df_se} / df_se independent of it: the power of a two-sided t-test whose
    estimate is lam standard errors from zero and whose squared standard error is
    estimated on ``df_se`` degrees of freedom; in [0, 1]. With crit the t quantile on
    df_se it is the noncentral t's two tails. Computed as the integral over u in (0, 1)
    of Phi(lam - crit sqrt(w(u))) + Phi(-lam - crit sqrt(w(u))), w(u) the upper
    u-quantile of W (``_chi_nodes``: Gauss-Legendre, within 1e-5 of
    scipy.integrate.quad), because scipy's noncentral t returns NaN in the far tail
    (``nct.cdf(-crit, 1, lam)`` for many lam >= 7.4). Raises FloatingPointError when the
    result is not finite, never guesses."""
    if math.isinf(df_se):
        got = float(special.ndtr(lam - crit) + special.ndtr(-lam - crit))
    else:
        root_w, weight = _chi_nodes(float(df_se))
        c = crit * root_w
        got = float(np.dot(weight, special.ndtr(lam - c) + special.ndtr(-lam - c)))
    if not math.isfinite(got):
        raise FloatingPointError(
            f"t_test_power: power not finite at lam={lam}, crit={crit}, df_se={df_se}"
        )
    return min(1.0, max(0.0, got))


_PANELS = (0.0, 1e-6, 1e-4, 1e-2, 0.1, 0.5, 0.9, 0.99, 0.9999, 1.0)
"""Panel edges in u of ``_chi_nodes``' composite rule: narrow near 0 (W's far right
tail) and near 1 (W near 0), where the quantile function bends."""


@functools.lru_cache(maxsize=256)
def _chi_nodes(df_se: float, per_panel: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """(sqrt(w(u_i)), weight_i): composite Gauss-Legendre nodes in u over ``_PANELS``
    with W's upper quantiles w(u) = chi2.isf(u, df_se) / df_se, so that sum_i weight_i
    f(sqrt(w(u_i))) approximates E[f(sqrt(W))]."""
    x, w = np.polynomial.legendre.leggauss(per_panel)
    u, weight = [], []
    for lo, hi in zip(_PANELS[:-1], _PANELS[1:], strict=True):
        u.append((hi - lo) / 2 * x + (hi + lo) / 2)
        weight.append((hi - lo) / 2 * w)
    u_N = np.concatenate(u)
    return np.sqrt(sps.chi2.isf(u_N, df_se) / df_se), np.concatenate(weight)


@functools.lru_cache(maxsize=1024)
def _noncentrality(df: float, alpha: float, power: float, df_se: float) -> float:
    crit = float(sps.t.ppf(1 - alpha / 2, df))

    def shortfall(lam: float) -> float:
        return t_test_power(lam, crit, df_se) - power

    hi = crit + 3.0
    while shortfall(hi) < 0:
        hi *= 2
    return float(optimize.brentq(shortfall, 0.0, hi, xtol=1e-9))


def design_mde(
    seeds: int,
    units: int,
    sd_seed: float,
    sd_question: float,
    sd_resid: float,
    alpha: float = ALPHA,
    power: float = POWER,
) -> float:
    """The minimum detectable effect of ``paired_test`` for a planned design: ``seeds``
    x ``units`` paired differences d_sq = delta + a_s + b_q + e_sq with standard
    deviations ``sd_seed`` (a), ``sd_question`` (b) and ``sd_resid`` (e), in the
    scores' unit. The true standard error sqrt(sa2/S + sb2/Q + se2/(SQ)), the test's
    S - 1 degrees of freedom, and the Satterthwaite degrees of freedom of its variance
    estimate at the expected mean squares (``_satterthwaite``); what ``paired_test``
    reports is the same formula at the estimated mean squares."""
    s, q = int(seeds), int(units)
    if s < 1 or q < 2:
        raise ValueError(f"design_mde: needs seeds >= 1 and units >= 2, got {s} x {q}")
    sa2, sb2, se2 = sd_seed**2, sd_question**2, sd_resid**2
    ms_s, ms_q, ms_e = q * sa2 + se2, s * sb2 + se2, se2
    if s == 1:
        return min_detectable_effect(math.sqrt(ms_q / q), q - 1, alpha, power)
    se = math.sqrt(sa2 / s + sb2 / q + se2 / (s * q))
    return min_detectable_effect(se, s - 1, alpha, power, _satterthwaite(s, q, ms_s, ms_q, ms_e))


def _satterthwaite(s: int, q: int, ms_s: float, ms_q: float, ms_e: float) -> float:
    """Satterthwaite's degrees of freedom of ``variance_components``' estimate
    (max(MS_S, MS_E) + max(0, MS_Q - MS_E)) / (SQ), the seed term floored here as the
    estimate floors it (``seed_term``): (sum of terms)^2 / sum(term^2 / its df), the seed
    term on S - 1, MS_Q on Q - 1, MS_E on (S - 1)(Q - 1); S - 1 when the question term is
    cut to 0. At least S - 1: the question term only adds precisely known variance."""
    ms_s = seed_term(ms_s, ms_e)
    b = ms_q - ms_e
    if b <= 0 or ms_s + b <= 0:
        return float(s - 1)
    denom = ms_s**2 / (s - 1) + ms_q**2 / (q - 1) + ms_e**2 / ((s - 1) * (q - 1))
    return max(float(s - 1), (ms_s + b) ** 2 / denom)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the input order: the i-th
    smallest of n p-values times n - i + 1 (i from 1), made non-decreasing in that order
    by a running maximum, capped at 1. An alternative is significant at level alpha when
    its adjusted value is below alpha. Computed here rather than by statsmodels'
    ``multipletests`` (which gives the same values, ``tests/test_stats.py`` checks) because
    that call runs a full garbage collection each time: with a study's runs in memory, a
    tenth of a second a call, most of a study report's rendering."""
    if not pvalues:
        return []
    p_N = np.asarray(pvalues, dtype=np.float64)
    n = len(p_N)
    order = np.argsort(p_N, kind="stable")
    stepped = np.maximum.accumulate(p_N[order] * np.arange(n, 0, -1))
    adjusted = np.empty(n)
    adjusted[order] = np.minimum(stepped, 1.0)
    return [float(x) for x in adjusted]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` passed (Chen et al. 2021):
    1 - C(n-c, k) / C(n, k); needs k <= n."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k: need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    return float(1.0 - comb(n - c, k, exact=True) / comb(n, k, exact=True))
