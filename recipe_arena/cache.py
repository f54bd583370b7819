"""The on-disk cache shared by the stages and the evaluation: where it lives, how an
entry is keyed, and how an entry or a JSON file is written atomically.

A module of its own so that the stages (which cache base models) and the evaluation
(which caches a checkpoint's scores next to it) both import it without importing each
other.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import filelock

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
    and rename that into place, so a crash never leaves a half-written entry. The build
    holds ``build_lock(entry)``: a second process (another run, a Ray actor, the micro
    judge's background training) asking for the same entry meanwhile waits for it and
    then reads it, rather than building it a second time beside the first."""
    if entry.exists():
        return entry
    entry.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(entry):
        if entry.exists():  # built by the process that held the lock
            return entry
        _remove_abandoned(entry)
        tmp = Path(tempfile.mkdtemp(prefix=entry.name + ".", suffix=".tmp", dir=entry.parent))
        try:
            build(tmp)
            tmp.rename(entry)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return entry


@contextlib.contextmanager
def build_lock(entry: Path) -> Iterator[None]:
    """An exclusive lock on ``<entry>.lock`` beside the entry (``filelock``: an OS lock,
    released when its holder dies, so a killed build never blocks the next). Waiting for
    it says so on stderr, since the holder's build can take minutes."""
    lock = filelock.FileLock(str(entry) + ".lock")
    try:
        lock.acquire(blocking=False)
    except filelock.Timeout:
        print(f"waiting for another process building {entry}", file=sys.stderr, flush=True)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


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
