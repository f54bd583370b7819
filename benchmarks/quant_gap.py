"""What shared quantisation is for: the engine-vs-trainer logprob gap with only the
rollout engine on int8 weights, against both sides on the same int8 weights
(``staleness=shared_quant``), side by side on the same rollouts.

The RL starting checkpoint (base, then SFT) samples ``--prompts`` held-out math prompts
x G through the real actor with its torch engine on int8 per-channel fake-quantised
weights. The learner then scores those rollouts: once in full precision (the gap a
trainer sees when only inference is quantised) and once on the same int8 weights. A
third row, engine and trainer both in full precision, is the floor.

Last line:
    quant_gap: mean |logp_engine - logp_trainer| = <a> engine-only int8, <b> both int8 (<a/b>x)

Run: python benchmarks/quant_gap.py [--prompts 16 --group 4 --tokens 96]
"""

from __future__ import annotations

import argparse

from recipe_arena.compose import load_config
from recipe_arena.config import RLConfig
from recipe_arena.core.actor import ActorTask
from recipe_arena.core.batch import build_learner_batch
from recipe_arena.data.micro import generate_split
from recipe_arena.models.factory import load_checkpoint
from recipe_arena.rl_start import add_start_arguments, rl_start_checkpoint
from recipe_arena.staleness import NoCorrectionParams, SharedQuantParams
from recipe_arena.wiring import (
    ActorSettings,
    LearnerSettings,
    advantage_hook,
    make_actor,
    make_learner,
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--tokens", type=int, default=96)
    add_start_arguments(p)
    a = p.parse_args()
    cfg = load_config([f"seed={a.seed}"])
    init = rl_start_checkpoint([f"seed={a.seed}", *a.start])
    rows = generate_split("math", "heldout", a.prompts, cfg.world.data_seed)
    tasks = [ActorTask(r, seed=a.seed + i, tag=f"{i}") for i, r in enumerate(rows)]
    gaps = {}
    for engine_bits in (8, None):
        model, tok = load_checkpoint(init)
        settings = ActorSettings(
            group_size=a.group, temperature=1.0, max_new_tokens=a.tokens, quant_bits=engine_bits
        )
        actor = make_actor(0, model, tok, "torch", cfg.engine, cfg.rewards, settings)
        try:
            groups = actor.rollouts(tasks)
        finally:
            actor.close()
        batch = build_learner_batch(groups, advantage_hook(cfg.advantage), int(tok.pad_token_id))
        trainers = {"full": NoCorrectionParams(), "int8": SharedQuantParams()}
        for trainer, staleness in trainers.items():
            if engine_bits is None and trainer == "int8":
                continue
            learner = make_learner(model, LearnerSettings(rl=RLConfig(), staleness=staleness))
            _, m = learner.compute_loss(batch)
            engine = "int8" if engine_bits else "full"
            gaps[(engine, trainer)] = m
            print(
                f"engine {engine:4s} trainer {trainer:4s}: mean |dlogp| "
                f"{m['staleness/logprob_diff_mean']:.2e}, max {m['staleness/logprob_diff_max']:.2e}, "
                f"k3 KL {m['staleness/kl_engine_trainer']:.2e} over {batch.num_tokens} tokens",
                flush=True,
            )
    one = gaps[("int8", "full")]["staleness/logprob_diff_mean"]
    both = gaps[("int8", "int8")]["staleness/logprob_diff_mean"]
    print(
        f"quant_gap: mean |logp_engine - logp_trainer| = {one:.2e} engine-only int8, "
        f"{both:.2e} both int8 ({one / both:.0f}x)"
    )


if __name__ == "__main__":
    main()
