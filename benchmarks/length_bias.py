"""Length bias of asynchronous RL: mean length of the trained completions against all
sampled ones, with and without ``length_control=discard_early_short``, side by side.

Both arms run the RL stage of ``recipe-arena run recipe=olmo3_think`` (the default
budget's RL settings: N = 8 prompts x G = 8, two batches in flight, max_staleness 1,
in-flight weight updates; ``--rl`` adds overrides to both) from the same SFT checkpoint
with the same seed, for ``--steps`` steps, through the real entry point; only the
length-control axis differs. Each run's metrics.jsonl gives, per step, the mean length
and count of every completion the learner received (``length/sampled_*``: stale,
zero-variance and discarded groups too) and of those it trained on
(``length/trained_*``); the script pools them (``pooled_ratio``).

Two things separate trained from sampled completions: asynchrony (groups that went
stale, and what discard_early_short drops) and the zero-gradient filter (groups whose
rewards are all equal, sync or async alike). ``rl.zero_gradient_filter=false`` leaves
asynchrony alone, and ``rl.lr=0`` keeps the policy (and so the length distribution)
stationary while versions still advance. The default ``--rl`` does both, at
max_staleness 0 with N = 32 prompts (two batches in flight): every group still running
when the learner closes its batch goes stale there, so the bias is strongest. At the
recipe's own settings (``--rl`` with nothing after it) almost no group goes stale;
short windows make some do at max_staleness 1: ``rl.prompts_per_step=4
rl.max_new_tokens=64``. A stale group's prompt is drawn again, so where many go stale
the sampled completions over-represent the prompts with long answers.

Per arm it prints the pooled means with their intervals, and the 25th / 50th / 75th /
90th length percentiles of sampled and trained completions (each step's, averaged over
the steps), to compare the shapes as well as the means.

Written against the public entry point and the run's artifacts only, so it measures
whatever micro world the checkout has. Last line:
    length_bias: trained/sampled = <x> without, <y> with

Run: python benchmarks/length_bias.py [--steps 24 --seed 0 --rl ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from recipe_arena.eval.stats import Estimate
from recipe_arena.rl_start import add_start_arguments, rl_start_checkpoint

ARMS = {"without": "none", "with": "discard_early_short"}
STATIONARY_K0 = [
    "rl.lr=0",
    "rl.max_staleness=0",
    "rl.zero_gradient_filter=false",
    "rl.prompts_per_step=32",
]
"""A stationary policy, no reward filter, and max_staleness 0: asynchrony alone, where
it biases most (module docstring)."""


def run_arm(
    init: Path, option: str, steps: int, seed: int, rl: list[str], out: Path
) -> list[dict[str, float]]:
    """One RL stage from ``init`` through the CLI; its rlvr step records."""
    cmd = [
        sys.executable,
        "-m",
        "recipe_arena.cli",
        "run",
        "recipe=olmo3_think",
        f"length_control={option}",
        f"world.checkpoint={init}",
        "pipeline.stages=[rlvr]",
        f"rl.steps={steps}",
        f"rl.eval_every={steps}",
        "eval.max_prompts_per_domain=1",
        "eval.domain_prompts={}",
        f"seed={seed}",
        *rl,
        f"out_dir={out}",
        f"name={option}",
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    lines = (out / option / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["stage"] == "rlvr" and "length/trained_n" in r]


def pooled(records: list[dict[str, float]], which: str) -> float:
    n = sum(r[f"length/{which}_n"] for r in records)
    return sum(r[f"length/{which}_mean"] * r[f"length/{which}_n"] for r in records) / n


PCTS = (25, 50, 75, 90)


def percentile(records: list[dict[str, float]], which: str, pct: int) -> float:
    """The ``pct``-th percentile of each step's ``which`` lengths, averaged over steps."""
    values = [r[f"length/{which}_p{pct}"] for r in records if f"length/{which}_p{pct}" in r]
    return float(np.mean(values)) if values else float("nan")


def pooled_ratio(records: list[dict[str, float]], n_boot: int = 2000) -> Estimate:
    """Trained / sampled mean length pooled over the run, with a 95% bootstrap interval
    over the steps (each step's trained and sampled sums resampled together). Read it
    with ``--rl rl.lr=0``: a stationary policy, so the length trend of RL cannot enter;
    under learning, an arm that trains a larger share of its early (shorter) completions
    reads as short-biased even if each step trained what it sampled."""
    x_S4 = np.array(
        [
            [
                r.get("length/trained_mean", 0.0) * r.get("length/trained_n", 0.0),
                r.get("length/trained_n", 0.0),
                r["length/sampled_mean"] * r["length/sampled_n"],
                r["length/sampled_n"],
            ]
            for r in records
        ]
    )

    def ratio(rows_S4: np.ndarray) -> float:
        t = rows_S4.sum(axis=0)
        return float((t[0] / t[1]) / (t[2] / t[3]))

    rng = np.random.default_rng(0)
    boots = [ratio(x_S4[rng.integers(0, len(x_S4), len(x_S4))]) for _ in range(n_boot)]
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return Estimate(ratio(x_S4), float(lo), float(hi))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=24)
    p.add_argument(
        "--rl",
        nargs="*",
        default=STATIONARY_K0,
        help="overrides for both arms' RL stage (default: %(default)s; none: the recipe's)",
    )
    p.add_argument(
        "--checkpoint", help="start both arms from this checkpoint instead of the cached SFT one"
    )
    add_start_arguments(p)
    a = p.parse_args()
    init = Path(a.checkpoint) if a.checkpoint else rl_start_checkpoint([f"seed={a.seed}", *a.start])
    ratios = {}
    with tempfile.TemporaryDirectory(prefix="length-bias-") as d:
        for arm, option in ARMS.items():
            recs = run_arm(init, option, a.steps, a.seed, a.rl, Path(d))
            sampled, trained = pooled(recs, "sampled"), pooled(recs, "trained")
            ratios[arm] = pooled_ratio(recs)
            total = {
                k: sum(r.get(k, 0.0) for r in recs)
                for k in (
                    "length/sampled_n",
                    "length/trained_n",
                    "sampling/stale_groups",
                    "sampling/zero_variance_groups",
                    "sampling/empty_groups",
                    "length/discarded_short",
                    "length/horizon_steps",
                    "length/horizon_groups",
                )
            }
            groups = total["length/horizon_groups"]
            horizon = (
                f"{total['length/horizon_steps'] / groups:.0f} decode steps" if groups else "none"
            )
            print(
                f"{arm:7s} ({option}): sampled {sampled:.1f} tokens (n={total['length/sampled_n']:.0f}), "
                f"trained {trained:.1f} (n={total['length/trained_n']:.0f}), ratio "
                f"{ratios[arm].fmt()}; "
                f"stale groups {total['sampling/stale_groups']:.0f}, zero-variance "
                f"{total['sampling/zero_variance_groups']:.0f}, empty {total['sampling/empty_groups']:.0f}, "
                f"discarded rollouts {total['length/discarded_short']:.0f}, "
                f"mean horizon {horizon}",
                flush=True,
            )
            shape = "; ".join(
                f"{which} " + " ".join(f"p{p} {percentile(recs, which, p):.1f}" for p in PCTS)
                for which in ("sampled", "trained")
            )
            print(f"{arm:7s} percentiles (tokens, mean over steps): {shape}", flush=True)
    print(
        f"length_bias: trained/sampled = {ratios['without'].fmt()} without, "
        f"{ratios['with'].fmt()} with"
    )


if __name__ == "__main__":
    main()
