"""Generation engines behind one protocol (``base.Engine``), chosen by name.

The engines by name are in ``engines.registry``; an engine's module is imported only
when it is built. The protocol's names are imported on first use, so reading the
config (which reads the registry) does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from recipe_arena.engines.registry import ENGINES

if TYPE_CHECKING:
    from recipe_arena.config import EngineConfig
    from recipe_arena.engines.base import Engine

_BASE = (
    "Completion",
    "Engine",
    "EngineError",
    "EngineStats",
    "GenerationRequest",
    "SamplingParams",
)


def __getattr__(name: str) -> Any:
    if name in _BASE:
        return getattr(importlib.import_module("recipe_arena.engines.base"), name)
    raise AttributeError(f"module 'recipe_arena.engines' has no attribute {name!r}")


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
