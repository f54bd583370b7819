"""Worlds by name: where a run's training and held-out rows and its starting model come from.

A plain dict registry (``WORLDS``); each entry builds split -> domain -> prompt rows from
a ``WorldConfig``. ``start_checkpoint`` is the checkpoint a world starts from when
``world.checkpoint`` is not set (None: an earlier stage builds one, as the micro world's
base stage does).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from recipe_arena.config import WorldConfig
from recipe_arena.data.schema import PromptRow, read_rows

Splits = dict[str, dict[str, list[PromptRow]]]


def _micro(cfg: WorldConfig) -> Splits:
    from recipe_arena.data.micro import build_world

    return build_world(cfg)


def _smol(cfg: WorldConfig) -> Splits:
    from recipe_arena.data.smol import build_world

    return build_world(cfg)


def _from_files(cfg: WorldConfig) -> Splits:
    """Rows from JSONL files of prompt rows (``world.train_path``, ``world.heldout_path``)."""
    out: Splits = {}
    for split, path in (("train", cfg.train_path), ("heldout", cfg.heldout_path)):
        by_domain: dict[str, list[PromptRow]] = {}
        for row in read_rows(path) if path else []:
            by_domain.setdefault(row.domain, []).append(row)
        out[split] = by_domain
    return out


WORLDS: dict[str, Callable[[WorldConfig], Splits]] = {
    "micro": _micro,
    "smol": _smol,
    "olmo3_7b": _from_files,
}


def build_world(cfg: WorldConfig) -> Splits:
    """split ('train', 'heldout') -> domain -> rows of the world ``cfg.name``."""
    return WORLDS[cfg.name](cfg)


def start_checkpoint(cfg: WorldConfig) -> str | None:
    """``world.checkpoint`` if set; for smol the converted SmolLM2 checkpoint (converted
    on first use); otherwise None."""
    if cfg.checkpoint:
        return cfg.checkpoint
    if cfg.name == "smol":
        from recipe_arena.models.smol import smol_checkpoint

        root = Path(cfg.cache_dir).expanduser() if cfg.cache_dir else None
        return str(smol_checkpoint(root))
    return None
