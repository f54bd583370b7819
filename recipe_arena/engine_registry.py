"""The generation engines by name: the one list the config's ``engine.name`` and
``build_engine`` read. Each entry is the engine class as ``"module:Class"``, imported
only when built (vLLM is an optional extra)."""

from __future__ import annotations

ENGINES: dict[str, str] = {
    "torch": "recipe_arena.engines.torch_engine:TorchEngine",
    "hf": "recipe_arena.engines.hf_engine:HFEngine",
    "vllm": "recipe_arena.engines.vllm_engine:VLLMEngine",
}
"""torch: the embedded default (continuous batching, KV cache, in-flight weight updates);
hf: ``transformers`` ``generate`` in static batches (the baseline); vllm: vLLM's async
engine."""
