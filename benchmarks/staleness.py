"""Staleness strategies against the staleness bound, side by side in one run: generated
and trained tokens/s and the final held-out reward for max_staleness in {0, 1, 2, 4, 8}
under each staleness strategy (none, tis, kimi_regularizer, shared_quant,
deepseek_mask).

Every arm is a short RL stage of the olmo3_think recipe (the stage's own builders and
``core.loop.train``) from the same SFT checkpoint with the same seed; only the strategy
and the bound differ. Sampling may run as far ahead as the bound lets it train
(rl.pipeline_depth = max_staleness + 1), so the bound is what limits how stale the data
gets. The held-out reward is greedy pass@1 on the first ``--heldout`` held-out math
problems after the last step. Step counts are small (a few minutes on 2 cores): the
reward column says whether a setting breaks training, not which one wins a long run.

Last line (best = highest held-out reward, ties to the higher trained tokens/s):
    staleness: <strategy> best at max_staleness=<k>, ...

Run: python benchmarks/staleness.py [--steps 6 --prompts 8 --group 4 --tokens 64]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from recipe_arena import wiring
from recipe_arena.compose import load_config
from recipe_arena.config import RunConfig
from recipe_arena.core.backends import make_backend
from recipe_arena.core.loop import train
from recipe_arena.data.micro import build_world
from recipe_arena.data.schema import PromptRow
from recipe_arena.eval.final import evaluate_model
from recipe_arena.models.factory import load_checkpoint
from recipe_arena.rewards import build_scorer
from recipe_arena.rl_start import add_start_arguments, rl_start_checkpoint
from recipe_arena.stages import rlvr
from recipe_arena.staleness import STALENESS
from recipe_arena.wiring import make_learner

BOUNDS = (0, 1, 2, 4, 8)
World = dict[str, dict[str, list[PromptRow]]]


def arm(cfg: RunConfig, init: Path, world: World, scorer: object) -> dict[str, float]:
    rows = [r for d in world["train"].values() for r in d]
    model, tok = load_checkpoint(init)
    learner = make_learner(model, wiring.learner_settings(cfg))
    spec = wiring.actor_spec(cfg, init, 0)
    backend = make_backend("local", spec, 1, overlap=cfg.rl.pipeline_depth > 1)
    t0 = time.perf_counter()
    records = train(
        learner,
        backend,
        rlvr.prompt_source(cfg, rows),
        wiring.loop_settings(cfg, int(tok.pad_token_id)),
    )
    wall = time.perf_counter() - t0
    held = world["heldout"]["math"]
    reward = evaluate_model(cfg, learner.model, tok, held, scorer).metrics["eval/math/pass@1"]
    return {
        "gen_tok_s": records[-1].metrics["throughput/actor_tokens"] / wall,
        "trained_tok_s": sum(r.metrics.get("throughput/trained_tokens", 0.0) for r in records)
        / wall,
        "stale": sum(r.metrics["sampling/stale_groups"] for r in records),
        "reward": reward,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--heldout", type=int, default=64)
    add_start_arguments(p)
    a = p.parse_args()
    init = rl_start_checkpoint([f"seed={a.seed}", *a.start])
    results: dict[tuple[str, int], dict[str, float]] = {}
    world = build_world(load_config([]).world)
    with build_scorer(load_config([]).rewards, shared=True) as scorer:
        for name in STALENESS:
            for k in BOUNDS:
                cfg = load_config(
                    [
                        f"staleness={name}",
                        f"seed={a.seed}",
                        f"rl.steps={a.steps}",
                        f"rl.prompts_per_step={a.prompts}",
                        f"rl.group_size={a.group}",
                        f"rl.max_new_tokens={a.tokens}",
                        f"rl.max_staleness={k}",
                        f"rl.pipeline_depth={k + 1}",
                        f"eval.domain_prompts={{math: {a.heldout}}}",
                    ]
                )
                torch.manual_seed(a.seed)
                r = results[(name, k)] = arm(cfg, init, world, scorer)
                print(
                    f"{name:16s} max_staleness={k}: {r['gen_tok_s']:6.0f} gen tok/s, "
                    f"{r['trained_tok_s']:6.0f} trained tok/s, {r['stale']:3.0f} stale groups, "
                    f"held-out math {r['reward']:.3f}",
                    flush=True,
                )
    best = []
    for name in STALENESS:
        k = max(
            BOUNDS,
            key=lambda k: (results[(name, k)]["reward"], results[(name, k)]["trained_tok_s"]),
        )
        best.append(f"{name} best at max_staleness={k}")
    print("staleness: " + ", ".join(best))


if __name__ == "__main__":
    main()
