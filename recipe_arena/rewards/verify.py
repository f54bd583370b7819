"""``recipe-arena verify IN.jsonl [OUT.jsonl]``: score a file of responses.

Input: one JSON object per line with ``domain``, ``response`` and ``ground_truth``;
optional ``id``, ``messages`` (chat list) or ``prompt`` (string), ``effort``,
``token_budget``. Output: the same objects with ``score`` (float in [0, 1], or null
when the row itself is malformed) and ``reason`` added. A malformed line yields a
per-row ``error:`` reason; the batch goes on. Rows are written as they are scored
(in chunks), so a crash loses at most one chunk.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from recipe_arena.config import RewardsConfig
from recipe_arena.data.schema import DOMAINS, PromptRow

CHUNK = 256


def row_from_record(rec: Any, lineno: int) -> tuple[PromptRow | None, str]:
    """(row, "") or (None, "error: ...") for one input record."""
    if not isinstance(rec, dict):
        return None, "error: line is not a JSON object"
    missing = [k for k in ("domain", "response") if k not in rec]
    if missing:
        return None, f"error: missing field(s) {', '.join(missing)}"
    if rec["domain"] not in DOMAINS:
        return None, f"error: domain {rec['domain']!r} not one of {', '.join(DOMAINS)}"
    if not isinstance(rec["response"], str):
        return None, "error: response must be a string"
    messages = rec.get("messages") or [{"role": "user", "content": str(rec.get("prompt", ""))}]
    try:
        row = PromptRow(
            id=str(rec.get("id", f"line{lineno}")),
            messages=messages,
            ground_truth=rec.get("ground_truth"),
            domain=rec["domain"],
            effort=rec.get("effort"),
            token_budget=rec.get("token_budget"),
        )
    except ValueError as e:
        first = str(e).splitlines()[1:2] or [str(e)]
        return None, f"error: bad row ({first[0].strip()[:120]})"
    return row, ""


def _records(path: Path) -> Iterator[tuple[int, Any, str]]:
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line), ""
            except json.JSONDecodeError as e:
                yield lineno, {"line": lineno}, f"error: line {lineno} is not valid JSON ({e.msg})"


def verify_jsonl(
    in_path: str | Path, out_path: str | Path | None, cfg: RewardsConfig | None = None
) -> dict[str, float]:
    """Score every line of ``in_path``; write to ``out_path`` (stdout if None).

    Returns a summary: ``rows``, ``errors`` (malformed rows), ``score/<domain>``
    (mean) and ``count/<domain>``. Progress goes to stderr.
    """
    from recipe_arena.rewards.scorer import build_scorer

    in_path = Path(in_path)
    if not in_path.exists():
        raise FileNotFoundError(f"verify: no such input file {in_path}")
    out: IO[str]
    tmp: Path | None = None
    if out_path is None:
        out = sys.stdout
    else:
        tmp = Path(str(out_path) + ".tmp")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        out = open(tmp, "w", encoding="utf-8")  # noqa: SIM115 - closed in finally
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    n = errors = 0
    try:
        with build_scorer(cfg or RewardsConfig()) as scorer:
            chunk: list[tuple[Any, PromptRow | None, str]] = []
            for lineno, rec, err in _records(in_path):
                row, why = (None, err) if err else row_from_record(rec, lineno)
                chunk.append((rec, row, why))
                if len(chunk) >= CHUNK:
                    n, errors = _flush(scorer, chunk, out, sums, counts, n, errors)
                    chunk = []
            n, errors = _flush(scorer, chunk, out, sums, counts, n, errors)
    finally:
        if out is not sys.stdout:
            out.close()
    if tmp is not None:
        tmp.replace(Path(out_path))  # type: ignore[arg-type]
    summary: dict[str, float] = {"rows": float(n), "errors": float(errors)}
    for d in sorted(counts):
        summary[f"score/{d}"] = sums[d] / counts[d]
        summary[f"count/{d}"] = float(counts[d])
    return summary


def _flush(
    scorer: Any,
    chunk: list[tuple[Any, PromptRow | None, str]],
    out: IO[str],
    sums: dict[str, float],
    counts: dict[str, int],
    n: int,
    errors: int,
) -> tuple[int, int]:
    good = [(i, row) for i, (_, row, _) in enumerate(chunk) if row is not None]
    results = (
        scorer.score([r for _, r in good], [chunk[i][0]["response"] for i, _ in good])
        if good
        else []
    )
    by_index = {i: res for (i, _), res in zip(good, results, strict=True)}
    for i, (rec, row, why) in enumerate(chunk):
        rec = dict(rec) if isinstance(rec, dict) else {"value": rec}
        if i in by_index and row is not None:
            rec["score"], rec["reason"] = by_index[i].score, by_index[i].reason
            sums[row.domain] += by_index[i].score
            counts[row.domain] += 1
        else:
            rec["score"], rec["reason"] = None, why
            errors += 1
        out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    out.flush()
    n += len(chunk)
    if chunk:
        print(f"verify: {n} rows scored ({errors} malformed)", file=sys.stderr)
    return n, errors
