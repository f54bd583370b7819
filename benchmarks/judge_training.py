"""The micro judge's training cost: its code path beside the earlier one, same settings.

For each path, on one thread as the background training runs: the seconds to build the
training examples (``rewards.micro_judge.judge_conversations``, then their masks),
then ``--steps`` optimiser steps of the judge's training (``supervised.train_steps``,
batches drawn as ``rewards.micro_judge`` draws them), wall and CPU milliseconds a step,
the tokens a step trains on and the positions it computes (the padding share, mean of
the first 300 batches), and the whole training projected to ``MicroJudgeConfig.steps``
(examples plus steps). ``--steps 0`` runs every step instead of a sample. The paths run
one after the other, never at once.

- now: ``supervised.assistant_masks`` (every distinct rendering tokenized in one call)
  and ``rewards.micro_judge.LengthSplit`` (micro-batches cut where the fewest positions
  are computed, the output layer only where a token is trained);
- earlier: the code before that change, restated here to time it: ``assistant_mask``
  one conversation at a time, three tokenizer calls each (``_earlier_mask``), and
  micro-batches of equal counts with the output layer on every position
  (``_EarlierSplit``). Both train the same loss and gradient on the same examples.

Last line:
    judge_training: <s> s against <s> s earlier (<ratio>), <n> steps timed

Run: python benchmarks/judge_training.py [--steps 200] [--set '<MicroJudgeConfig JSON>']
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import torch

from recipe_arena.config_rewards import MicroJudgeConfig
from recipe_arena.models.factory import build_tiny_model
from recipe_arena.rewards.micro_judge import (
    LENGTH_PARTS,
    LengthSplit,
    judge_conversations,
    judge_tokenizer,
    length_cuts,
)
from recipe_arena.supervised import assistant_masks, sft_batches, train_steps


def _earlier_mask(tok: Any, messages: list[dict[str, str]]) -> tuple[list[int], list[int]]:
    """``supervised.assistant_mask`` before it batched: three tokenized renderings."""

    def ids(msgs: list[dict[str, str]], gen: bool) -> list[int]:
        enc = tok.apply_chat_template(msgs, add_generation_prompt=gen, tokenize=True)
        return [int(i) for i in (enc if isinstance(enc, list) else enc["input_ids"])]

    full = ids(messages, False)
    mask = [0] * len(full)
    for k, msg in enumerate(messages):
        if msg["role"] == "assistant":
            start, end = len(ids(messages[:k], True)), len(ids(messages[: k + 1], False))
            turn = full[start:end]
            last = start + len(turn) - 1 - turn[::-1].index(tok.eos_token_id)
            mask[start : last + 1] = [1] * (last + 1 - start)
    return full, mask


class _EarlierSplit(torch.nn.Module):
    """``LengthSplit`` before the change: equal-count micro-batches, every position's
    logits."""

    def __init__(self, model: torch.nn.Module, pad_id: int) -> None:
        super().__init__()
        self.model, self.pad_id = model, pad_id

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> Any:
        real = input_ids != self.pad_id
        lengths = (real * torch.arange(1, input_ids.shape[1] + 1)).amax(dim=1)
        order = torch.argsort(lengths, stable=True)
        total = torch.zeros(())
        for chunk in torch.tensor_split(order, min(LENGTH_PARTS, len(order))):
            width = int(lengths[chunk].max())
            logits = self.model(input_ids=input_ids[chunk, :width]).logits[:, :-1]
            total = total + torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).float(),
                labels[chunk, 1:width].reshape(-1),
                ignore_index=-100,
                reduction="sum",
            )
        loss = total / (labels[:, 1:] != -100).sum().clamp(min=1)
        return type("Out", (), {"loss": loss})()


def measure(cfg: MicroJudgeConfig, steps: int, earlier: bool) -> dict[str, float]:
    tok = judge_tokenizer()
    t0 = time.perf_counter()
    chats = judge_conversations(cfg)
    examples = [_earlier_mask(tok, c) for c in chats] if earlier else assistant_masks(tok, chats)
    prep_s = time.perf_counter() - t0
    pad, n, unit = int(tok.pad_token_id), steps or cfg.steps, 2 if cfg.paired else 1

    def batches():  # the judge's draw, as its training makes it
        return sft_batches(examples, cfg.batch_size, pad, cfg.seed, group=1, unit=unit)

    real = computed = 0
    seen = min(n, 300)
    for _, (ids, _labels) in zip(range(seen), batches(), strict=False):
        lengths = sorted(int(x) for x in (ids != pad).sum(dim=1))
        real += sum(lengths)
        if earlier:
            size = -(-len(lengths) // LENGTH_PARTS)
            cuts = tuple(range(size, len(lengths), size))
        else:
            cuts = length_cuts(lengths, LENGTH_PARTS)
        ends = (0, *cuts, len(lengths))
        computed += sum((hi - lo) * lengths[hi - 1] for lo, hi in zip(ends, ends[1:], strict=False))
    model = build_tiny_model(cfg.model, tok, seed=cfg.seed)
    module = _EarlierSplit(model, pad) if earlier else LengthSplit(model, pad)
    torch.manual_seed(cfg.seed)
    t0, cpu0 = time.perf_counter(), time.process_time()
    train_steps(
        module,
        batches(),
        steps=n,
        lr=cfg.lr,
        warmup=min(cfg.warmup_steps, n),
        stage="micro_judge",
        run=None,
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {
        "prep_s": prep_s,
        "step_ms": 1e3 * wall / n,
        "step_cpu_ms": 1e3 * cpu / n,
        "tokens": real / seen,
        "computed": computed / seen,
        "train_s": prep_s + wall / n * cfg.steps,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="steps timed (0: all)")
    ap.add_argument("--set", default="{}", help="JSON overrides of MicroJudgeConfig")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = MicroJudgeConfig(**json.loads(args.set))
    rows = {}
    for name in ("earlier", "now"):
        r = rows[name] = measure(cfg, args.steps, earlier=name == "earlier")
        print(
            f"{name}: examples in {r['prep_s']:.1f} s, {r['step_ms']:.1f} ms a step "
            f"({r['step_cpu_ms']:.1f} ms CPU), {r['tokens']:.0f} tokens a step in "
            f"{r['computed']:.0f} positions (padding {1 - r['tokens'] / r['computed']:.1%}); "
            f"{cfg.steps} steps of {cfg.batch_size}: {r['train_s']:.0f} s",
            flush=True,
        )
    now, before = rows["now"]["train_s"], rows["earlier"]["train_s"]
    print(
        f"judge_training: {now:.0f} s against {before:.0f} s earlier "
        f"({now / before:.2f}), {args.steps or 'all'} steps timed"
    )


if __name__ == "__main__":
    main()
