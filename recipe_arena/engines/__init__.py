"""Generation engines behind one protocol (``core.engine.Engine``), chosen by name.

The engines by name are in ``engine_registry``; an engine's module is imported only
when it is built (vLLM is an optional extra).
"""

from __future__ import annotations

import importlib
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
from recipe_arena.engine_registry import ENGINES


def build_engine(
    name: str, model: Any, tokenizer: Any, cfg: EngineConfig | None = None, **kw: Any
) -> Engine:
    """Build the engine ``name`` over ``model`` (a transformers causal LM, copied by the
    torch and hf engines; vLLM loads its own copy) with ``cfg`` (defaults if None)."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINES)}")
    module, _, cls = ENGINES[name].partition(":")
    engine: Engine = getattr(importlib.import_module(module), cls)(model, tokenizer, cfg, **kw)
    return engine


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
