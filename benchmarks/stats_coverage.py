"""Coverage of the comparison report's intervals, and the MDE's power, by simulation.

Per-question scores are drawn as runs on the micro world produce them, with spreads
taken from measured runs (docs/results.md, "The micro world's RL signal"):

- ``sampled``: held-out math at temperature 1, 4 samples per question, 300 questions
  (``eval.temperature=1.0``: the final pass@1 spread over seeds with sd 1.5 points).
  Question difficulty theta_q ~ N(logit 0.6, 1.2^2) puts the middle two thirds of the
  per-question pass rates between 0.31 and 0.83; a run's skill shift a_s ~ N(0, 0.05^2)
  on the logit scale; with the binomial noise of 4 samples the final pass rate then
  spreads over seeds by about 1.6 points (printed).
- ``greedy``: greedy decoding (one 0/1 score per question), 300 questions, theta_q ~
  N(logit 0.8, 1.5^2), a_s ~ N(0, 0.5^2): the seeds spread by about 7 points, as at
  ``rl.lr=1e-4`` with 35% subtractions (sd 7.6 points) -- the case where the seed term
  dominates and an interval that ignores seeds undercovers.

An arm differs from the baseline by a logit shift of 0.2 + N(0, 0.3^2) per question
(a few points on average, some questions helped more than others); each arm's runs
have their own seed shifts. The truths are the population means over questions and
seeds (Monte Carlo, 4 million draws). Every replicate draws new questions and seeds.

Printed per setting and seed count, coverage of the nominal 95% intervals:

- arm pass@1: ``bootstrap_mean`` (crossed percentile bootstrap, what the report printed
  before), ``two_way_interval(satterthwaite=True)`` (one t on Satterthwaite's df) and
  ``two_way_interval`` (seed and question half-widths in quadrature, what it prints);
- arm - baseline: ``paired_bootstrap`` (same seeds and questions for both arms,
  percentile) and ``paired_test``'s interval (two-way, t on S - 1 df, what it prints);
- per-seed figures (learner tokens, wall time): ``t_interval`` on normal draws;
- the MDE: ``paired_test``'s power at ``design_mde``, planted into the normal two-way
  model whose variance components are those of the setting's differences (estimated
  from the mean squares of 2,000 simulated differences at 10 seeds).

Run: python benchmarks/stats_coverage.py [--reps 1000] [--boot 400]
Last line: ``stats_coverage: printed intervals cover <lo>-<hi>% (nominal 95%), MDE power
<lo>-<hi>% (nominal 80%)``.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.special import expit, logit

from recipe_arena.eval import stats

SETTINGS = {
    # name: (questions, samples per question, theta mean, theta sd, seed sd (logit))
    "sampled": (300, 4, float(logit(0.6)), 1.2, 0.05),
    "greedy": (300, 1, float(logit(0.8)), 1.5, 0.5),
}
EFFECT = (0.2, 0.3)
"""The arm's logit shift per question: mean, sd over questions."""
SEED_COUNTS = (2, 3, 4, 10)


def draw(
    rng: np.random.Generator, setting: tuple, seeds: int, shift_Q: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(base_SQ, arm_SQ) of one replicate: new questions, new seed shifts per arm."""
    q, k, mu, sd_theta, tau = setting
    theta = rng.normal(mu, sd_theta, q)
    shift = rng.normal(EFFECT[0], EFFECT[1], q) if shift_Q is None else shift_Q
    out = []
    for extra in (0.0, shift):
        p = expit(theta[None, :] + rng.normal(0, tau, (seeds, 1)) + extra)
        out.append(rng.binomial(k, p) / k)
    return out[0], out[1]


def truths(setting: tuple, rng: np.random.Generator, n: int = 4_000_000) -> tuple[float, float]:
    """(baseline pass rate, arm - baseline) in the population of questions and seeds."""
    _, _, mu, sd_theta, tau = setting
    theta = rng.normal(mu, sd_theta, n)
    base = expit(theta + rng.normal(0, tau, n))
    arm = expit(theta + rng.normal(0, tau, n) + rng.normal(EFFECT[0], EFFECT[1], n))
    return float(base.mean()), float(arm.mean() - base.mean())


def components(setting: tuple, rng: np.random.Generator) -> tuple[float, float, float]:
    """(sd_seed, sd_question, sd_resid) of the setting's differences d = arm - base:
    the expected mean squares at 10 seeds, averaged over 2,000 draws, solved for the
    components (E MS_S = Q sa2 + se2, E MS_Q = S sb2 + se2, E MS_E = se2)."""
    s = 10
    ms = np.zeros(3)
    for _ in range(2000):
        base, arm = draw(rng, setting, s)
        ms += np.array(stats._mean_squares(arm - base))
    ms_s, ms_q, ms_e = ms / 2000
    q = setting[0]
    return (
        math.sqrt(max(0.0, (ms_s - ms_e) / q)),
        math.sqrt(max(0.0, (ms_q - ms_e) / s)),
        math.sqrt(ms_e),
    )


def mde_power(comp: tuple[float, float, float], q: int, s: int, reps: int, rng) -> float:
    sa, sb, se = comp
    delta = stats.design_mde(s, q, sa, sb, se)
    base = np.zeros((s, q))
    found = 0
    for _ in range(reps):
        d = (
            delta
            + rng.normal(0, sa, (s, 1))
            + rng.normal(0, sb, (1, q))
            + rng.normal(0, se, (s, q))
        )
        found += stats.paired_test(d, base).p < stats.ALPHA
    return found / reps


def coverage(name: str, s: int, reps: int, n_boot: int, truth: tuple[float, float], rng) -> dict:
    setting = SETTINGS[name]
    t_base, t_diff = truth
    hits = dict.fromkeys(["arm_boot", "arm_satt", "arm_t", "diff_boot", "diff_t", "seed_t"], 0)
    seed_sd = []
    for i in range(reps):
        base, arm = draw(rng, setting, s)
        seed_sd.append(float(base.mean(axis=1).std(ddof=1)))
        e = stats.bootstrap_mean(base, n_boot=n_boot, seed=i)
        hits["arm_boot"] += e.lo <= t_base <= e.hi
        e = stats.two_way_interval(base)
        hits["arm_t"] += e.lo <= t_base <= e.hi
        e = stats.two_way_interval(base, satterthwaite=True)
        hits["arm_satt"] += e.lo <= t_base <= e.hi
        e = stats.paired_bootstrap(arm, base, n_boot=n_boot, seed=i)
        hits["diff_boot"] += e.lo <= t_diff <= e.hi
        e = stats.paired_test(arm, base).diff
        hits["diff_t"] += e.lo <= t_diff <= e.hi
        # a per-seed figure (learner tokens, wall time): normal around 1.0, sd 0.05
        e = stats.t_interval(list(rng.normal(1.0, 0.05, s)))
        hits["seed_t"] += e.lo <= 1.0 <= e.hi
    out = {k: v / reps for k, v in hits.items()}
    out["seed_sd"] = float(np.mean(seed_sd))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--boot", type=int, default=400)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print(
        f"{a.reps} replicates per row (binomial s.e. of a 95% coverage "
        f"{100 * math.sqrt(0.05 * 0.95 / a.reps):.1f} points, of an 80% power "
        f"{100 * math.sqrt(0.2 * 0.8 / a.reps):.1f}); bootstraps of {a.boot} draws"
    )
    printed, powers = [], []
    for name, setting in SETTINGS.items():
        truth = truths(setting, rng)
        comp = components(setting, rng)
        print(
            f"\n{name}: baseline {truth[0]:.3f}, arm - baseline {truth[1]:+.3f}; differences' "
            f"sd_seed {comp[0]:.4f}, sd_question {comp[1]:.4f}, sd_resid {comp[2]:.4f}"
        )
        print(
            "seeds | seed sd (points) | arm: bootstrap  Satterthwaite  two-way t (printed) | "
            "difference: paired bootstrap  paired t (printed) | per-seed t (printed) | "
            "MDE | MDE power"
        )
        for s in SEED_COUNTS:
            c = coverage(name, s, a.reps, a.boot, truth, rng)
            pw = mde_power(comp, setting[0], s, a.reps, rng)
            mde = stats.design_mde(s, setting[0], *comp)
            printed += [c["arm_t"], c["diff_t"], c["seed_t"]]
            powers.append(pw)
            print(
                f"{s:5d} | {100 * c['seed_sd']:16.1f} | {100 * c['arm_boot']:14.1f}% "
                f"{100 * c['arm_satt']:12.1f}% {100 * c['arm_t']:9.1f}%           | {100 * c['diff_boot']:24.1f}% "
                f"{100 * c['diff_t']:9.1f}%          | {100 * c['seed_t']:19.1f}% | "
                f"{mde:.3f} | {100 * pw:8.1f}%"
            )
    print(
        f"stats_coverage: printed intervals cover {100 * min(printed):.1f}-"
        f"{100 * max(printed):.1f}% (nominal 95%), MDE power {100 * min(powers):.1f}-"
        f"{100 * max(powers):.1f}% (nominal 80%)"
    )


if __name__ == "__main__":
    main()
