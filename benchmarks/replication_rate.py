"""How many of a study's verdicts beyond their MDE a rerun on new seeds should give again,
if the study's own estimates were the truth; and how many did.

    python benchmarks/replication_rate.py PUBLISHED [RERUN] [--sims 1000] [--seed 0]

For each verdict that ``eval.replication`` tests (better or worse by more than its MDE,
any domain, final pass@1 or area), the published comparison's paired differences d_sq
(seed s, question q) are split into the question means m_q and, per domain, the seed
and residual variances of the two-way decomposition (``stats.variance_components``). A
rerun is simulated as the real one is made: the same questions, new seeds, so
d*_sq = m_q + a*_s,dom(q) + e*_sq with a* ~ N(0, sa2_dom) and e* ~ N(0, se2_dom), for
every alternative of the row at once; the simulated matrices go through the report's
own path (``comparison.paired_comparisons``: the paired test, Holm's correction across
the row's alternatives, the verdict). The share of simulated reruns that give the
published verdict is that verdict's plug-in replication probability; their sum is the
expected number of verdicts that hold, with the Poisson-binomial standard deviation
sqrt(sum p (1 - p)). With RERUN, the count that held (``eval.replication``) is printed
beside it.

Why: a 95% interval and an 80%-power MDE promise a rate, not a certainty; this says
whether the misses of a rerun are as many as the design's own noise estimates predict,
or more (which would mean the estimates, not the luck, were wrong). A plug-in estimate
takes the published effects as true, so it leans towards replication (the effects
selected for being large are, on average, a little too large).
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from recipe_arena.eval import stats
from recipe_arena.eval.comparison import ArmData, Columns, paired, paired_comparisons
from recipe_arena.eval.replication import beyond_mde, replications
from recipe_arena.eval.speed import paired_areas
from recipe_arena.eval.study_report import RowResult, load_rows, verdict


def _setting(r: RowResult, measure: str) -> tuple[list[ArmData], Columns, object] | None:
    """(arms compared, their columns, the published matrices function) of one measure."""
    if measure == "final":
        return ([a for a in r.arms if a.runs], r.cols, paired) if r.cols else None
    if r.speed is None or r.speed.cols is None:
        return None
    ok = [a for a in r.arms if a.runs and a.name not in r.speed.excluded]
    return ok, r.speed.cols, paired_areas


class _Plugin:
    """The simulated reruns of one row's measure: per alternative, its question means and
    its per-domain seed and residual standard deviations."""

    def __init__(self, arms: list[ArmData], cols: Columns, matrices: object) -> None:
        base = arms[0]
        self.parts: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]] = {}
        for arm in arms[1:]:
            a, b, seeds = matrices(arm, base)  # type: ignore[operator]
            d = a - b
            sd_seed = np.zeros(d.shape[1])
            sd_resid = np.zeros(d.shape[1])
            for idx in cols.index.values():
                _, _, sa2, _, se2 = stats.variance_components(d[:, idx])
                sd_seed[idx], sd_resid[idx] = math.sqrt(sa2), math.sqrt(se2)
            self.parts[arm.name] = (d.mean(axis=0), sd_seed, sd_resid, seeds)
        self.cols = cols

    def draw(self, rng: np.random.Generator):  # type: ignore[no-untyped-def]
        drawn = {}
        for name, (m, sd_seed, sd_resid, seeds) in self.parts.items():
            s, q = len(seeds), len(m)
            seed_effect = np.zeros((s, q))
            for idx in self.cols.index.values():
                seed_effect[:, idx] = rng.normal(0.0, 1.0, (s, 1)) * sd_seed[idx]
            d = m[None, :] + seed_effect + rng.normal(0.0, 1.0, (s, q)) * sd_resid[None, :]
            drawn[name] = (d, np.zeros_like(d), seeds)
        return lambda arm, base: drawn[arm.name]


def plugin_probabilities(published: Path, sims: int, seed: int) -> dict[tuple, float]:
    """(row, regime, measure, arm, domain) -> the plug-in probability that a rerun gives
    that verdict beyond its MDE again."""
    _, rows = load_rows(published, render=False)
    rng = np.random.default_rng(seed)
    out: dict[tuple, float] = {}
    for r in rows:
        for measure, comps in (("final", r.comps), ("area", r.speed.comps if r.speed else [])):
            tested = {
                (c.arm, c.domain): verdict(c) for c in comps if not c.control and beyond_mde(c)
            }
            setting = _setting(r, measure) if tested else None
            if setting is None:
                continue
            arms, cols, matrices = setting
            plugin = _Plugin(arms, cols, matrices)
            held: dict[tuple[str, str], int] = defaultdict(int)
            for _ in range(sims):
                for c in paired_comparisons(arms, cols, plugin.draw(rng)):
                    if tested.get((c.arm, c.domain)) == verdict(c):
                        held[(c.arm, c.domain)] += 1
            for arm, domain in tested:
                out[(r.row, r.regime, measure, arm, domain)] = held[(arm, domain)] / sims
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("published", type=Path)
    ap.add_argument("rerun", type=Path, nargs="?")
    ap.add_argument("--sims", type=int, default=1000, help="simulated reruns per row (1000)")
    ap.add_argument("--seed", type=int, default=0, help="the simulation's random seed")
    args = ap.parse_args(argv)
    held = {}
    if args.rerun is not None:
        held = {
            (f.row, f.regime, f.measure, f.arm, f.domain): f.holds
            for f in replications(args.published, args.rerun)
        }
    probs = plugin_probabilities(args.published, args.sims, args.seed)
    for key, p in probs.items():
        row, regime, measure, arm, domain = key
        got = (
            {True: "held", False: "DID NOT HOLD", None: "not rerun"}[held.get(key)] if held else ""
        )
        print(f"{p:6.3f}  {row} ({regime}) {arm}, {domain} {measure}  {got}")
    expected = sum(probs.values())
    sd = math.sqrt(sum(p * (1 - p) for p in probs.values()))
    line = (
        f"replication_rate: {len(probs)} verdicts beyond their MDE; expected to hold "
        f"{expected:.1f} (sd {sd:.1f}, plug-in, {args.sims} simulated reruns a row)"
    )
    if held:
        tested = [h for h in held.values() if h is not None]
        line += f"; held {sum(bool(h) for h in tested)} of {len(tested)} rerun"
    print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
