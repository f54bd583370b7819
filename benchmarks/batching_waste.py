"""How much decode capacity static batching wastes at a 32K generation cap.

The OLMo 3 report estimates that static batching wastes up to 54% of compute at a 32K
generation length (seed sec. 9.7): a static batch decodes until its longest member
finishes, and the slots of the finished ones idle. Continuous batching backfills them.

1. Simulation at the seed's scale. Response lengths: a log-normal capped at 32,768
   tokens whose capped mean is 14,628 (the reasoner runs' mean, seed "Inference is the
   bottleneck"); the spread (sigma) is not published, so three are shown. Decoding is
   memory-bound, so a decode step costs about the same however many slots are busy:
   the compute of a batch is slots x steps. Waste = 1 - useful tokens / (slots x
   steps). Static: each batch of B runs max(length) steps. Continuous: B slots, a
   finished slot takes the next request at once (greedy list scheduling).
2. Measured on the torch engine at small scale: the same distribution scaled to a
   256-token cap (lengths forced with ignore_eos), static and continuous mode, same
   requests and batch size. Waste from the engine's own decode-step count, and the
   time ratio; the simulation's prediction for that exact workload is printed beside.

Run: python benchmarks/batching_waste.py [--batch 512] [--requests 4096]
Last line: ``batching_waste: <x>% at 32K`` (static batching, batch of --batch
rollouts, the middle sigma).
"""

from __future__ import annotations

import argparse
import heapq
import math
import time

import numpy as np
import torch
from scipy import optimize, stats

CAP = 32768
MEAN = 14628.0
SIGMAS = (0.5, 0.75, 1.0)


def lognormal_mu(sigma: float, cap: float, mean: float) -> float:
    """mu such that E[min(X, cap)] = mean for X ~ LogNormal(mu, sigma):
    E[min(X, c)] = e^{mu + s^2/2} Phi((ln c - mu - s^2)/s) + c (1 - Phi((ln c - mu)/s))."""

    def capped_mean(mu: float) -> float:
        z = (math.log(cap) - mu) / sigma
        return math.exp(mu + sigma**2 / 2) * stats.norm.cdf(z - sigma) + cap * stats.norm.sf(z)

    return float(optimize.brentq(lambda mu: capped_mean(mu) - mean, 0.0, math.log(cap) + 5))


def sample_lengths(n: int, sigma: float, cap: int, mean: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mu = lognormal_mu(sigma, cap, mean)
    return np.clip(np.rint(rng.lognormal(mu, sigma, n)), 1, cap).astype(np.int64)


def static_steps(lengths: np.ndarray, batch: int) -> int:
    return int(sum(lengths[i : i + batch].max() for i in range(0, len(lengths), batch)))


def continuous_steps(lengths: np.ndarray, batch: int) -> int:
    """Makespan of B slots each taking the next request as soon as it is free."""
    free_at = [0] * min(batch, len(lengths))
    heapq.heapify(free_at)
    for n in lengths:
        heapq.heappush(free_at, heapq.heappop(free_at) + int(n))
    return max(free_at)


def waste(lengths: np.ndarray, batch: int, steps: int) -> float:
    return 1.0 - float(lengths.sum()) / (batch * steps)


def measure_engine(lengths: np.ndarray, batch: int, threads: int) -> dict[str, dict[str, float]]:
    from recipe_arena.config import EngineConfig
    from recipe_arena.engines import GenerationRequest, SamplingParams, build_engine
    from recipe_arena.models.factory import build_micro

    torch.set_num_threads(threads)
    model, tok = build_micro(seed=0)
    prompt = tuple(tok("What is 36+8?")["input_ids"])
    reqs = [
        GenerationRequest(
            f"r{i}",
            prompt,
            SamplingParams(max_new_tokens=int(n), temperature=1.0, seed=i, ignore_eos=True),
        )
        for i, n in enumerate(lengths)
    ]
    out: dict[str, dict[str, float]] = {}
    for mode in ("static", "continuous"):
        eng = build_engine("torch", model, tok, EngineConfig(max_batch_size=batch, mode=mode))
        try:
            eng.generate([GenerationRequest("warm", prompt, SamplingParams(max_new_tokens=4))])
            before = eng.stats().extra["steps"]
            t0 = time.perf_counter()
            done = eng.generate(reqs)
            secs = time.perf_counter() - t0
            steps = eng.stats().extra["steps"] - before
        finally:
            eng.close()
        useful = sum(len(c.tokens) for c in done)
        assert useful == int(lengths.sum())
        # a request's first token comes from its prefill, not a decode step
        out[mode] = {
            "seconds": secs,
            "steps": steps,
            "waste": 1 - (useful - len(reqs)) / (batch * steps),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=512, help="rollouts per static batch (64 x 8)")
    ap.add_argument("--requests", type=int, default=8192)
    ap.add_argument("--engine-batch", type=int, default=16)
    ap.add_argument("--engine-requests", type=int, default=64)
    ap.add_argument("--engine-cap", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    print(
        f"simulation: lengths capped at {CAP}, capped mean {MEAN:.0f} (log-normal), {a.requests} rollouts"
    )
    headline = math.nan
    for sigma in SIGMAS:
        lengths = sample_lengths(a.requests, sigma, CAP, MEAN, seed=0)
        at_cap = float((lengths >= CAP).mean())
        row = []
        for b in (8, 64, a.batch):
            w_static = waste(lengths, b, static_steps(lengths, b))
            w_cont = waste(lengths, b, continuous_steps(lengths, b))
            row.append(f"B={b}: static {100 * w_static:.1f}%, continuous {100 * w_cont:.1f}%")
            if sigma == SIGMAS[1] and b == a.batch:
                headline = 100 * w_static
        print(
            f"  sigma {sigma}: mean {lengths.mean():.0f}, {100 * at_cap:.1f}% at the cap; "
            + "; ".join(row)
        )
    print(f"  bound as every batch reaches the cap: 1 - mean/cap = {100 * (1 - MEAN / CAP):.1f}%")

    scale = a.engine_cap / CAP
    lengths = sample_lengths(a.engine_requests, SIGMAS[1], a.engine_cap, MEAN * scale, seed=1)
    b = a.engine_batch
    pred_static = waste(lengths - 1, b, static_steps(lengths - 1, b))
    pred_cont = waste(lengths - 1, b, continuous_steps(lengths - 1, b))
    got = measure_engine(lengths, b, a.threads)
    print(
        f"torch engine (micro model, {a.engine_requests} requests, cap {a.engine_cap}, mean "
        f"{lengths.mean():.0f}, batch {b}, {a.threads} threads):"
    )
    for mode, pred in (("static", pred_static), ("continuous", pred_cont)):
        r = got[mode]
        print(
            f"  {mode:>10}: {r['steps']:.0f} decode steps, waste {100 * r['waste']:.1f}% "
            f"(simulated {100 * pred:.1f}%), {r['seconds']:.2f} s"
        )
    saved = 1 - got["continuous"]["seconds"] / got["static"]["seconds"]
    print(f"  continuous batching saves {100 * saved:.1f}% of the static engine's time")
    print(f"batching_waste: {headline:.1f}% at 32K")


if __name__ == "__main__":
    main()
