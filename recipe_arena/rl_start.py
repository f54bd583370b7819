"""The checkpoint RL starts from (base training, then SFT), built once per setting and
kept in the cache: what benchmarks that compare RL settings start every arm from."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

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
