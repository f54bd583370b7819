"""The micro judge: a micro model trained to grade chat answers, cached per machine.

The chat generator labels any answer exactly (``data.micro_chat.is_right``), so the
judge learns from verdicts whose truth is known (``data.micro_verdicts``): each is the
judge's own prompt (the reference or open-ended template, as ``Judge`` renders it) and
the reply ``Score: 10`` or ``Score: 0``, with the loss on the reply only (the SFT mask).
It is then an ordinary judge model behind ``rewards.judge``: a checkpoint that the
torch engine runs greedily, whose replies ``parse_score`` reads.

The checkpoint is cached under a hash of its settings and CODE_VERSION in
$RECIPE_ARENA_CACHE (default ~/.cache/recipe_arena), like the SmolLM2 conversion.
``judge_agreement`` measures it on held-out verdicts.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from recipe_arena.config import MicroJudgeConfig
from recipe_arena.data.micro_verdicts import Verdict, generate_verdicts
from recipe_arena.models.factory import build_micro
from recipe_arena.stages.common import build_cached, cache_key, cache_root, train_steps

_JUDGE_DATA_SEED = 4_000_037
"""Seed of the judge's verdict draw (train split only, so held-out chat rows stay unseen)."""


def judge_cache_entry(cfg: MicroJudgeConfig, cache_dir: str | None = None) -> Path:
    key = cache_key({"stage": "micro_judge", "judge": cfg.model_dump(mode="json")})
    return cache_root(cache_dir) / "judge" / key


def verdict_chat(v: Verdict) -> list[dict[str, str]]:
    """The verdict as a conversation: the judge prompt, then the judge's reply."""
    from recipe_arena.rewards.judge import judge_prompt

    return [*judge_prompt(v.row, v.answer, v.mode), {"role": "assistant", "content": v.reply}]


def _train(cfg: MicroJudgeConfig, out: Path) -> None:
    from recipe_arena.stages.sft import assistant_mask, sft_batches

    t0 = time.time()
    model, tok = build_micro(cfg.model, seed=cfg.seed)
    verdicts = generate_verdicts("train", cfg.examples, _JUDGE_DATA_SEED + cfg.seed, cfg.open_fraction)
    examples = [assistant_mask(tok, verdict_chat(v)) for v in verdicts]
    limit = cfg.model.max_position_embeddings
    examples = [e for e in examples if len(e[0]) <= limit]
    torch.manual_seed(cfg.seed)
    losses = train_steps(
        model,
        sft_batches(examples, cfg.batch_size, int(tok.pad_token_id), cfg.seed),
        steps=cfg.steps,
        lr=cfg.lr,
        warmup=min(cfg.warmup_steps, cfg.steps),
        stage="micro_judge",
        run=None,
    )
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    meta = {
        "steps": cfg.steps,
        "examples": len(examples),
        "final_loss": sum(losses[-20:]) / len(losses[-20:]) if losses else None,
        "seconds": time.time() - t0,
    }
    (out / "judge_meta.json").write_text(json.dumps(meta, indent=2))


def micro_judge_checkpoint(cfg: MicroJudgeConfig, cache_dir: str | None = None) -> Path:
    """The cached judge checkpoint for ``cfg``, trained on first use (with a note on
    stderr, since it takes a while)."""
    entry = judge_cache_entry(cfg, cache_dir)
    if not entry.exists():
        print(f"micro judge: training {cfg.steps} steps into {entry}", file=sys.stderr, flush=True)
    return build_cached(entry, lambda tmp: _train(cfg, tmp))


def judge_agreement(judge: Any, verdicts: Sequence[Verdict]) -> dict[str, float]:
    """How often ``judge`` (a ``rewards.judge.Judge``) agrees with the exact labels:
    ``accuracy`` (a score >= 0.5 called right), ``pairs`` (for each problem with a right
    and a wrong answer, the right one scored higher), and ``unparsable``."""
    from recipe_arena.rewards.judge import parse_score

    replies = judge.replies([judge_prompt_of(v) for v in verdicts])
    scores = [parse_score(r) for r in replies]
    agree = [s is not None and (s >= 0.5) == v.right for s, v in zip(scores, verdicts, strict=True)]
    by_row: dict[str, dict[bool, list[float]]] = {}
    for s, v in zip(scores, verdicts, strict=True):
        by_row.setdefault(f"{v.mode}|{v.row.id}", {True: [], False: []})[v.right].append(
            -1.0 if s is None else s
        )
    pairs = [
        float(r > w)
        for sides in by_row.values()
        for r in sides[True]
        for w in sides[False]
    ]
    return {
        "accuracy": sum(agree) / len(agree),
        "pairs": sum(pairs) / len(pairs) if pairs else float("nan"),
        "unparsable": sum(s is None for s in scores) / len(scores),
        "verdicts": float(len(verdicts)),
        "pair_count": float(len(pairs)),
    }


def judge_prompt_of(v: Verdict) -> list[dict[str, str]]:
    from recipe_arena.rewards.judge import judge_prompt

    return judge_prompt(v.row, v.answer, v.mode)
