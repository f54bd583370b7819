"""Shared pieces of the supervised stages (base training, SFT): the optimiser and its
schedule, the step loop with a progress bar, rendering conversations, and the cache.

The schedule (``core.schedule``) is linear warm-up then cosine decay to 10% of the peak,
the usual shape for short pretraining and SFT runs; AdamW with betas (0.9, 0.95) and
gradient clipping at 1.0 as in most open pretraining recipes (OLMo, nanoGPT).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from recipe_arena.config import RunConfig
from recipe_arena.core.schedule import lr_at
from recipe_arena.progress import StageBar
from recipe_arena.rundir import RunDir

CODE_VERSION = "stages-v3"
"""Part of every cache key: bump it when a change alters what a cached stage produces."""

Batch = tuple[torch.Tensor, torch.Tensor]
"""(input_ids_BT, labels_BT); labels are -100 where no loss is taken."""


def train_steps(
    model: PreTrainedModel,
    batches: Iterator[Batch],
    *,
    steps: int,
    lr: float,
    warmup: int,
    stage: str,
    run: RunDir | None,
    log_every: int = 10,
) -> list[float]:
    """Run ``steps`` optimiser steps of next-token cross-entropy on ``batches``; log
    ``loss/train`` and ``lr`` under ``stage``; return the per-step losses."""
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
    losses: list[float] = []
    bar = StageBar(stage, steps)
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, warmup, lr)
        input_ids_BT, labels_BT = next(batches)
        loss = model(input_ids=input_ids_BT, labels=labels_BT).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        bar.update(1, f"loss {losses[-1]:.3f}")
        if run is not None and (step % log_every == 0 or step == steps - 1):
            window = losses[-log_every:]
            run.log(
                stage,
                step,
                {
                    "loss/train": sum(window) / len(window),
                    "lr": opt.param_groups[0]["lr"],
                    "grad_norm": float(grad_norm),
                },
            )
    bar.close()
    model.train(False)
    return losses


def render(tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]]) -> str:
    """The conversation as text through the tokenizer's chat template."""
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    assert isinstance(text, str)
    return text


# ----------------------------------------------------------------------------- cache
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


STALE_TMP_S = 6 * 3600
"""A temporary build directory untouched this long was left by a killed process."""


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


def heldout_eval(cfg: RunConfig, checkpoint: Path) -> dict[str, float]:
    """Held-out pass@1 per domain of ``checkpoint`` on the world's held-out rows (cached
    next to it, see ``eval.final.evaluate_checkpoint``, so a cached base model is
    evaluated once)."""
    from recipe_arena.data.micro import generate_split
    from recipe_arena.data.schema import DOMAINS
    from recipe_arena.eval.final import evaluate_checkpoint

    n, seed = cfg.world.heldout_per_domain, cfg.world.data_seed
    heldout = [r for d in DOMAINS for r in generate_split(d, "heldout", n, seed)]
    return evaluate_checkpoint(cfg, checkpoint, heldout).metrics
