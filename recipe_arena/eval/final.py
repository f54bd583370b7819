"""Held-out evaluation of a checkpoint, per domain, with the run's engine and verifiers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from recipe_arena.config import RunConfig
from recipe_arena.data.schema import PromptRow


def evaluate_checkpoint(
    cfg: RunConfig, checkpoint: Path, rows: Sequence[PromptRow]
) -> dict[str, float]:
    """pass@1 per domain (``eval/<domain>/pass@1``) and their mean on ``rows``, capped at
    ``eval.max_prompts_per_domain`` prompts per domain (the first ones, so every recipe of a
    comparison sees the same prompts)."""
    from recipe_arena.engines import build_engine
    from recipe_arena.eval.evaluate import evaluate
    from recipe_arena.models.factory import load_checkpoint
    from recipe_arena.rewards import build_scorer

    per_domain: dict[str, list[PromptRow]] = {}
    for row in rows:
        bucket = per_domain.setdefault(row.domain, [])
        if len(bucket) < cfg.eval.max_prompts_per_domain:
            bucket.append(row)
    chosen = [r for bucket in per_domain.values() for r in bucket]
    model, tok = load_checkpoint(checkpoint)
    model.eval()
    engine = build_engine(cfg.engine.name, model, tok, cfg.engine)
    try:
        with build_scorer(cfg.rewards) as scorer:
            return evaluate(engine, tok, chosen, scorer, cfg.eval)
    finally:
        engine.close()
