"""The micro judge's training cost: the default settings beside the earlier ones.

For each setting (``--before``: the settings the judge trained with before its batch was
halved, and ``MicroJudgeConfig()``'s defaults), on one thread as the background training
runs: the seconds to build the training examples (``rewards.micro_judge.judge_examples``),
then ``--steps`` optimiser steps of the judge's own training loop (``LengthSplit`` under
``supervised.train_steps``, batches as ``rewards.micro_judge`` draws them), wall and CPU
seconds a step, the tokens a step trains on and computes (the padding share), and the
whole training projected to the setting's steps. ``--steps 0`` trains every step of the
setting instead of a sample. The settings run one after the other, never at once.
Last line:
    judge_training: <s> s against <s> s before (<ratio>), <n> steps timed

Run: python benchmarks/judge_training.py [--steps 200] [--before '<MicroJudgeConfig JSON>']
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from recipe_arena.config import MicroJudgeConfig
from recipe_arena.models.factory import build_tiny_model
from recipe_arena.rewards.micro_judge import (
    LENGTH_PARTS,
    LengthSplit,
    judge_examples,
    judge_tokenizer,
    length_cuts,
)
from recipe_arena.supervised import sft_batches, train_steps

BEFORE = {"steps": 3200, "batch_size": 32, "lr": 2e-3, "warmup_steps": 50}
"""The judge's settings before this benchmark's change (the rest as the defaults)."""


def measure(cfg: MicroJudgeConfig, steps: int) -> dict[str, float]:
    t0 = time.perf_counter()
    tok = judge_tokenizer()
    examples = judge_examples(cfg, tok)
    prep_s = time.perf_counter() - t0
    pad = int(tok.pad_token_id)
    n = steps or cfg.steps

    def batches():  # the judge's draw, as ``_train`` makes it
        return sft_batches(
            examples, cfg.batch_size, pad, cfg.seed, group=1, unit=2 if cfg.paired else 1
        )

    real = computed = 0
    for _, (ids, _labels) in zip(range(min(n, 300)), batches(), strict=False):
        lengths = sorted(int(x) for x in (ids != pad).sum(dim=1))
        real += sum(lengths)
        cuts = (0, *length_cuts(lengths, LENGTH_PARTS), len(lengths))
        computed += sum((hi - lo) * lengths[hi - 1] for lo, hi in zip(cuts, cuts[1:], strict=False))
    model = build_tiny_model(cfg.model, tok, seed=cfg.seed)
    torch.manual_seed(cfg.seed)
    t0, cpu0 = time.perf_counter(), time.process_time()
    train_steps(
        LengthSplit(model, pad),
        batches(),
        steps=n,
        lr=cfg.lr,
        warmup=min(cfg.warmup_steps, n),
        stage="micro_judge",
        run=None,
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    batches_seen = min(n, 300)
    return {
        "prep_s": prep_s,
        "step_ms": 1e3 * wall / n,
        "step_cpu_ms": 1e3 * cpu / n,
        "tokens": real / batches_seen,
        "computed": computed / batches_seen,
        "train_s": prep_s + wall / n * cfg.steps,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="steps timed (0: all)")
    ap.add_argument("--before", default=json.dumps(BEFORE), help="JSON of the earlier settings")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = {}
    for name, cfg in (
        ("before", MicroJudgeConfig(**json.loads(args.before))),
        ("default", MicroJudgeConfig()),
    ):
        r = measure(cfg, args.steps)
        rows[name] = r
        print(
            f"{name}: {cfg.steps} steps of {cfg.batch_size}, examples built in "
            f"{r['prep_s']:.1f} s, {r['step_ms']:.1f} ms a step ({r['step_cpu_ms']:.1f} ms CPU), "
            f"{r['tokens']:.0f} tokens a step in {r['computed']:.0f} computed "
            f"(padding {1 - r['tokens'] / r['computed']:.1%}); training {r['train_s']:.0f} s",
            flush=True,
        )
    after, before = rows["default"]["train_s"], rows["before"]["train_s"]
    print(
        f"judge_training: {after:.0f} s against {before:.0f} s before "
        f"({after / before:.2f}), {args.steps or 'all'} steps timed"
    )


if __name__ == "__main__":
    main()
