"""Synchronous vs asynchronous RL on the same sample budget, side by side in one run.

Both arms run the same loop (``core.loop.train``) on the same micro model, engine and
verifiers, from the same starting weights, for the same number of steps of N prompts x
G rollouts (zero-gradient filtering off so both train exactly the same number of
groups). Only the two knobs differ:

    sync:   pipeline_depth = 1, max_staleness = 0  (generate a batch, then train on it)
    async:  pipeline_depth = 2, max_staleness = 1  (actors keep generating while the
            learner trains; weights land in flight)

Reported per arm: generated tokens/s over the wall time and the learner's idle fraction
(time waiting for groups / wall time). Last line:
    async_vs_sync: speedup = <x>, learner idle sync = <a>%, async = <b>%

Threads: sync runs generation and training one after the other, so each torch op may use
all cores (``--sync-threads``, default all); async runs both at once in one process, so
each op gets half (``--async-threads``, default half), one core each on a 2-core machine.

Run: python benchmarks/async_vs_sync.py [--steps 6 --prompts 8 --group 8 --tokens 64]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from recipe_arena.advantages import CenteredParams
from recipe_arena.config import EngineConfig, RLConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core.backends import LocalBackend, threads_per_op
from recipe_arena.core.loop import LoopSettings, train
from recipe_arena.core.prompts import PromptSource
from recipe_arena.data.micro import generate_split
from recipe_arena.models.factory import build_micro, load_checkpoint, save_checkpoint
from recipe_arena.wiring import (
    ActorSettings,
    ActorSpec,
    LearnerSettings,
    advantage_hook,
    make_learner,
)


def arm(
    init: Path, depth: int, staleness: int, threads: int, a: argparse.Namespace
) -> dict[str, float]:
    torch.set_num_threads(threads)
    rows = generate_split("math", "train", 400, seed=0)
    model, tok = load_checkpoint(init)
    learner = make_learner(model, LearnerSettings(rl=RLConfig(lr=1e-3, temperature=1.0)))
    spec = ActorSpec(
        str(init),
        "torch",
        EngineConfig(max_batch_size=a.prompts * a.group),
        RewardsConfig(workers=1),
        ActorSettings(
            group_size=a.group,
            temperature=1.0,
            max_new_tokens=a.tokens,
            max_groups_in_engine=a.prompts,
        ),
    )
    rl = RLConfig(
        steps=a.steps,
        prompts_per_step=a.prompts,
        max_staleness=staleness,
        pipeline_depth=depth,
        zero_gradient_filter=False,
        active_sampling=False,
    )
    s = LoopSettings(
        rl=rl, advantages=advantage_hook(CenteredParams()), seed=0, pad_id=int(tok.pad_token_id)
    )
    backend = LocalBackend(spec, share_cores=False)  # threads set per arm above
    t0 = time.perf_counter()
    records = train(learner, backend, PromptSource(rows, {"math": 1.0}, seed=0), s)
    wall = time.perf_counter() - t0
    idle = sum(
        r.metrics["throughput/learner_idle_frac"] * r.metrics["throughput/step_time_s"]
        for r in records
    )
    trained_tokens = sum(r.metrics.get("throughput/trained_tokens", 0.0) for r in records)
    generated = records[-1].metrics["throughput/actor_tokens"]
    return {
        "wall_s": wall,
        "generated_tokens": generated,
        "tokens_per_s": generated / wall,
        "trained_tokens_per_s": trained_tokens / wall,
        "learner_idle": idle / wall,
        "stale_groups": sum(r.metrics["sampling/stale_groups"] for r in records),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--sync-threads", type=int, default=torch.get_num_threads())
    p.add_argument("--async-threads", type=int, default=threads_per_op(torch.get_num_threads(), 1))
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        model, tok = build_micro(seed=0)
        init = save_checkpoint(model, tok, Path(d) / "init")
        # sync runs one thing at a time, so each op may use every core; async runs the
        # engine and the learner at once, so each gets one core's worth of threads.
        sync = arm(init, 1, 0, a.sync_threads, a)
        asyn = arm(init, 2, 1, a.async_threads, a)
    for name, r in (("sync", sync), ("async", asyn)):
        print(
            f"{name:5s}: wall {r['wall_s']:.1f} s, generated {r['generated_tokens']:.0f} tok, "
            f"{r['tokens_per_s']:.0f} tok/s, trained {r['trained_tokens_per_s']:.0f} tok/s, "
            f"learner idle {r['learner_idle']:.0%}, stale groups {r['stale_groups']:.0f}"
        )
    speedup = asyn["trained_tokens_per_s"] / sync["trained_tokens_per_s"]
    print(
        f"async_vs_sync: speedup = {speedup:.2f}, learner idle sync = {100 * sync['learner_idle']:.0f}%, "
        f"async = {100 * asyn['learner_idle']:.0f}%"
    )


if __name__ == "__main__":
    main()
