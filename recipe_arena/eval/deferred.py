"""Held-out evaluations whose chat scores wait for the micro judge while the run goes on.

On a machine that has not cached it, the micro judge trains in a background process
from the start of the run (``rewards.micro_judge.train_in_background``), and the held-out
evaluations of the base, SFT and DPO stages come before it is ready. Such an evaluation
(``log_heldout_eval``) does not wait for it: it generates every response now, from the
checkpoint at hand, scores the domains the verifiers check, and writes the chat
responses, with everything else it needs, to ``pending_scores.json`` in the run
directory. ``complete_pending`` scores them once the judge is ready, in the order they
were deferred, and logs each evaluation under its own stage and step; the pipeline calls
it at a stage boundary where the judge has finished, before a stage that needs the
judge, and at the end of the run. The responses are those of the stage's checkpoint,
generated exactly as a waiting evaluation generates them, and the judge sees them in
the same order, so every number is the one the evaluation would have logged had it
waited; only its line in ``metrics.jsonl`` comes later (the stage's other lines keep
their order). The checkpoint's evaluation cache (``eval.final.eval_cache_path``) is
written then too, so a later stage that evaluates the same checkpoint (RL's start)
reads it.

Why: on a first run the judge's training takes longer than the base stage, and an
evaluation that waited for it held SFT for minutes for one figure.

Nothing is lost on a crash: the file is written whole before the stage ends, and a
resumed run scores what it holds before anything else uses the judge (a stage that
runs again replaces its own entries).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recipe_arena.config import RunConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rundir import RunDir, read_metrics

PENDING_FILE = "pending_scores.json"
"""The run directory's deferred evaluations: a JSON list in the order they were
deferred, each ``{"stage", "step", "cache", "rows", "texts", "lengths", "scores"}``:
the evaluated rows (``PromptRow`` as JSON), the judged rows' completions (null for the
others), every row's completion lengths in tokens, and each row's score (null for a
judged row, still to be scored); ``cache`` is the checkpoint's evaluation cache file."""


def judge_training(cfg: RunConfig) -> bool:
    """Whether chat is judged by the micro judge and this process is still training it
    in the background (``rewards.micro_judge.training_in_background``)."""
    from recipe_arena.rewards.micro_judge import training_in_background

    return cfg.rewards.judge_model == "micro" and training_in_background(cfg.rewards.micro_judge)


def _judged(row: PromptRow) -> bool:
    """Whether the judge scores ``row`` (a domain no verifier in the pool checks)."""
    from recipe_arena.domains import POOLED_DOMAINS

    return row.domain not in POOLED_DOMAINS


def log_heldout_eval(
    cfg: RunConfig, run: RunDir, stage: str, step: int, checkpoint: Path, rows: Sequence[PromptRow]
) -> None:
    """Log the held-out evaluation of ``checkpoint`` on ``rows``
    (``eval.final.evaluate_checkpoint``'s metrics) under ``stage`` and ``step``: now,
    or, when some of its rows are judged while the judge still trains
    (``judge_training``) and the checkpoint holds no cached result, once the judge is
    ready (module docstring). While earlier evaluations wait, this one waits behind
    them even if the judge has meanwhile finished: the judge then scores them in the
    order a waiting run would."""
    from recipe_arena.eval.final import (
        cached_evaluation,
        eval_cache_path,
        eval_rows,
        evaluate_checkpoint,
    )

    cache = eval_cache_path(cfg, checkpoint, rows)
    chosen = eval_rows(cfg, rows)
    if (
        not (judge_training(cfg) or has_pending(run))
        or not any(_judged(r) for r in chosen)
        or cached_evaluation(cache) is not None
    ):
        run.log(stage, step, evaluate_checkpoint(cfg, checkpoint, rows).metrics)
        return
    texts, lengths, scores = _generate_and_verify(cfg, checkpoint, chosen)
    entry = {
        "stage": stage,
        "step": int(step),
        "cache": str(cache),
        "rows": [r.model_dump(mode="json") for r in chosen],
        "texts": [t if s is None else None for t, s in zip(texts, scores, strict=True)],
        "lengths": lengths,
        "scores": scores,
    }
    kept = [e for e in _read(run) if (e["stage"], e["step"]) != (stage, int(step))]
    _write(run, [*kept, entry])
    print(
        f"{stage}: chat answers of the held-out evaluation kept for the micro judge, "
        "still training in the background (scored when it is ready)",
        file=sys.stderr,
        flush=True,
    )


def _generate_and_verify(
    cfg: RunConfig, checkpoint: Path, rows: Sequence[PromptRow]
) -> tuple[list[list[str]], list[list[int]], list[float | None]]:
    """What ``eval.final.evaluate_model`` does, less the judge: every row's completions
    (``eval.evaluate.generate_samples``, all rows in one call as there) and their lengths,
    and the score of each row the pool's verifiers check (None for a judged row)."""
    from recipe_arena.engines import build_engine
    from recipe_arena.eval.evaluate import generate_samples, row_means, samples_per_row
    from recipe_arena.eval.final import eval_engine_config
    from recipe_arena.models.factory import load_checkpoint
    from recipe_arena.rewards import build_scorer

    model, tok = load_checkpoint(checkpoint)
    model.eval()
    engine = build_engine(cfg.engine.name, model, tok, eval_engine_config(cfg))
    try:
        texts, lengths = generate_samples(engine, tok, rows, cfg.eval, template=cfg.prompt_template)
    finally:
        engine.close()
    n = samples_per_row(cfg.eval)
    now = [i for i, r in enumerate(rows) if not _judged(r)]
    scores: list[float | None] = [None] * len(rows)
    with build_scorer(cfg.rewards, shared=True) as scorer:
        flat = scorer.score(
            [rows[i] for i in now for _ in range(n)], [t for i in now for t in texts[i]]
        )
    for i, s in zip(now, row_means([float(r.score) for r in flat], n), strict=True):
        scores[i] = s
    return texts, lengths, scores


def has_pending(run: RunDir) -> bool:
    """Whether ``run`` holds deferred evaluations."""
    return bool(_read(run))


def drop_pending(run: RunDir, stage: str) -> None:
    """Forget ``stage``'s deferred evaluations (the stage runs again on resume)."""
    entries = _read(run)
    kept = [e for e in entries if e["stage"] != stage]
    if len(kept) != len(entries):
        _write(run, kept)


def complete_pending(cfg: RunConfig, run: RunDir) -> None:
    """Score every deferred evaluation of ``run`` with the judge (waiting for it when it
    still trains), in the order they were deferred; log each (in place of any line an
    interrupted completion logged for it), cache it in its checkpoint, then drop it from
    the file."""
    from recipe_arena.eval.evaluate import row_means, summarise
    from recipe_arena.eval.final import cache_evaluation
    from recipe_arena.rewards import build_scorer

    entries = _read(run)
    if not entries:
        return
    print(
        f"micro judge: scoring the chat answers kept from {', '.join(e['stage'] for e in entries)}",
        file=sys.stderr,
        flush=True,
    )
    while entries:
        e = entries[0]
        rows = [PromptRow.model_validate(r) for r in e["rows"]]
        todo = [i for i, s in enumerate(e["scores"]) if s is None]
        scores: list[float] = [0.0 if s is None else float(s) for s in e["scores"]]
        if todo:
            n = len(e["texts"][todo[0]])
            with build_scorer(cfg.rewards, shared=True) as scorer:
                flat = scorer.score(
                    [rows[i] for i in todo for _ in range(n)],
                    [t for i in todo for t in e["texts"][i]],
                )
            for i, s in zip(todo, row_means([float(r.score) for r in flat], n), strict=True):
                scores[i] = s
        result = summarise(rows, scores, e["lengths"])
        cache_evaluation(Path(e["cache"]), result)
        stage, step = e["stage"], int(e["step"])
        logged = read_metrics(run.metrics_path) if run.metrics_path.exists() else []
        if any(_logged(r, stage, step) for r in logged):
            run.drop_records(lambda r, s=stage, t=step: _logged(r, s, t))
        run.log(stage, step, result.metrics)
        entries = entries[1:]
        _write(run, entries)


def _logged(record: dict[str, Any], stage: str, step: int) -> bool:
    """Whether ``record`` is a held-out evaluation of ``stage`` at ``step``."""
    return (
        record.get("stage") == stage
        and record.get("step") == step
        and ("eval/mean/pass@1" in record)
    )


def _read(run: RunDir) -> list[dict[str, Any]]:
    path = run.path / PENDING_FILE
    if not path.exists():
        return []
    entries: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return entries


def _write(run: RunDir, entries: list[dict[str, Any]]) -> None:
    """Write the deferred evaluations whole (``RunDir.write_json``), or remove the file
    when there are none."""
    if entries:
        run.write_json(PENDING_FILE, entries)
    else:
        (run.path / PENDING_FILE).unlink(missing_ok=True)
