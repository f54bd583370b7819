"""The on-disk cache shared by the stages and the evaluation: where it lives, how an
entry is keyed, and how an entry or a JSON file is written atomically.

A module of its own so that the stages (which cache base models) and the evaluation
(which caches a checkpoint's scores next to it) both import it without importing each
other.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CODE_VERSION = "stages-v4"
"""Part of every cache key: bump it when a change alters what a cached stage produces."""

STALE_TMP_S = 6 * 3600
"""A temporary build directory untouched this long was left by a killed process."""


def cache_root(cache_dir: str | None) -> Path:
    """``cache_dir``, else $RECIPE_ARENA_CACHE, else ~/.cache/recipe_arena."""
    root = cache_dir or os.environ.get("RECIPE_ARENA_CACHE") or "~/.cache/recipe_arena"
    return Path(root).expanduser()


def cache_key(parts: dict[str, Any]) -> str:
    """A short stable hash of everything a cached result depends on, plus CODE_VERSION."""
    blob = json.dumps({"code": CODE_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def build_cached(entry: Path, build: Callable[[Path], None]) -> Path:
    """Return ``entry`` if it exists; else ``build`` it into a temporary sibling directory
    and rename that into place, so a crash never leaves a half-written entry and two
    processes racing on the same key both end with a complete one."""
    if entry.exists():
        return entry
    entry.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(entry)
    tmp = Path(tempfile.mkdtemp(prefix=entry.name + ".", suffix=".tmp", dir=entry.parent))
    try:
        build(tmp)
        try:
            tmp.rename(entry)
        except OSError:
            if not entry.exists():  # not a lost race: a real failure
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return entry


def _remove_abandoned(entry: Path) -> None:
    """Delete temporary build directories of ``entry`` left by killed processes (a
    SIGKILL skips the cleanup in ``build_cached``); recent ones may belong to a live build."""
    now = time.time()
    for tmp in entry.parent.glob(entry.name + ".*.tmp"):
        if now - tmp.stat().st_mtime > STALE_TMP_S:
            shutil.rmtree(tmp, ignore_errors=True)


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=True))
    tmp.replace(path)
