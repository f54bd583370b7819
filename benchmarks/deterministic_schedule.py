"""What the deterministic schedule costs: the RL loop under ``rl.schedule=wall_clock``
against ``rl.schedule=deterministic`` on the same work, side by side in one run.

Both arms train the same model from the same weights for the same number of steps of
N prompts x G rollouts, zero-gradient filter and active sampling off so both generate
and train exactly the same number of groups:

    wall_clock:     core.loop.train, one actor thread, pipeline_depth 2, max_staleness 1,
                    each torch op on threads_per_op threads (what stages.rlvr sets up)
    deterministic:  core.lockstep.train, rl.lag 1 (and --update-at), generation then
                    training on one thread, each op on all of torch's threads

Reported per arm: wall seconds, generated tokens per second, trained tokens per
second. Last line:
    deterministic_schedule: throughput ratio deterministic / wall_clock = <x>

The model: ``--checkpoint`` (a checkpoint directory, e.g. a DPO stage's output of a
run, whose response lengths are the world's), else a randomly initialised model of the
default micro shape (its responses run to the cap).

Run: python benchmarks/deterministic_schedule.py [--steps 6 --prompts 8 --group 8
     --tokens 96 --update-at 20 --checkpoint PATH]
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
from recipe_arena.core import lockstep
from recipe_arena.core.backends import LocalBackend
from recipe_arena.core.loop import LoopSettings, StepRecord, train
from recipe_arena.core.prompts import PromptSource
from recipe_arena.data.micro import generate_split
from recipe_arena.models.factory import TinyModelSpec, build_micro, load_checkpoint, save_checkpoint
from recipe_arena.wiring import (
    ActorSettings,
    ActorSpec,
    LearnerSettings,
    advantage_hook,
    make_learner,
)


def arm(init: Path, schedule: str, a: argparse.Namespace) -> dict[str, float]:
    rows = generate_split("math", "train", 400, seed=0)
    rl = RLConfig(
        steps=a.steps,
        prompts_per_step=a.prompts,
        group_size=a.group,
        max_new_tokens=a.tokens,
        max_staleness=1,
        pipeline_depth=2,
        zero_gradient_filter=False,
        active_sampling=False,
        schedule=schedule,  # type: ignore[arg-type]
        lag=1,
        update_at_decode_step=a.update_at if schedule == "deterministic" else None,
    )
    model, tok = load_checkpoint(init)
    learner = make_learner(model, LearnerSettings(rl=rl))
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
    s = LoopSettings(
        rl=rl, advantages=advantage_hook(CenteredParams()), seed=0, pad_id=int(tok.pad_token_id)
    )
    source = PromptSource(rows, {"math": 1.0}, seed=0)
    threads = torch.get_num_threads()
    # wall clock: generation and training overlap, each op on its share of the cores
    backend = LocalBackend(spec, share_cores=schedule == "wall_clock")
    t0 = time.perf_counter()
    records: list[StepRecord]
    if schedule == "wall_clock":
        records = train(learner, backend, source, s)
    else:
        try:
            records = lockstep.train(learner, backend.actors[0], source, s)
        finally:
            backend.shutdown()
    wall = time.perf_counter() - t0
    torch.set_num_threads(threads)
    trained = sum(r.metrics.get("throughput/trained_tokens", 0.0) for r in records)
    generated = records[-1].metrics["throughput/actor_tokens"]
    return {
        "wall_s": wall,
        "generated_tok_s": generated / wall,
        "trained_tok_s": trained / wall,
        "lag_mean": sum(r.metrics.get("staleness/lag_mean", 0.0) for r in records) / len(records),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--tokens", type=int, default=96)
    p.add_argument("--update-at", type=int, default=None)
    p.add_argument("--checkpoint", type=Path, default=None)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        init = a.checkpoint
        if init is None:
            model, tok = build_micro(TinyModelSpec(), seed=0)
            init = save_checkpoint(model, tok, Path(tmp) / "init")
        print(
            f"{a.steps} steps of {a.prompts} prompts x {a.group} rollouts, cap {a.tokens} "
            f"tokens, torch threads {torch.get_num_threads()}, model {a.checkpoint or 'random micro'}"
        )
        out = {name: arm(init, name, a) for name in ("wall_clock", "deterministic")}
    print(f"{'schedule':<14} {'wall s':>8} {'gen tok/s':>10} {'train tok/s':>12} {'lag mean':>9}")
    for name, r in out.items():
        print(
            f"{name:<14} {r['wall_s']:8.1f} {r['generated_tok_s']:10.0f} "
            f"{r['trained_tok_s']:12.0f} {r['lag_mean']:9.2f}"
        )
    ratio = out["deterministic"]["trained_tok_s"] / out["wall_clock"]["trained_tok_s"]
    print(f"deterministic_schedule: throughput ratio deterministic / wall_clock = {ratio:.2f}")


if __name__ == "__main__":
    main()
