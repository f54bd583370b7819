"""Rewards: one verifier per domain (math, code, ifeval, chat judge / rubric tournament).

Entry point: ``build_scorer(cfg) -> Scorer``; ``scorer.score(rows, responses)``.
Verifiers read the text after the last ``</think>``.

Imports are lazy: verifier worker processes import submodules of this package and
must not pay for ``recipe_arena.config`` (which pulls in torch and transformers).
"""

from __future__ import annotations

from typing import Any

from recipe_arena.rewards.text import RewardResult, answer_text

__all__ = ["POOLED", "RewardResult", "Scorer", "answer_text", "build_scorer"]


def __getattr__(name: str) -> Any:
    if name in ("POOLED", "Scorer", "build_scorer"):
        from recipe_arena.rewards import scorer

        return getattr(scorer, name)
    raise AttributeError(f"module 'recipe_arena.rewards' has no attribute {name!r}")
