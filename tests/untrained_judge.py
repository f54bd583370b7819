"""An untrained micro model served as a judge (the micro judge's 1,024-token context),
for reward tests that need a real engine behind the judge but not its verdicts."""

from __future__ import annotations

from collections.abc import Iterator

from recipe_arena.engines import build_engine
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.rewards.judge import EngineGenerator


def untrained_judge(max_new_tokens: int) -> Iterator[EngineGenerator]:
    """Yields the generator (replies cut at ``max_new_tokens``), closed afterwards: the
    body of a module-scoped fixture."""
    model, tok = build_micro(TinyModelSpec(max_position_embeddings=1024), seed=0)
    gen = EngineGenerator(build_engine("hf", model, tok), tok, max_new_tokens=max_new_tokens)
    yield gen
    gen.close()
