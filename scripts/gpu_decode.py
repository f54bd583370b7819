"""Decode-speed measurements for ``gpu_check.py``'s engine check (c): the model shapes,
a device copy's bandwidth, and timed runs of the torch engine and of transformers'
``generate`` on the same prompts, with the bytes each decode step reads."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

SHAPES = {
    "llama-1.1b": dict(
        hidden_size=2048,
        intermediate_size=5632,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=32000,
        max_position_embeddings=2048,
    ),
    "smollm2-135m": dict(
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        vocab_size=49152,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
    ),
    "toy": dict(
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=512,
        max_position_embeddings=256,
    ),
}


# ----------------------------------------------------------------------------- bandwidth
def copy_bandwidth(device: str, nbytes: int) -> float:
    """Bytes a device-to-device copy moves per second, each byte counted read and
    written (2 x size / time), best of 5."""
    import torch

    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(6):
        sync(device)
        t0 = time.perf_counter()
        dst.copy_(src)
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * nbytes / best


def sync(device: str) -> None:
    """Wait for the device's queued work, so a clock reading times it done."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


@dataclass(frozen=True)
class DecodeRun:
    tokens_per_s: float
    wall_s: float
    bytes_read: float
    """Every weight once per decode step plus the attended keys and values."""


def mbu_percent(run: DecodeRun, bandwidth: float) -> float:
    """Bytes read per second over the copy bandwidth (read + write), in percent."""
    return 100 * run.bytes_read / run.wall_s / bandwidth


# ----------------------------------------------------------------------------- decode runs
def random_model(shape: str, device: str, dtype: Any) -> Any:
    """A Llama of ``SHAPES[shape]`` with random weights (seed 0) in ``dtype`` on ``device``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(LlamaConfig(**SHAPES[shape]))
    return model.to(dtype).eval()


def _weight_bytes(model: Any) -> int:
    """Bytes of the model's distinct parameter tensors (tied ones once)."""
    seen, total = set(), 0
    for p in model.parameters():
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            total += p.numel() * p.element_size()
    return total


def engine_run(
    model: Any,
    prompts: list[list[int]],
    new_tokens: int,
    device: str,
    graphs: bool,
    graph_steps: int,
    update: bool = False,
) -> tuple[DecodeRun, dict[str, float]]:
    """Warm up (captures the graphs), then time ``prompts`` decoding ``new_tokens`` each.
    With ``update``, on-device weights land in flight halfway (version 1)."""
    from recipe_arena.config import EngineConfig
    from recipe_arena.engines import GenerationRequest, SamplingParams, build_engine

    cfg = EngineConfig(
        device=device,
        dtype="bfloat16",
        max_batch_size=len(prompts),
        cuda_graphs=graphs,
        graph_steps=graph_steps,
    )
    eng = build_engine("torch", model, SimpleNamespace(eos_token_id=None), cfg)
    params = SamplingParams(max_new_tokens=new_tokens, temperature=0.0, ignore_eos=True)

    def reqs(tag: str) -> list[Any]:
        return [GenerationRequest(f"{tag}{i}", tuple(p), params) for i, p in enumerate(prompts)]

    extra: dict[str, float] = {}
    try:
        eng.generate(reqs("w"))
        kv0, steps0 = eng.runner.kv_positions_read, eng.stats().extra["steps"]
        weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
        half = len(prompts) * new_tokens // 2 + eng.stats().generated_tokens
        updater = None
        if update:

            def swap() -> None:
                while eng.stats().generated_tokens < half:
                    time.sleep(0.0005)
                eng.update_weights(weights, version=1)

            updater = threading.Thread(target=swap, daemon=True)
        t0 = time.perf_counter()
        if updater:
            updater.start()
        comps = eng.generate(reqs("t"))
        wall = time.perf_counter() - t0
        if updater:
            updater.join(timeout=60)
            extra["update_ms"] = eng.stats().extra["last_update_ms"]
            extra["spanned"] = float(sum(1 for c in comps if len(set(c.token_versions)) == 2))
        st = eng.stats()
        steps = st.extra["steps"] - steps0 + 1  # decode steps + the prefill's token
        kv = eng.runner.kv_positions_read - kv0
        extra["graph_captures"] = st.extra["graph_captures"]
        bytes_read = steps * _weight_bytes(eng.model) + kv * eng.runner.kv_bytes_per_position()
    finally:
        eng.close()
    n = sum(len(c.tokens) for c in comps)
    return DecodeRun(n / wall, wall, bytes_read), extra


def hf_run(model: Any, prompts: list[list[int]], new_tokens: int, device: str) -> DecodeRun:
    """transformers' generate on the same prompts (greedy, exactly ``new_tokens``)."""
    import torch

    ids = torch.tensor(prompts, device=device)
    kw = dict(do_sample=False, pad_token_id=0, attention_mask=torch.ones_like(ids))
    with torch.no_grad():
        model.generate(ids, max_new_tokens=2, min_new_tokens=2, **kw)
        sync(device)
        t0 = time.perf_counter()
        out = model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, **kw)
        sync(device)
    wall = time.perf_counter() - t0
    n = (out.shape[1] - ids.shape[1]) * ids.shape[0]
    return DecodeRun(n / wall, wall, 0.0)
