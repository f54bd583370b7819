"""A world's prompt rows and starting checkpoint, through the functions its settings model
names (``config_world``: ``rows``, ``start``), and the rows of the worlds that read
JSONL files (``rows_from_files``). The settings are passed in, never imported: the
data layer sits below the config."""

from __future__ import annotations

import importlib
from typing import Any

from recipe_arena.data.schema import PromptRow, read_rows

Splits = dict[str, dict[str, list[PromptRow]]]


def _resolve(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def build_world(cfg: Any) -> Splits:
    """split ('train', 'heldout') -> domain -> rows of the world ``cfg`` (a
    ``config_world`` model) names."""
    splits: Splits = _resolve(cfg.rows)(cfg)
    return splits


def start_checkpoint(cfg: Any) -> str | None:
    """``world.checkpoint`` if set, else the checkpoint the world brings (converted on
    first use), else None: an earlier stage builds one."""
    if cfg.checkpoint:
        return cfg.checkpoint
    return str(_resolve(cfg.start)(cfg)) if cfg.start else None


def rows_from_files(cfg: Any) -> Splits:
    """Rows from JSONL files of prompt rows (``world.train_path``, ``world.heldout_path``)."""
    out: Splits = {}
    for split, path in (("train", cfg.train_path), ("heldout", cfg.heldout_path)):
        by_domain: dict[str, list[PromptRow]] = {}
        for row in read_rows(path) if path else []:
            by_domain.setdefault(row.domain, []).append(row)
        out[split] = by_domain
    return out
