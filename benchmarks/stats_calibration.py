"""How often the comparison's paired test flags pure noise (A/A), by simulation.

Per-question scores as runs produce them: question q has a difficulty theta_q ~
N(-0.5, 1.5^2) on the logit scale, each run (seed) of an arm a skill shift a_s ~ N(0,
tau^2), optionally a seed x question jitter; the verifier scores 1 with probability
expit(theta_q + a_s + jitter). Both arms of an A/A comparison come from the same model,
so every p < 0.05 is a false positive; the nominal rate is 5%. Printed per setting: the
rate of ``eval.stats.paired_test`` (Student's t on the seed term's S - 1 degrees of
freedom, the seed term floored at the residual's), the rate the same variance estimate
gives with Satterthwaite's degrees of freedom instead, the rate of the estimate that
takes the seed term whole even below the residual (the report's test before the floor),
the rate of the textbook estimate that truncates the seed component at zero when it
looks small (on Satterthwaite's degrees of freedom), and the median minimum detectable
effect (80% power).

Run: python benchmarks/stats_calibration.py [--reps 2000]
Last line: ``stats_calibration: A/A false positives <lo>-<hi>% (nominal 5%)``.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats as sps
from scipy.special import expit

from recipe_arena.eval.stats import paired_test, seed_term

SETTINGS = [
    # seeds, questions, tau (seed effect), jitter (seed x question)
    (2, 200, 0.0, 0.0),
    (2, 200, 0.3, 0.0),
    (3, 200, 0.3, 0.0),
    (3, 500, 0.1, 0.0),
    (3, 500, 0.3, 0.5),
    (3, 500, 0.0, 0.0),
    (5, 200, 0.3, 0.0),
    (3, 500, 0.6, 0.0),
    (2, 500, 0.6, 0.0),
]


def _mean_squares(d: np.ndarray) -> tuple[float, float, float, float]:
    """(grand mean, MS_S, MS_Q, MS_E) of the two-way layout ``d``, written out here so
    that the alternatives below do not lean on the code they are compared with."""
    s, q = d.shape
    g, row, col = d.mean(), d.mean(axis=1), d.mean(axis=0)
    ms_s = q * ((row - g) ** 2).sum() / (s - 1)
    ms_q = s * ((col - g) ** 2).sum() / (q - 1)
    ms_e = ((d - row[:, None] - col[None, :] + g) ** 2).sum() / ((s - 1) * (q - 1))
    return g, ms_s, ms_q, ms_e


def whole_p(d: np.ndarray) -> float:
    """p of the estimate that takes the seed term whole, (MS_S + max(0, MS_Q - MS_E)) /
    (SQ), on S - 1 degrees of freedom: the report's test before the floor."""
    s, q = d.shape
    g, ms_s, ms_q, ms_e = _mean_squares(d)
    total = ms_s + max(0.0, ms_q - ms_e)
    if total <= 0:
        return 1.0
    return float(2 * sps.t.sf(abs(g) / np.sqrt(total / (s * q)), s - 1))


def satterthwaite_p(d: np.ndarray) -> float:
    """p of the same variance estimate, (max(MS_S, MS_E) + max(0, MS_Q - MS_E)) / (SQ),
    on Satterthwaite's degrees of freedom instead of S - 1."""
    s, q = d.shape
    g, ms_s, ms_q, ms_e = _mean_squares(d)
    ms_s = seed_term(ms_s, ms_e)
    terms = [(ms_s, s - 1)] + ([(ms_q, q - 1), (-ms_e, (s - 1) * (q - 1))] if ms_q > ms_e else [])
    total = sum(t for t, _ in terms)
    if total <= 0:
        return 1.0
    df = total**2 / sum(t * t / f for t, f in terms)
    return float(2 * sps.t.sf(abs(g) / np.sqrt(total / (s * q)), df))


def truncated_p(d: np.ndarray) -> float:
    """p of the textbook estimate: variance components truncated at zero, so the seed
    term drops out whenever MS_S < MS_E, on Satterthwaite's degrees of freedom."""
    s, q = d.shape
    g, ms_s, ms_q, ms_e = _mean_squares(d)
    keep_a, keep_b = ms_s > ms_e, ms_q > ms_e
    terms = [(ms_s if keep_a else 0.0, s - 1), (ms_q if keep_b else 0.0, q - 1)]
    terms.append(((1 - keep_a - keep_b) * ms_e, (s - 1) * (q - 1)))
    total = sum(t for t, _ in terms)
    if total <= 0:
        return 1.0
    df = total**2 / sum(t * t / f for t, f in terms if t != 0)
    return float(2 * sps.t.sf(abs(g) / np.sqrt(total / (s * q)), df))


def simulate(
    s: int, q: int, tau: float, jitter: float, reps: int, seed: int
) -> tuple[float, float, float, float, float]:
    rng = np.random.default_rng(seed)
    ours = satt = whole = trunc = 0
    mdes = []
    for _ in range(reps):
        theta = rng.normal(-0.5, 1.5, q)

        def arm(theta: np.ndarray = theta) -> np.ndarray:
            logit = theta[None, :] + rng.normal(0, tau, s)[:, None]
            if jitter:
                logit = logit + rng.normal(0, jitter, (s, q))
            return (rng.random((s, q)) < expit(logit)).astype(np.float64)

        a, b = arm(), arm()
        res = paired_test(a, b)
        ours += res.p < 0.05
        satt += satterthwaite_p(a - b) < 0.05
        whole += whole_p(a - b) < 0.05
        trunc += truncated_p(a - b) < 0.05
        mdes.append(res.mde)
    return ours / reps, satt / reps, whole / reps, trunc / reps, float(np.median(mdes))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2000)
    a = ap.parse_args()
    print(
        f"A/A comparisons, {a.reps} repetitions per setting (binomial s.e. of a 5% rate: "
        f"{100 * np.sqrt(0.05 * 0.95 / a.reps):.1f} points)"
    )
    print("seeds questions  tau  jitter | S-1 df  Satterthwaite  whole  truncated | median MDE")
    rates = []
    for i, (s, q, tau, jitter) in enumerate(SETTINGS):
        ours, satt, whole, trunc, mde = simulate(s, q, tau, jitter, a.reps, seed=i)
        rates.append(ours)
        print(
            f"{s:5d} {q:9d} {tau:4.1f} {jitter:7.1f} | {100 * ours:5.1f}%  {100 * satt:12.1f}%  "
            f"{100 * whole:5.1f}%  {100 * trunc:8.1f}% | {mde:.3f}"
        )
    print(
        f"stats_calibration: A/A false positives {100 * min(rates):.1f}-{100 * max(rates):.1f}% (nominal 5%)"
    )


if __name__ == "__main__":
    main()
