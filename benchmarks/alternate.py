"""Two settings timed side by side on the same work, in alternating rounds, and the work
itself: the helpers of the benchmarks that compare a training step and decoding between
two settings (``isa_cost.py``, ``fixed_order_step.py``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def step_and_decode(model: Any, steps: int) -> tuple[float, float]:
    """(median seconds per training step, per decoding batch) of ``model`` over ``steps``
    repetitions after one warm-up: forward, backward and an AdamW step on the base stage's
    32 x 160 batch of random token ids, then greedy decoding with the KV cache of 64
    prompts of 16 tokens, 48 new tokens each, as an actor generates."""
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, model.config.vocab_size, (32, 160), generator=gen)
    train, decode = [], []
    for _ in range(steps + 1):
        t = time.perf_counter()
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
        train.append(time.perf_counter() - t)
    prompts = ids[:, :16].repeat(2, 1)
    with torch.no_grad():
        for _ in range(steps + 1):
            t = time.perf_counter()
            model.generate(
                prompts, max_new_tokens=48, min_new_tokens=48, do_sample=False, pad_token_id=0
            )
            decode.append(time.perf_counter() - t)
    return statistics.median(train[1:]), statistics.median(decode[1:])


Measure = Callable[[str], tuple[float, float, str]]
"""arm -> (seconds per training step, seconds per decoding batch, a note to print)."""


def alternate(
    arms: tuple[str, str], rounds: int, measure: Measure
) -> dict[str, tuple[float, float]]:
    """Each arm's median (training step, decoding) seconds over ``rounds`` measurements,
    printed as they come. The arms swap order every round, so that drift in the machine's
    speed falls on both."""
    got: dict[str, list[tuple[float, float]]] = {arm: [] for arm in arms}
    width = max(len(arm) for arm in arms)
    for r in range(rounds):
        for arm in arms if r % 2 == 0 else arms[::-1]:
            train, decode, note = measure(arm)
            got[arm].append((train, decode))
            print(
                f"round {r} {arm:{width}}{f' ({note})' if note else ''}: "
                f"training step {train:.3f} s, decoding {decode:.3f} s",
                flush=True,
            )
    return {
        arm: (statistics.median(t for t, _ in v), statistics.median(d for _, d in v))
        for arm, v in got.items()
    }
