"""Per-question evaluation scores of a run: ``eval_scores.jsonl``.

One JSON object per evaluation: ``{"stage", "step", "ids", "domains", "sources",
"scores"}``, the lists aligned by position in the evaluated rows (the same rows, in the
same order, for every run of a world with the same eval settings). ``sources`` is a
short hash of each row's prompt text, so questions asked twice (the micro world's 50
code prompts hold 20 distinct problems) can be treated as one unit. The RL stage
writes one record at its start (step 0) and at every evaluation; the ``eval`` stage
one for the final checkpoint. Comparisons pair arms question by question from these
records and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from recipe_arena.comparison_plan import ArtifactError
from recipe_arena.data.schema import PromptRow
from recipe_arena.rundir import open_log

SCORES_FILE = "eval_scores.jsonl"


@dataclass(frozen=True)
class ScoreRecord:
    stage: str
    step: int
    ids: list[str]
    domains: list[str]
    sources: list[str]
    scores: list[float]


def source_of(row: PromptRow) -> str:
    """12 hex digits of the SHA-256 of the row's prompt text."""
    return hashlib.sha256(row.prompt_text.encode()).hexdigest()[:12]


def log_eval_scores(
    run_path: str | Path, stage: str, step: int, rows: Sequence[PromptRow], scores: Sequence[float]
) -> None:
    """Append one evaluation's per-row scores (flushed and fsynced)."""
    if len(rows) != len(scores):
        raise ValueError(f"log_eval_scores: {len(rows)} rows but {len(scores)} scores")
    record = {
        "stage": stage,
        "step": int(step),
        "ids": [r.id for r in rows],
        "domains": [r.domain for r in rows],
        "sources": [source_of(r) for r in rows],
        "scores": [float(s) for s in scores],
    }
    with open(Path(run_path) / SCORES_FILE, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_eval_scores(run_path: str | Path, finished: bool = False) -> list[ScoreRecord]:
    """Every evaluation of the run, in file order; when an evaluation was written twice
    (a resumed run repeats the steps after its last checkpoint) the later one counts. A
    torn last line (a crash mid-write) is ignored while the run is not ``finished``: a
    finished run wrote every record whole. ArtifactError, naming the file and line, for
    a file cut short or any other line that is not a whole record (hand-edited or
    damaged): reading on past it, or stopping there, would give figures from part of
    the run's evaluations without a word."""
    path = Path(run_path) / SCORES_FILE
    if not path.exists() and not path.with_name(SCORES_FILE + ".gz").exists():
        return []
    shown = path if path.exists() else path.with_name(SCORES_FILE + ".gz")  # ``open_log``'s
    try:
        with open_log(path) as f:
            lines = f.readlines()
    except (OSError, EOFError, zlib.error) as e:
        raise ArtifactError(f"{shown}: cannot be read whole ({e})") from None
    latest: dict[tuple[str, int], ScoreRecord] = {}
    for n, line in enumerate(lines, 1):
        try:
            rec = _score_record(json.loads(line))
        except (ValueError, TypeError, KeyError) as e:
            if n == len(lines) and not finished and not line.endswith("\n"):
                break  # the line a crash cut, in a run that will write it again
            raise ArtifactError(f"{shown} line {n}: not an evaluation record ({e})") from None
        latest.pop((rec.stage, rec.step), None)
        latest[(rec.stage, rec.step)] = rec
    return list(latest.values())


def _score_record(raw: dict) -> ScoreRecord:
    """One line of eval_scores.jsonl as written by ``log_eval_scores``; ValueError when a
    field is missing, the lists differ in length or a score is not in [0, 1] (each is a
    question's pass@1)."""
    rec = ScoreRecord(
        stage=str(raw["stage"]),
        step=int(raw["step"]),
        ids=list(raw["ids"]),
        domains=list(raw["domains"]),
        sources=list(raw["sources"]),
        scores=[float(s) for s in raw["scores"]],
    )
    if not len(rec.ids) == len(rec.domains) == len(rec.sources) == len(rec.scores):
        raise ValueError(f"{len(rec.ids)} ids but {len(rec.scores)} scores")
    if (bad := next((x for x in rec.scores if not 0.0 <= x <= 1.0), None)) is not None:
        raise ValueError(f"score {bad} is not a pass@1 in [0, 1]")
    return rec


def final_scores(records: Sequence[ScoreRecord]) -> ScoreRecord | None:
    """The final checkpoint's evaluation: the ``eval`` stage's, else the RL stage's last."""
    for stage in ("eval", "rlvr"):
        mine = [r for r in records if r.stage == stage]
        if mine:
            return max(mine, key=lambda r: r.step)
    return None


def rl_evaluations(records: Sequence[ScoreRecord]) -> list[ScoreRecord]:
    """The RL stage's evaluations by step (step 0 is the RL start)."""
    return sorted((r for r in records if r.stage == "rlvr"), key=lambda r: r.step)
