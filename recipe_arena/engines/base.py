"""The engine interface the engines implement, defined by the core that drives them
(``core.engine``): requests, completions, statistics and the ``Engine`` protocol."""

from recipe_arena.core.engine import (
    Completion,
    Engine,
    EngineError,
    EngineStats,
    GenerationRequest,
    SamplingParams,
)

__all__ = [
    "Completion",
    "Engine",
    "EngineError",
    "EngineStats",
    "GenerationRequest",
    "SamplingParams",
]
