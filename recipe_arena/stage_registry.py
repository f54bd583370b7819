"""The pipeline's stages by name: the one list the config's ``pipeline.stages`` and the
pipeline read. Each entry is the stage's runner as ``"module:function"``, a
``pipeline.StageFn`` imported when the pipeline starts (its modules import the config,
which reads this list)."""

from __future__ import annotations

STAGES: dict[str, str] = {
    "base": "recipe_arena.pipeline:_base",
    "sft": "recipe_arena.pipeline:_sft",
    "dpo": "recipe_arena.pipeline:_dpo",
    "audit": "recipe_arena.pipeline:_audit",
    "prompt_filter": "recipe_arena.pipeline:_prompt_filter",
    "rlvr": "recipe_arena.pipeline:_rlvr",
    "specialists": "recipe_arena.pipeline:_specialists",
    "mopd": "recipe_arena.pipeline:_mopd",
    "opd": "recipe_arena.pipeline:_opd",
    "eval": "recipe_arena.pipeline:_eval",
}
