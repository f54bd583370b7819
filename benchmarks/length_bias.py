"""Length bias of asynchronous RL: mean length of the trained completions against all
sampled ones, with and without ``length_control=discard_early_short``, side by side.

Both arms run the RL stage of ``recipe-arena run recipe=olmo3_think`` (the default
budget's RL settings: N = 16 prompts x G = 8, two batches in flight, max_staleness 1,
in-flight weight updates; ``--rl`` adds overrides to both) from the same SFT checkpoint
with the same seed, for ``--steps`` steps, through the real entry point; only the
length-control axis differs. Each run's metrics.jsonl gives, per step, the mean length
and count of every completion the learner received (``length/sampled_*``: stale,
zero-variance and discarded groups too) and of those it trained on
(``length/trained_*``); the script pools them.

Two things separate trained from sampled completions: asynchrony (groups that went
stale, and what discard_early_short drops) and the zero-gradient filter (groups whose
rewards are all equal, sync or async alike). ``--rl rl.zero_gradient_filter=false``
leaves asynchrony alone; ``rl.max_staleness=0`` makes it bite (every group that spans
an in-flight update is stale).

Written against the public entry point and the run's artifacts only, so it measures
whatever micro world the checkout has. Last line:
    length_bias: trained/sampled = <x> without, <y> with

Run: python benchmarks/length_bias.py [--steps 60 --seed 0]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from recipe_arena.eval.stats import Estimate, t_interval
from recipe_arena.stages.start import add_start_arguments, rl_start_checkpoint

ARMS = {"without": "none", "with": "discard_early_short"}


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


def per_step_ratio(records: list[dict[str, float]]) -> Estimate:
    """Mean over steps of trained / sampled mean length, each step's two means taken
    from the same collect phase (same policy), with Student's t interval over the steps.
    Pairing within a step keeps the length trend of RL out of the comparison: pooled
    over the run, an arm that trains a larger share of its early (shorter) completions
    would read as short-biased even if every step trained what it sampled."""
    ratios = [
        r["length/trained_mean"] / r["length/sampled_mean"]
        for r in records
        if r.get("length/trained_n", 0.0) > 0
    ]
    return t_interval(ratios)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--rl", nargs="*", default=[], help="overrides for both arms' RL stage")
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
            ratios[arm] = per_step_ratio(recs)
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
            horizon = total["length/horizon_steps"] / max(total["length/horizon_groups"], 1.0)
            print(
                f"{arm:7s} ({option}): sampled {sampled:.1f} tokens (n={total['length/sampled_n']:.0f}), "
                f"trained {trained:.1f} (n={total['length/trained_n']:.0f}), pooled ratio "
                f"{trained / sampled:.3f}, per-step ratio {ratios[arm].fmt()}; "
                f"stale groups {total['sampling/stale_groups']:.0f}, zero-variance "
                f"{total['sampling/zero_variance_groups']:.0f}, empty {total['sampling/empty_groups']:.0f}, "
                f"discarded rollouts {total['length/discarded_short']:.0f}, "
                f"mean horizon {horizon:.0f} decode steps",
                flush=True,
            )
    print(
        f"length_bias: trained/sampled = {ratios['without'].fmt()} without, "
        f"{ratios['with'].fmt()} with"
    )


if __name__ == "__main__":
    main()
