"""Held-out evaluation of a checkpoint, per domain, with the run's engine and verifiers.

The engine is the run's, in ``eval.dtype`` when that is set (``eval_engine_config``).
Results are cached next to the checkpoint under a key of everything that decides them
(eval and reward settings, engine and its precision, the evaluated rows' ids), so a
checkpoint that two stages evaluate (the SFT checkpoint at the end of SFT and at the
start of RL; the RL checkpoint at its last step and in the final eval stage) is
evaluated once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recipe_arena.cache import VERDICTS_VERSION, cache_key, read_json_checked, write_json_atomic
from recipe_arena.comparison_plan import keyed_section
from recipe_arena.config import EngineConfig, RunConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.eval.evaluate import Evaluation

EVAL_CACHE_VERSION = "eval-v2"
"""Part of the cache key: bump it when a change alters what an evaluation returns."""


UNKEYED_REWARDS = {"label_flip"}
"""Reward settings an evaluation does not read (``rewards.label_flip``: training only)."""


def eval_rows(cfg: RunConfig, rows: Sequence[PromptRow]) -> list[PromptRow]:
    """The first ``eval.prompts_for(domain)`` rows of each domain, in domain order of
    first appearance (the first ones, so every recipe of a comparison sees the same)."""
    per_domain: dict[str, list[PromptRow]] = {}
    for row in rows:
        bucket = per_domain.setdefault(row.domain, [])
        if len(bucket) < cfg.eval.prompts_for(row.domain):
            bucket.append(row)
    return [r for bucket in per_domain.values() for r in bucket]


def eval_engine_config(cfg: RunConfig) -> EngineConfig:
    """The engine settings of every held-out evaluation: ``cfg.engine`` with its dtype
    replaced by ``eval.dtype`` when that is set (an evaluation measures the policy, not
    the sampler's precision)."""
    if cfg.eval.dtype is None:
        return cfg.engine
    return cfg.engine.model_copy(update={"dtype": cfg.eval.dtype})


def precision_key(engine: EngineConfig) -> dict[str, Any]:
    """The evaluation engine's precision as part of the cache key: empty in float32 (the
    key every float32 evaluation had before the precision was keyed, so those caches stay
    valid), else its dtype and whether its LM head runs in float32."""
    if engine.dtype == "float32":
        return {}
    return {"dtype": engine.dtype, "lm_head_fp32": engine.lm_head_fp32}


def evaluate_model(
    cfg: RunConfig, model: Any, tok: Any, rows: Sequence[PromptRow], scorer: Any = None
) -> Evaluation:
    """pass@1 per domain (``eval/<domain>/pass@1``) and their mean of ``model`` on the
    ``eval_rows`` of ``rows``, with each of those rows' scores, through a fresh engine (a
    private copy of the weights, ``eval_engine_config``); ``scorer`` is reused when given,
    else one is built and closed."""
    from recipe_arena.engines import build_engine
    from recipe_arena.eval.evaluate import evaluate_rows
    from recipe_arena.rewards import build_scorer

    chosen = eval_rows(cfg, rows)
    engine = build_engine(cfg.engine.name, model, tok, eval_engine_config(cfg))
    try:
        if scorer is not None:
            return evaluate_rows(engine, tok, chosen, scorer, cfg.eval, cfg.prompt_template)
        with build_scorer(cfg.rewards, shared=True) as own:
            return evaluate_rows(engine, tok, chosen, own, cfg.eval, cfg.prompt_template)
    finally:
        engine.close()


def eval_cache_path(cfg: RunConfig, checkpoint: Path, rows: Sequence[PromptRow]) -> Path:
    """Where ``evaluate_checkpoint`` caches its result for ``rows`` in ``checkpoint``: a
    file named by a key of everything that decides it (module docstring). ``eval.dtype``
    enters through the engine's effective precision (``precision_key``), so a bfloat16
    evaluation is never served a float32 result, or the reverse."""
    key = cache_key(
        {
            "version": EVAL_CACHE_VERSION,
            "verdicts": VERDICTS_VERSION,
            "eval": cfg.eval.model_dump(mode="json", exclude={"dtype"}),
            # label flips act on training rewards only: evaluation uses the exact verifiers
            "rewards": keyed_section(
                "rewards", cfg.rewards.model_dump(mode="json", exclude=UNKEYED_REWARDS)
            ),
            "engine": cfg.engine.name,
            **precision_key(eval_engine_config(cfg)),
            **({"template": cfg.prompt_template} if cfg.prompt_template != "chat" else {}),
            "rows": [r.id for r in eval_rows(cfg, rows)],
        }
    )
    return Path(checkpoint) / f"eval-{key}.json"


def cached_evaluation(path: Path) -> Evaluation | None:
    """The evaluation cached at ``path`` (``eval_cache_path``), or None."""
    cached = read_json_checked(path)
    if cached is not None and {"metrics", "scores"} <= set(cached):
        return Evaluation(cached["metrics"], cached["scores"])
    return None


def cache_evaluation(path: Path, result: Evaluation) -> None:
    """Cache ``result`` at ``path``; a checkpoint directory that cannot be written to (a
    shared, read-only ``world.checkpoint``) is left as it is."""
    with contextlib.suppress(OSError):
        write_json_atomic(path, {"metrics": result.metrics, "scores": result.scores})


def evaluate_checkpoint(
    cfg: RunConfig, checkpoint: Path, rows: Sequence[PromptRow], scorer: Any = None
) -> Evaluation:
    """``evaluate_model`` of the checkpoint directory, cached in it (module docstring).
    A checkpoint directory that cannot be written to is evaluated without caching."""
    from recipe_arena.models.factory import load_checkpoint

    path = eval_cache_path(cfg, checkpoint, rows)
    cached = cached_evaluation(path)
    if cached is not None:
        return cached
    model, tok = load_checkpoint(checkpoint)
    model.eval()
    result = evaluate_model(cfg, model, tok, rows, scorer)
    cache_evaluation(path, result)
    return result
