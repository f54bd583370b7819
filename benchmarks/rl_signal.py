"""RL signal of the micro world: how much RL gains, how reproducibly, and how fast.

From one SFT checkpoint (the default budget's base and SFT stages, run once), the RL
stage runs once per seed (the prompt filter, RL and the final evaluation, each seed in
its own run directory), one after the other, at the default budget or with the given
overrides. Per seed it prints held-out pass@1 at the RL start and end for every domain
evaluated, the math gain in points, the gain of the last quarter of the RL steps (the
evaluation at 3/4 of the steps to the last; ``rl.eval_every`` must divide the steps into
quarters), the start's math pass@8 at temperature 1 (8 samples per held-out math
prompt, from the SFT checkpoint), the ratio of the rollouts' mean response length over
the last 5 steps to the first 5, and the RL stage's minutes. Last line:

    rl_signal: gain = +<mean> points (sd <sd>), last quarter +<q>, length x<ratio>, rl <minutes> min

with the mean over seeds of each figure and the sample standard deviation of the gain.

Run: python benchmarks/rl_signal.py [--seeds 0 1 2] [--out /tmp/rl_signal] [key=value ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from recipe_arena.compose import load_config
from recipe_arena.config import RunConfig
from recipe_arena.pipeline import run_pipeline

LENGTH_WINDOW = 5
"""Steps averaged at each end of RL for the response-length ratio."""


def rl_records(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("stage") == "rlvr"]


def pass_at_k(cfg: RunConfig, checkpoint: Path, k: int) -> float:
    """pass@k of held-out math at temperature 1: the share of the evaluated math
    prompts with at least one of ``k`` samples right."""
    from recipe_arena.data.chat import decode_response, encode_prompt
    from recipe_arena.data.micro import generate_split
    from recipe_arena.engines import build_engine
    from recipe_arena.engines.base import GenerationRequest, SamplingParams
    from recipe_arena.eval.final import eval_rows
    from recipe_arena.models.factory import load_checkpoint
    from recipe_arena.rewards import build_scorer

    held = generate_split("math", "heldout", cfg.world.heldout_per_domain, cfg.world.data_seed)
    rows = eval_rows(cfg, held)
    model, tok = load_checkpoint(checkpoint)
    engine = build_engine(cfg.engine.name, model, tok, cfg.engine)
    params = SamplingParams(max_new_tokens=cfg.eval.max_new_tokens, temperature=1.0, n=k, seed=0)
    try:
        reqs = [
            GenerationRequest(str(i), encode_prompt(tok, r, cfg.prompt_template), params)
            for i, r in enumerate(rows)
        ]
        comps = engine.generate(reqs)
    finally:
        engine.close()
    with build_scorer(cfg.rewards) as scorer:
        results = scorer.score(
            [rows[int(c.request_id)] for c in comps],
            [decode_response(tok, c.tokens) for c in comps],
        )
    solved = {int(c.request_id) for c, r in zip(comps, results, strict=True) if r.score >= 1.0}
    return len(solved) / len(rows)


def seed_figures(run_dir: Path, steps: int) -> dict[str, Any]:
    recs = rl_records(run_dir)
    evals = {r["step"]: r for r in recs if "eval/math/pass@1" in r}
    start, end, quarter = evals[0], evals[max(evals)], evals.get(steps - steps // 4)
    lengths = [r["length/mean"] for r in recs if "length/mean" in r]
    head, tail = lengths[:LENGTH_WINDOW], lengths[-LENGTH_WINDOW:]
    stages = json.loads((run_dir / "stages.json").read_text())["done"]
    domains = sorted(k.split("/")[1] for k in start if k.endswith("/pass@1") and "mean" not in k)
    return {
        "start": {d: start[f"eval/{d}/pass@1"] for d in domains},
        "end": {d: end[f"eval/{d}/pass@1"] for d in domains},
        "gain": 100 * (end["eval/math/pass@1"] - start["eval/math/pass@1"]),
        "last_quarter": (
            100 * (end["eval/math/pass@1"] - quarter["eval/math/pass@1"])
            if quarter
            else float("nan")
        ),
        "length_ratio": (sum(tail) / len(tail)) / (sum(head) / len(head)),
        "rl_minutes": stages["rlvr"] / 60,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", default="/tmp/rl_signal")
    ap.add_argument("--k", type=int, default=8, help="samples per prompt for pass@k at the start")
    ap.add_argument("overrides", nargs="*", help="key=value overrides for every stage")
    a = ap.parse_args()
    common = ["recipe=olmo3_think", f"out_dir={a.out}", *a.overrides]
    sft_cfg = load_config([*common, "name=sft", "pipeline.stages=[base,sft]"])
    sft_dir = run_pipeline(sft_cfg)
    sft_ckpt = Path(json.loads((sft_dir / "stages.json").read_text())["checkpoint"])
    pass_k = pass_at_k(sft_cfg, sft_ckpt, a.k)
    figures = []
    for seed in a.seeds:
        cfg = load_config(
            [
                *common,
                f"seed={seed}",
                f"name=rl-s{seed}",
                f"world.checkpoint={sft_ckpt}",
                "pipeline.stages=[prompt_filter,rlvr,eval]",
            ]
        )
        t0 = time.perf_counter()
        run_dir = run_pipeline(cfg)
        fig = seed_figures(run_dir, cfg.rl.steps)
        fig["wall_minutes"] = (time.perf_counter() - t0) / 60
        figures.append(fig)
        domains = list(fig["start"])
        print(f"\nseed {seed} ({run_dir})")
        print("| domain | pass@1 start | pass@1 end | change (points) |")
        print("|---|---|---|---|")
        for d in domains:
            change = 100 * (fig["end"][d] - fig["start"][d])
            print(f"| {d} | {fig['start'][d]:.3f} | {fig['end'][d]:.3f} | {change:+.1f} |")
        print(
            f"math gain {fig['gain']:+.1f} points, last quarter {fig['last_quarter']:+.1f}, "
            f"pass@{a.k} at start {pass_k:.3f}, length x{fig['length_ratio']:.2f}, "
            f"rl {fig['rl_minutes']:.2f} min (filter + rl + eval {fig['wall_minutes']:.2f} min)",
            flush=True,
        )
    gains = [f["gain"] for f in figures]
    sd = statistics.stdev(gains) if len(gains) > 1 else float("nan")
    print("\n| domain | change, mean over seeds (points) | sd over seeds |")
    print("|---|---|---|")
    for d in figures[0]["start"]:
        changes = [100 * (f["end"][d] - f["start"][d]) for f in figures]
        spread = statistics.stdev(changes) if len(changes) > 1 else float("nan")
        print(f"| {d} | {statistics.mean(changes):+.1f} | {spread:.1f} |")
    print(
        f"rl_signal: gain = {statistics.mean(gains):+.1f} points (sd {sd:.1f}), "
        f"last quarter {statistics.mean(f['last_quarter'] for f in figures):+.1f}, "
        f"length x{statistics.mean(f['length_ratio'] for f in figures):.2f}, "
        f"rl {statistics.mean(f['rl_minutes'] for f in figures):.1f} min"
    )


if __name__ == "__main__":
    main()
