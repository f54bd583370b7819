"""The checkpoint RL starts from (base training, then SFT), built once per setting and
kept in the cache: what benchmarks that compare RL settings start every arm from."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from recipe_arena.cache import build_cached, cache_key, cache_root
from recipe_arena.compose import load_config


def rl_start_checkpoint(overrides: list[str]) -> Path:
    """The SFT checkpoint of ``recipe-arena run <overrides> pipeline.stages=[base,sft]``,
    cached under a key of everything it depends on (world, base and SFT settings, seed)."""
    cfg = load_config([*overrides, "pipeline.stages=[base,sft]", "sft.evaluate=false"])
    key = cache_key(
        {
            "stage": "rl_start",
            "world": cfg.world.model_dump(mode="json"),
            "base": cfg.base.model_dump(mode="json"),
            "sft": cfg.sft.model_dump(mode="json", exclude={"device"}),
            "seed": cfg.seed,
        }
    )
    entry = cache_root(cfg.world.cache_dir) / "rl_start" / key

    def build(tmp: Path) -> None:
        from recipe_arena.pipeline import run_pipeline

        run = run_pipeline(cfg.model_copy(update={"out_dir": str(tmp), "name": "run"}))
        sft = Path(json.loads((run / "stages.json").read_text())["checkpoint"])
        shutil.copytree(sft, tmp / "checkpoint")
        shutil.rmtree(run)

    return build_cached(entry, build) / "checkpoint"


def add_start_arguments(parser: argparse.ArgumentParser) -> None:
    """``--seed`` and ``--start`` (overrides of the run that trains the RL starting
    checkpoint), the options every benchmark that starts arms from it shares."""
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--start",
        nargs="*",
        default=[],
        help="overrides of the run that trains the RL starting checkpoint (base, SFT)",
    )


def gap_arguments(description: str, prompts: int, tokens: int) -> argparse.Namespace:
    """The options of the engine/trainer gap benchmarks (``quant_gap``,
    ``precision_gap``): ``--prompts`` held-out math prompts, ``--group`` samples each,
    ``--tokens`` new tokens at most, and ``add_start_arguments``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--prompts", type=int, default=prompts)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--tokens", type=int, default=tokens)
    add_start_arguments(p)
    return p.parse_args()


def sample_heldout_math(
    a: argparse.Namespace, engine_update: dict[str, Any], settings: Any
) -> tuple[Any, Any]:
    """(model, learner batch): the RL starting checkpoint of ``a`` samples
    ``a.prompts`` held-out math prompts x ``a.group`` through the real actor, its torch
    engine set by ``engine_update`` (``engine.*`` fields) and ``settings``
    (``wiring.ActorSettings``); the batch is what a learner would train on. The gap
    benchmarks then score it with the learner at each trainer setting."""
    from recipe_arena.core.actor import ActorTask
    from recipe_arena.core.batch import build_learner_batch
    from recipe_arena.data.micro import generate_split
    from recipe_arena.models.factory import load_checkpoint
    from recipe_arena.wiring import advantage_hook, make_actor

    cfg = load_config([f"seed={a.seed}"])
    init = rl_start_checkpoint([f"seed={a.seed}", *a.start])
    rows = generate_split("math", "heldout", a.prompts, cfg.world.data_seed)
    tasks = [ActorTask(r, seed=a.seed + i, tag=f"{i}") for i, r in enumerate(rows)]
    model, tok = load_checkpoint(init)
    engine_cfg = cfg.engine.model_copy(update=engine_update)
    actor = make_actor(0, model, tok, "torch", engine_cfg, cfg.rewards, settings)
    try:
        groups = actor.rollouts(tasks)
    finally:
        actor.close()
    batch = build_learner_batch(groups, advantage_hook(cfg.advantage), int(tok.pad_token_id))
    return model, batch
