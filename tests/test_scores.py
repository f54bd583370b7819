"""eval_scores.jsonl: per-question scores of every evaluation, robust to resume and crash."""

from __future__ import annotations

from pathlib import Path

from recipe_arena.data.schema import Message, PromptRow
from recipe_arena.eval.scores import (
    SCORES_FILE,
    final_scores,
    log_eval_scores,
    read_eval_scores,
    rl_evaluations,
    source_of,
)


def _row(i: int, text: str) -> PromptRow:
    return PromptRow(id=f"r{i}", messages=[Message(role="user", content=text)], domain="code")


def test_records_resume_duplicates_and_a_torn_line(tmp_path: Path) -> None:
    """RL evaluations at steps 0 and 2, step 2 written again after a resume (scores
    changed: the later one counts), the eval stage's record, then half a line from a
    crash: three records, RL steps (0, 2) with step 2's second scores, the final one the
    eval stage's. Rows with the same prompt share a source."""
    rows = [_row(0, "add"), _row(1, "mul"), _row(2, "add")]
    log_eval_scores(tmp_path, "rlvr", 0, rows, [0.0, 0.0, 1.0])
    log_eval_scores(tmp_path, "rlvr", 2, rows, [1.0, 0.0, 0.0])
    log_eval_scores(tmp_path, "rlvr", 2, rows, [1.0, 1.0, 0.0])
    log_eval_scores(tmp_path, "eval", 0, rows, [0.5, 1.0, 0.0])
    with open(tmp_path / SCORES_FILE, "a") as f:
        f.write('{"stage": "eval", "step": 1, "ids": ["r0"')
    records = read_eval_scores(tmp_path)
    assert len(records) == 3
    rl = rl_evaluations(records)
    assert [(r.step, r.scores) for r in rl] == [(0, [0.0, 0.0, 1.0]), (2, [1.0, 1.0, 0.0])]
    final = final_scores(records)
    assert final is not None and final.stage == "eval" and final.scores == [0.5, 1.0, 0.0]
    assert final.ids == ["r0", "r1", "r2"] and final.domains == ["code"] * 3
    assert final.sources[0] == final.sources[2] == source_of(rows[0]) != final.sources[1]
    assert final_scores(rl) == rl[-1]
