"""Generation engines behind one protocol (``core.engine.Engine``), chosen by name.

``torch``: the embedded default, continuous batching with a KV cache and in-flight
weight updates. ``hf``: ``transformers`` ``generate`` in static batches (the baseline).
``vllm``: vLLM's async engine (optional extra; imported only when asked for).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recipe_arena.config import EngineConfig
from recipe_arena.core.engine import (
    Completion,
    Engine,
    EngineError,
    EngineStats,
    GenerationRequest,
    SamplingParams,
)


def _torch(model: Any, tokenizer: Any, cfg: EngineConfig | None, **kw: Any) -> Engine:
    from recipe_arena.engines.torch_engine import TorchEngine

    return TorchEngine(model, tokenizer, cfg, **kw)


def _hf(model: Any, tokenizer: Any, cfg: EngineConfig | None, **kw: Any) -> Engine:
    from recipe_arena.engines.hf_engine import HFEngine

    return HFEngine(model, tokenizer, cfg, **kw)


def _vllm(model: Any, tokenizer: Any, cfg: EngineConfig | None, **kw: Any) -> Engine:
    from recipe_arena.engines.vllm_engine import VLLMEngine

    return VLLMEngine(model, tokenizer, cfg, **kw)


ENGINES: dict[str, Callable[..., Engine]] = {"torch": _torch, "hf": _hf, "vllm": _vllm}


def build_engine(
    name: str, model: Any, tokenizer: Any, cfg: EngineConfig | None = None, **kw: Any
) -> Engine:
    """Build the engine ``name`` over ``model`` (a transformers causal LM, copied by the
    torch and hf engines; vLLM loads its own copy) with ``cfg`` (defaults if None)."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINES)}")
    return ENGINES[name](model, tokenizer, cfg, **kw)


__all__ = [
    "ENGINES",
    "Completion",
    "Engine",
    "EngineError",
    "EngineStats",
    "GenerationRequest",
    "SamplingParams",
    "build_engine",
]
