"""The comparison statistics on synthetic per-question scores with known truth.

Scores are drawn as a user's runs would produce them: question q has a difficulty
theta_q, run (seed) s of an arm a skill shift a_s ~ N(0, tau^2), and the verifier
scores 1 with probability expit(theta_q + a_s + shift). An A/A comparison draws both
arms from the same model (shift 0, independent seed shifts), so every "significant"
verdict is a false positive.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit

from recipe_arena.eval import stats


def _arm(
    rng: np.random.Generator, theta_Q: np.ndarray, seeds: int, tau: float, shift: float
) -> np.ndarray:
    a_S = rng.normal(0.0, tau, seeds)
    p_SQ = expit(theta_Q[None, :] + a_S[:, None] + shift)
    return (rng.random(p_SQ.shape) < p_SQ).astype(np.float64)


@pytest.mark.parametrize(("seeds", "questions", "tau"), [(3, 200, 0.3), (2, 300, 0.0)])
def test_aa_comparisons_are_flagged_at_about_the_nominal_rate(
    seeds: int, questions: int, tau: float
) -> None:
    """Under A/A the p-value is (at most) uniform, so P(p < 0.05) should be at most 0.05.
    Over 1,500 repetitions the binomial standard error of that rate is
    sqrt(0.05 * 0.95 / 1500) = 0.0056, so the bound is 0.065, 2.7 standard errors above
    nominal. The test is conservative by design, not exact: the seed term's S - 1
    degrees of freedom, and the seed term floored at the residual's (with tau = 0 the
    rate is near 0; benchmarks/stats_calibration.py measures it). A test that pools the
    seed term into the residual whenever MS_S < MS_E flags 8% in the first setting."""
    rng = np.random.default_rng(1234 + seeds)
    flagged = 0
    reps = 1500
    for _ in range(reps):
        theta = rng.normal(-0.5, 1.5, questions)
        base = _arm(rng, theta, seeds, tau, 0.0)
        other = _arm(rng, theta, seeds, tau, 0.0)
        flagged += stats.paired_test(other, base).p < stats.ALPHA
    assert flagged / reps <= 0.065


def test_a_planted_effect_well_above_the_mde_is_found() -> None:
    """Shift the arm's logit by +1.0 (about +0.175 in pass rate at these difficulties);
    4 seeds with a small seed effect (tau 0.05), 500 questions. The measured minimum
    detectable effect must be well below the planted effect (under 0.175 / 2), the
    test must find the effect in nearly every repetition (>= 95 of 100; at twice the
    MDE the power is far above 80%), and the 95% interval must cover the true
    difference E[expit(theta + 1) - expit(theta)] in about 95% of them (>= 88)."""
    rng = np.random.default_rng(7)
    found = covered = 0
    mdes = []
    for _ in range(100):
        theta = rng.normal(-0.5, 1.5, 500)
        truth = float(np.mean(expit(theta + 1.0) - expit(theta)))
        res = stats.paired_test(_arm(rng, theta, 4, 0.05, 1.0), _arm(rng, theta, 4, 0.05, 0.0))
        found += res.p < stats.ALPHA
        covered += res.diff.lo <= truth <= res.diff.hi
        mdes.append(res.mde)
        assert res.diff.value > 0.1
    assert float(np.median(mdes)) < 0.175 / 2
    assert found >= 95
    assert covered >= 88


def test_the_mde_is_the_effect_found_with_80_percent_power() -> None:
    """Normal model without question effects: d_sq = delta + a_s + e_sq, a_s ~ N(0,
    0.02^2), e_sq ~ N(0, 0.5^2), S = 4, Q = 300. The mean's true standard error is
    sqrt(0.02^2/4 + 0.25/1200) = 0.0245 with S - 1 = 3 degrees of freedom; planting
    delta = min_detectable_effect(0.0245, 3) must be found in about 80% of 1,000
    repetitions (binomial s.e. 0.013; the band [0.74, 0.87] also allows the small
    conservatism of the question term the estimate may add)."""
    rng = np.random.default_rng(11)
    s, q = 4, 300
    true_se = math.sqrt(0.02**2 / s + 0.25 / (s * q))
    delta = stats.min_detectable_effect(true_se, s - 1)
    found = 0
    for _ in range(1000):
        d = delta + rng.normal(0, 0.02, s)[:, None] + rng.normal(0, 0.5, (s, q))
        found += stats.paired_test(d, np.zeros_like(d)).p < stats.ALPHA
    assert 0.74 <= found / 1000 <= 0.87


def test_min_detectable_effect_large_df_matches_the_normal_formula() -> None:
    """With many degrees of freedom the noncentral t becomes the normal:
    MDE = (z_0.975 + z_0.8) se = (1.95996 + 0.84162) se = 2.80158 se."""
    assert stats.min_detectable_effect(0.01, 1e6) == pytest.approx(0.0280158, rel=1e-4)


def test_variance_components_by_hand() -> None:
    """d = [[1, 2, 3], [3, 4, 5]]: grand mean 3, row means (2, 4), column means
    (2, 3, 4), residuals all 0. MS_S = Q sum (row - 3)^2 / (S-1) = 3 * 2 / 1 = 6,
    MS_Q = S sum (col - 3)^2 / (Q-1) = 2 * 2 / 2 = 2, MS_E = 0. var = (6 + (2 - 0)) / 6
    = 4/3 on S - 1 = 1 degree of freedom; sigma_a^2 = (6 - 0)/3 = 2, sigma_b^2 = 1."""
    var, df, sa2, sb2, se2 = stats.variance_components(np.array([[1.0, 2, 3], [3, 4, 5]]))
    assert var == pytest.approx(4 / 3)
    assert df == 1
    assert (sa2, sb2, se2) == pytest.approx((2.0, 1.0, 0.0))
    res = stats.paired_test(np.array([[1.0, 2, 3], [3, 4, 5]]), np.zeros((2, 3)))
    assert res.diff.value == 3.0
    # t = 3 / sqrt(4/3) = 2.598 on 1 df: two-sided p = 0.2339; interval 3 +- 12.706 * 1.1547
    assert res.p == pytest.approx(0.2339, abs=1e-3)
    assert res.diff.hi == pytest.approx(3 + 12.7062 * math.sqrt(4 / 3), rel=1e-4)


def test_the_seed_term_is_floored_at_the_residual_by_hand() -> None:
    """Two seeds that each gain one of three questions, different ones: d = [[1, 0, 0],
    [0, 1, 0]]. Row means (1/3, 1/3), so MS_S = 0: the seeds agree exactly. Column means
    (1/2, 1/2, 0), grand mean 1/3: MS_Q = 2 ((1/6)^2 + (1/6)^2 + (1/3)^2) / 2 = 1/6;
    residuals d - column mean = +-1/2 on four cells, MS_E = 1 / (1 x 2) = 1/2. The seed
    term is max(MS_S, MS_E) = 1/2 and the question term max(0, 1/6 - 1/2) = 0, so var =
    (1/2) / 6 = 1/12 on 1 degree of freedom: t = (1/3) / sqrt(1/12) = 1.155, two-sided
    p = 0.4544, interval 1/3 +- 12.706 sqrt(1/12) = 1/3 +- 3.668. Without the floor the
    variance would be 0 and the two runs' one question each a certain effect (p = 0)."""
    d = np.array([[1.0, 0, 0], [0, 1, 0]])
    var, df, sa2, sb2, se2 = stats.variance_components(d)
    assert var == pytest.approx(1 / 12)
    assert df == 1
    assert (sa2, sb2, se2) == pytest.approx((0.0, 0.0, 0.5))
    res = stats.paired_test(d, np.zeros((2, 3)))
    assert res.diff.value == pytest.approx(1 / 3)
    assert res.p == pytest.approx(0.4544, abs=1e-3)
    assert res.diff.hi == pytest.approx(1 / 3 + 3.6680, abs=1e-3)
    # one arm's mean: the same floor, the same half-width (its question term is 0 too)
    est = stats.two_way_interval(d)
    assert est.hi - est.value == pytest.approx(3.6680, abs=1e-3)


def test_clusters_average_questions_that_share_a_source() -> None:
    """Columns labelled (x, y, x): x's two columns (values 1 and 3 per row) average to
    2, so the matrix [[1, 5, 3]] becomes [[2, 5]]; the paired test then has 2 units."""
    out = stats.cluster_means(np.array([[1.0, 5, 3]]), ["x", "y", "x"])
    assert out.tolist() == [[2.0, 5.0]]
    res = stats.paired_test(np.array([[1.0, 5, 3]]), np.zeros((1, 3)), clusters_Q=["x", "y", "x"])
    assert res.units == 2
    assert res.diff.value == 3.5


def test_holm_by_hand() -> None:
    """p = (0.01, 0.04, 0.03): sorted 0.01, 0.03, 0.04 times 3, 2, 1 = 0.03, 0.06, 0.04,
    made monotone: 0.03, 0.06, 0.06; back in input order (0.03, 0.06, 0.06)."""
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([]) == []


def test_holm_gives_statsmodels_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same adjusted p-values as statsmodels' ``multipletests(method="holm")`` (the
    reference implementation) on 200 draws of 1 to 8 p-values, with ties and values
    whose products exceed 1 (capped). One that forgot the running maximum, the cap or
    the return to input order differs from it on some draw. Its Holm branch calls
    ``gc.collect()`` on every call, 0.06 s in a fresh process and over 0.5 s in a test
    process late in the suite (2 minutes for this test), so the test makes that call
    free: a collection changes no value it computes."""
    import gc

    from statsmodels.stats.multitest import multipletests

    monkeypatch.setattr(gc, "collect", lambda *args: 0)

    rng = np.random.default_rng(0)
    for _ in range(200):
        p = rng.choice([0.001, 0.01, 0.02, 0.04, 0.3, 0.6, 0.9], size=rng.integers(1, 9))
        want = multipletests(list(p), method="holm")[1]
        assert stats.holm(list(p)) == pytest.approx(list(want), abs=1e-15)


def test_pass_at_k_by_hand() -> None:
    """n=2, c=1: pass@1 = 1 - C(1,1)/C(2,1) = 1/2, pass@2 = 1 - C(1,2)/C(2,2) = 1;
    n=4, c=2, k=2: 1 - C(2,2)/C(4,2) = 1 - 1/6 = 5/6; no correct sample: 0."""
    assert stats.pass_at_k(2, 1, 1) == 0.5
    assert stats.pass_at_k(2, 1, 2) == 1.0
    assert stats.pass_at_k(4, 2, 2) == pytest.approx(5 / 6)
    assert stats.pass_at_k(8, 0, 4) == 0.0
    with pytest.raises(ValueError):
        stats.pass_at_k(2, 1, 3)


def test_bootstrap_interval_covers_the_mean() -> None:
    """y_sq = 0.5 + a_s + b_q + e_sq with a ~ N(0, 0.05^2), b ~ N(0, 0.2^2), e ~ N(0,
    0.3^2), 10 seeds x 100 questions: the crossed bootstrap's 95% interval should cover
    0.5 in about 95% of repetitions (>= 85 of 100; it undercovers a little with few
    seeds). A constant matrix has a zero-width interval at its value."""
    rng = np.random.default_rng(3)
    covered = 0
    for i in range(100):
        y = (
            0.5
            + rng.normal(0, 0.05, 10)[:, None]
            + rng.normal(0, 0.2, 100)[None, :]
            + rng.normal(0, 0.3, (10, 100))
        )
        est = stats.bootstrap_mean(y, n_boot=500, seed=i)
        covered += est.lo <= 0.5 <= est.hi
    assert covered >= 85
    flat = stats.bootstrap_mean(np.full((1, 5), 0.25))
    assert (flat.value, flat.lo, flat.hi) == pytest.approx((0.25, 0.25, 0.25))


def test_t_interval_by_hand() -> None:
    """(1, 2, 3): mean 2, sd 1, t_{0.975, 2} = 4.3027: 2 +- 4.3027 / sqrt(3) = 2 +- 2.4841."""
    est = stats.t_interval([1.0, 2.0, 3.0])
    assert (est.lo, est.hi) == pytest.approx((2 - 2.4841, 2 + 2.4841), abs=1e-4)


def _power_at_design_mde(seeds: int, draws: int, rng_seed: int) -> float:
    """Share of ``draws`` normal two-way designs d_sq = delta + a_s + e_sq (a ~ N(0,
    0.02^2), e ~ N(0, 0.5^2), 300 questions) that ``paired_test`` finds at the 5% level
    when delta is the design's minimum detectable effect."""
    rng = np.random.default_rng(rng_seed)
    q = 300
    delta = stats.design_mde(seeds, q, 0.02, 0.0, 0.5)
    base = np.zeros((seeds, q))
    found = 0
    for _ in range(draws):
        d = delta + rng.normal(0, 0.02, (seeds, 1)) + rng.normal(0, 0.5, (seeds, q))
        found += stats.paired_test(d, base).p < stats.ALPHA
    return found / draws


@pytest.mark.parametrize("seeds", [2, 3, 4, 10])
def test_the_reported_mde_has_80_percent_power_at_every_seed_count(seeds: int) -> None:
    """Planting the design's MDE (sd_seed 0.02, sd_resid 0.5, 300 questions) and
    testing through ``paired_test`` finds it in about 80% of 500 draws (binomial s.e.
    0.018; band +-0.06, 3.4 s.e.). The old noncentral t, which read scipy's NaN as
    power 1, put the 2-seed MDE at 9.98 se instead of 16.33 se, found in 0.57 of draws:
    outside the band. The reported MDE of one draw is the same formula at the estimated
    variance, lambda * se_hat."""
    assert _power_at_design_mde(seeds, 500, 100 + seeds) == pytest.approx(0.80, abs=0.06)


@pytest.mark.slow
@pytest.mark.parametrize("seeds", [2, 3, 4, 10])
def test_the_reported_mde_has_80_percent_power_precisely(seeds: int) -> None:
    """As above with 5,000 draws (binomial s.e. 0.0057): 0.80 +- 0.03."""
    assert _power_at_design_mde(seeds, 5000, 200 + seeds) == pytest.approx(0.80, abs=0.03)


def test_t_test_power_matches_scipy_where_scipy_is_finite_and_is_finite_where_not() -> None:
    """t_test_power(lam, t_{0.975, df}, df) is the noncentral t's two tails,
    nct.sf(crit, df, lam) + nct.cdf(-crit, df, lam): equal to 1e-5 wherever scipy
    returns a number, and finite in [0, 1] where scipy returns NaN (df 1, lam 8: the
    lower tail is NaN, the upper one 0.4698, and the lower tail there is below 1e-15, so
    the power is 0.4698). At 1 degree of freedom the MDE is 16.334 standard errors
    (scipy's upper tail alone at lam 16.334 is 0.80000), at 2 it is 5.6535, and a larger
    df_se (a more precisely known standard error) on the same critical value gives a
    smaller MDE whenever the power is mostly reached: df_se = 50 at df 1 -> 14.0."""
    nan_seen = False
    for df in (1, 2, 3, 9):
        crit = float(stats.sps.t.ppf(0.975, df))
        for lam in (0.5, 2.0, 5.0, 8.0, 12.0, 16.33, 25.0):
            ours = stats.t_test_power(lam, crit, df)
            ref = float(stats.sps.nct.sf(crit, df, lam) + stats.sps.nct.cdf(-crit, df, lam))
            assert 0.0 <= ours <= 1.0
            if math.isnan(ref):
                nan_seen = True
                assert ours == pytest.approx(float(stats.sps.nct.sf(crit, df, lam)), abs=1e-5)
            else:
                assert ours == pytest.approx(ref, abs=1e-5)
    assert nan_seen  # the grid reaches scipy's NaN region
    assert stats.min_detectable_effect(1.0, 1) == pytest.approx(16.334, abs=1e-3)
    crit1 = float(stats.sps.t.ppf(0.975, 1))
    assert float(stats.sps.nct.sf(crit1, 1, 16.334)) == pytest.approx(0.8, abs=1e-4)
    assert stats.min_detectable_effect(1.0, 2) == pytest.approx(5.6535, abs=1e-3)
    assert stats.min_detectable_effect(1.0, 1, df_se=50) == pytest.approx(14.0, abs=0.05)
    with pytest.raises(FloatingPointError):
        stats.t_test_power(float("nan"), crit1, 1)


def test_paired_bootstrap_resamples_the_pairs_not_the_arms() -> None:
    """Strongly correlated arms: 3 seeds x 40 questions, the baseline's score of
    question q is q / 39 (difficulties 0 to 1, sd 0.29 over questions) in every seed,
    and the arm scores 0.1 more, +-0.01 in a checkerboard ((-1)^(s+q)). Each arm's own
    interval is wide: its mean over questions has s.e. about 0.29 / sqrt(40) = 0.046,
    so a 95% interval of about 0.18 (> 0.15), and any interval built from the arms
    separately is at least that wide. Resampled by pairs, every difference lies in
    [0.09, 0.11], so every replicate mean and the whole interval does too, around the
    mean 0.1."""
    s, q = 3, 40
    base = np.tile(np.arange(q) / (q - 1), (s, 1))
    sign = (-1.0) ** np.add.outer(np.arange(s), np.arange(q))
    arm = base + 0.1 + 0.01 * sign
    for y in (arm, base):
        own = stats.bootstrap_mean(y)
        assert own.hi - own.lo > 0.15
    diff = stats.paired_bootstrap(arm, base)
    assert diff.value == pytest.approx(0.1 + 0.01 * sign.mean())
    assert 0.09 <= diff.lo < diff.value < diff.hi <= 0.11


def test_paired_bootstrap_resamples_seeds_and_questions() -> None:
    """Seed spread large against the question spread: 10 seeds x 50 questions,
    d_sq = a_s with a_s evenly spaced from -0.1 to 0.1 (population sd 0.0606), plus
    +-0.001 by question. Resampling seeds, the mean's bootstrap s.e. is 0.0606 /
    sqrt(10) = 0.0192 and the 95% interval about 2 x 1.96 x 0.0192 = 0.075 wide
    (band [0.06, 0.09]); a bootstrap that kept the seeds fixed would see only the
    +-0.001 and give a width near 0.0003. Transposed (the spread over 100 questions,
    b_q from -0.1 to 0.1, population sd 0.0583, 2 seeds that agree): s.e. 0.00583,
    width about 0.0229 (band [0.018, 0.028]), which a bootstrap that kept the
    questions fixed would show as 0."""
    a_S = np.linspace(-0.1, 0.1, 10)
    d = a_S[:, None] + 0.001 * (-1.0) ** np.arange(50)[None, :]
    est = stats.paired_bootstrap(d, np.zeros_like(d), n_boot=4000)
    assert 0.06 <= est.hi - est.lo <= 0.09
    b_Q = np.linspace(-0.1, 0.1, 100)
    d = np.tile(b_Q, (2, 1))
    est = stats.paired_bootstrap(d, np.zeros_like(d), n_boot=4000)
    assert 0.018 <= est.hi - est.lo <= 0.028
    with pytest.raises(ValueError, match="not paired"):
        stats.paired_bootstrap(np.zeros((2, 3)), np.zeros((3, 3)))


def test_two_way_interval_by_hand() -> None:
    """y = [[1, 2, 3], [3, 4, 5]]: MS_S = 6 on 1 df, MS_Q = 2 on 2 df, MS_E = 0 (as in
    test_variance_components_by_hand). Half-width sqrt(t_{0.975,1}^2 MS_S + t_{0.975,2}^2
    (MS_Q - MS_E)) / sqrt(SQ) = sqrt(12.7062^2 * 6 + 4.3027^2 * 2) / sqrt(6) = 12.947
    around the mean 3. One seed [[1, 2, 3]]: questions only, 2 +- 4.3027 * 1 / sqrt(3)
    = 2 +- 2.4841 (MS_Q = 1)."""
    est = stats.two_way_interval(np.array([[1.0, 2, 3], [3, 4, 5]]))
    assert est.value == 3.0
    assert (est.lo, est.hi) == pytest.approx((3 - 12.9468, 3 + 12.9468), abs=1e-3)
    one = stats.two_way_interval(np.array([[1.0, 2, 3]]))
    assert (one.lo, one.hi) == pytest.approx((2 - 2.4841, 2 + 2.4841), abs=1e-4)


def test_two_way_interval_covers_with_two_seeds_that_spread() -> None:
    """An arm's pass rate at 2 seeds when the seeds spread widely: y_sq = 0.6 + a_s +
    b_q + e_sq, a ~ N(0, 0.07^2) (seeds 7 points apart, as at a high learning rate on
    the micro world), b ~ N(0, 0.25^2), e ~ N(0, 0.3^2), 300 questions. The interval
    should cover 0.6 in about 95% of 400 draws (s.e. 0.011): at least 0.92. The crossed
    bootstrap, which resamples 2 seeds, covers about 0.8 here (bound: below 0.9)."""
    rng = np.random.default_rng(21)
    ours = boot = 0
    reps = 400
    for i in range(reps):
        y = (
            0.6
            + rng.normal(0, 0.07, (2, 1))
            + rng.normal(0, 0.25, (1, 300))
            + rng.normal(0, 0.3, (2, 300))
        )
        est = stats.two_way_interval(y)
        ours += est.lo <= 0.6 <= est.hi
        b = stats.bootstrap_mean(y, n_boot=200, seed=i)
        boot += b.lo <= 0.6 <= b.hi
    assert ours / reps >= 0.92
    assert boot / reps < 0.9


def test_one_seed_by_hand() -> None:
    """One seed, d = [[0, 0.5, 1]] (arm minus a baseline of zeros): the seed term is not
    estimable, questions are the only unit. Column means (0, 0.5, 1) around 0.5:
    MS_Q = S sum (col - 0.5)^2 / (Q - 1) = (0.25 + 0 + 0.25) / 2 = 0.25, so
    variance_components = (MS_Q / Q = 1/12, Q - 1 = 2, sigma_a^2 = 0, sigma_b^2 = 0.25,
    sigma_e^2 = 0). paired_test: se = sqrt(1/12) = 0.288675, t = 0.5 / se = sqrt(3) on
    2 degrees of freedom, whose two-sided p is 1 - t / sqrt(t^2 + 2) = 1 - sqrt(3/5) =
    0.225403; the interval 0.5 +- t_{0.975,2} se = 0.5 +- 4.302653 * 0.288675 =
    0.5 +- 1.242069; the seeds' spread it reports is 0 (nothing to estimate it from)."""
    d = np.array([[0.0, 0.5, 1.0]])
    assert stats.variance_components(d) == pytest.approx((1 / 12, 2.0, 0.0, 0.25, 0.0))
    res = stats.paired_test(d, np.zeros((1, 3)))
    assert (res.df, res.seeds, res.units, res.sd_seed) == (2.0, 1, 3, 0.0)
    assert res.se == pytest.approx(math.sqrt(1 / 12))
    assert res.p == pytest.approx(1 - math.sqrt(3 / 5), abs=1e-9)
    assert (res.diff.lo, res.diff.hi) == pytest.approx((0.5 - 1.242069, 0.5 + 1.242069), abs=1e-6)


def test_arms_that_differ_by_a_constant_or_not_at_all() -> None:
    """Every paired difference equal: all mean squares are 0, so the standard error is
    0. Identical arms (d = 0 everywhere) are no evidence of a difference: p = 1, the
    interval is the point 0, the MDE 0. An arm 0.25 above its baseline on every seed
    and question is a certain difference: p = 0, the interval the point 0.25."""
    base = np.array([[1.0, 0, 1], [0, 1, 1]])
    same = stats.paired_test(base.copy(), base)
    assert (same.p, same.se, same.mde) == (1.0, 0.0, 0.0)
    assert (same.diff.value, same.diff.lo, same.diff.hi) == (0.0, 0.0, 0.0)
    up = stats.paired_test(base + 0.25, base)
    assert (up.p, up.se) == (0.0, 0.0)
    assert (up.diff.value, up.diff.lo, up.diff.hi) == (0.25, 0.25, 0.25)


def test_t_test_power_with_a_known_standard_error_is_the_normal_one() -> None:
    """df_se = inf (the standard error known exactly): the power is
    Phi(lam - crit) + Phi(-lam - crit). At lam = z_0.975 + z_0.8 = 1.959964 + 0.841621
    = 2.801585 and crit = z_0.975 that is Phi(0.841621) + Phi(-4.761549) = 0.8 +
    9.6e-7; at lam = 0 it is 2 Phi(-1.959964) = 0.05, the test's level."""
    z = 1.959964
    assert stats.t_test_power(2.801585, z, math.inf) == pytest.approx(0.800001, abs=2e-6)
    assert stats.t_test_power(0.0, z, math.inf) == pytest.approx(0.05, abs=1e-6)


def test_design_mde_by_hand_at_one_and_three_seeds() -> None:
    """Three seeds, 100 questions, sd_seed 0.1, sd_question 0.3, sd_resid 0.4 (sa2 0.01,
    sb2 0.09, se2 0.16). Expected mean squares: MS_S = Q sa2 + se2 = 1.16, MS_Q = S sb2
    + se2 = 0.43, MS_E = 0.16. Satterthwaite's degrees of freedom of
    (MS_S + MS_Q - MS_E) / (SQ): (1.16 + 0.27)^2 / (1.16^2 / 2 + 0.43^2 / 99 +
    0.16^2 / 198) = 2.0449 / 0.674797 = 3.0304 (above S - 1 = 2: the question term is
    known on 99 degrees of freedom). True standard error sqrt(0.01/3 + 0.09/100 +
    0.16/300) = 0.0690411. So the MDE is the t-test's on S - 1 = 2 (the critical value)
    with its standard error estimated on 3.0304 degrees of freedom: 0.38531, where
    df_se = 2 would give 0.39032.
    One seed, 100 questions, sd_question 0.3, sd_resid 0.4: the seed effect is not
    estimable (it shifts every difference alike); MS_Q = 0.09 + 0.16 = 0.25, the
    standard error sqrt(0.25 / 100) = 0.05 on Q - 1 = 99: the MDE of min_detectable_effect
    (0.05, 99), 2.8291 standard errors (the normal's 2.8016, a little more on 99)."""
    se3 = math.sqrt(0.01 / 3 + 0.09 / 100 + 0.16 / 300)
    assert se3 == pytest.approx(0.0690411, abs=1e-7)
    got3 = stats.design_mde(3, 100, 0.1, 0.3, 0.4)
    assert got3 == pytest.approx(stats.min_detectable_effect(se3, 2, df_se=3.030393), rel=1e-6)
    assert got3 == pytest.approx(0.38531, abs=1e-5)
    assert stats.min_detectable_effect(se3, 2) == pytest.approx(0.39032, abs=1e-5)
    got1 = stats.design_mde(1, 100, 0.3, 0.3, 0.4)
    assert got1 == pytest.approx(stats.min_detectable_effect(0.05, 99), rel=1e-9)
    assert got1 / 0.05 == pytest.approx(2.8291, abs=1e-4)


def test_t_interval_and_satterthwaites_interval_by_hand() -> None:
    """t_interval of (2, 4, 6): mean 4, sd 2, t_{0.975,2} = 4.302653: 4 +- 4.302653 * 2
    / sqrt(3) = 4 +- 4.968276.
    two_way_interval of [[1, 2, 3], [3, 4, 5]] with Satterthwaite's degrees of freedom:
    MS_S = 6, MS_Q = 2, MS_E = 0 (test_variance_components_by_hand), variance (6 + 2) / 6
    = 4/3 on (6 + 2)^2 / (6^2 / 1 + 2^2 / 2 + 0) = 64 / 38 = 1.6842 degrees of freedom,
    whose t_{0.975} is 5.176232: 3 +- 5.176232 * sqrt(4/3) = 3 +- 5.976997."""
    est = stats.t_interval([2.0, 4.0, 6.0])
    assert (est.lo, est.hi) == pytest.approx((4 - 4.968276, 4 + 4.968276), abs=1e-5)
    sat = stats.two_way_interval(np.array([[1.0, 2, 3], [3, 4, 5]]), satterthwaite=True)
    assert sat.value == 3.0
    assert (sat.lo, sat.hi) == pytest.approx((3 - 5.976997, 3 + 5.976997), abs=1e-5)


def test_question_weights_are_scaled_to_mean_one() -> None:
    """Weights (1, 3) are used as (0.5, 1.5) (scaled to mean 1), so the weighted
    difference of d = (0.2, 0.4) on both seeds is (0.5 * 0.2 + 1.5 * 0.4) / 2 = 0.35:
    the same as weights (0.5, 1.5), whatever the weights' own scale."""
    arm, base = np.array([[0.2, 0.4], [0.2, 0.4]]), np.zeros((2, 2))
    assert stats.paired_test(arm, base, weights_Q=[1.0, 3.0]).diff.value == pytest.approx(0.35)
    assert stats.paired_test(arm, base, weights_Q=[0.5, 1.5]).diff.value == pytest.approx(0.35)
