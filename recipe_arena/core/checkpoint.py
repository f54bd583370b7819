"""Training-state checkpoints of the RL loop, written atomically, and the trained-prompt ledger.

A checkpoint directory ``step_<n>/`` holds ``model/`` (safetensors + tokenizer) and
``state.pt`` (optimiser, learner version, step, prompt-source cursor with the prompts
still in flight, RNG states). It is built under ``step_<n>.tmp`` and renamed, then
``latest`` (a one-line file) is replaced: a kill -9 at any moment leaves either the
previous checkpoint or the new one, never half of one.

Every file of a checkpoint is fsynced (model files too) and listed with its SHA-256 in
``checksums.json``, written last; loading verifies them. A checkpoint whose files do not
match (a disk error, a partial copy, bytes overwritten) is reported by path and the
newest earlier checkpoint that verifies is used instead.

The ledger (one JSON line per step: trained, zero-variance and stale prompt ids) is the
record of what each step consumed; on resume, lines after the checkpoint's step are cut,
because those steps are trained again.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from recipe_arena.integrity import _fsync_dir, seal, verify
from recipe_arena.models.factory import save_checkpoint


def rng_state() -> dict[str, Any]:
    return {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": np.random.get_state(),
    }


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])


def save_training_state(
    root: Path, step: int, model: Any, tokenizer: Any, state: dict[str, Any]
) -> Path:
    """Write ``root/step_<step>`` atomically (sealed: fsynced, with checksums) and point
    ``root/latest`` at it."""
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step_{step:06d}"
    tmp = root / f"step_{step:06d}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    save_checkpoint(model, tokenizer, tmp / "model")
    with open(tmp / "state.pt", "wb") as f:
        torch.save({**state, "step": step, "rng": rng_state()}, f)
    seal(tmp)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    _fsync_dir(root)
    pointer = root / "latest.tmp"
    pointer.write_text(final.name + "\n")
    with open(pointer) as f:
        os.fsync(f.fileno())
    pointer.replace(root / "latest")
    _fsync_dir(root)
    return final


def latest_training_state(root: Path) -> Path | None:
    """The newest finished checkpoint whose files verify, or None. A newer one that does
    not verify is reported on stderr by path (and left on disk for inspection)."""
    pointer = root / "latest"
    named = root / pointer.read_text().strip() if pointer.exists() else None
    done = sorted(
        (p for p in root.glob("step_*") if p.is_dir() and not p.name.endswith(".tmp")),
        reverse=True,
    )
    if named is not None and named in done:  # ``latest`` first, then older ones
        done = [named] + [p for p in done if p.name < named.name]
    for path in done:
        problem = verify(path)
        if problem is None and (path / "state.pt").exists():
            return path
        print(f"checkpoint {path} is corrupt ({problem}); trying an earlier one", file=sys.stderr)
    return None


def load_training_state(path: Path) -> dict[str, Any]:
    state: dict[str, Any] = torch.load(path / "state.pt", weights_only=False)
    return state


def prune(root: Path, keep: int) -> None:
    """Keep the newest ``keep`` finished checkpoints (never the one ``latest`` names)."""
    pointer = root / "latest"
    latest = root / pointer.read_text().strip() if pointer.exists() else None
    done = sorted(p for p in root.glob("step_*") if p.is_dir() and not p.name.endswith(".tmp"))
    for p in done[:-keep]:
        if latest is None or p != latest:
            shutil.rmtree(p, ignore_errors=True)


class Ledger:
    """Append-only JSONL of what each step consumed, fsynced per line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a torn last line after a kill
        return out

    def truncate_after(self, step: int) -> None:
        """Drop records of steps after ``step`` (atomically rewritten)."""
        keep = [r for r in self.read() if r["step"] <= step]
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in keep))
        tmp.replace(self.path)

    def reset(self) -> None:
        self.path.unlink(missing_ok=True)
