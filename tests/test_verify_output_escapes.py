"""`recipe-arena verify` writing the rows of someone else's file back out: characters
that drive or redraw a terminal are written as JSON escapes, through the real CLI as a
user runs it (``recipe-arena verify rows.jsonl``, scores to stdout)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from recipe_arena.cli import main
from tests.hostile_tally import record

HOSTILE = [
    # (id, response): each forges what the terminal shows of its row
    ("r1", "\\boxed{4}\u202e"),  # a right-to-left override: the row's score drawn reversed
    ("r2", "\\boxed{4} \x9b2J"),  # the C1 control sequence introducer: clears the screen
    ("r3\u2028", "\\boxed{4}"),  # a line separator: one row drawn as two lines
    ("r4", "\\boxed{4}\u2066\u200f"),  # an isolate and a right-to-left mark
]


def test_terminal_controls_in_a_rows_fields_are_written_escaped(tmp_path: Path, capsys) -> None:
    """Four math rows (gold 4, each answer ``\\boxed{4}``) whose id or response holds
    U+202E, U+009B, U+2028 or U+2066 and U+200F. ``json.dumps`` escapes only C0
    controls, so verify printed these as they were; now stdout holds none of them (no
    character of category Cc, Cf, Zl or Zp), shows one line per row, and each line reads
    back as the row's own fields with score 1.0 (4 is the gold)."""
    rows = [{"id": i, "domain": "math", "response": r, "ground_truth": "4"} for i, r in HOSTILE]
    inp = tmp_path / "rows.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["verify", str(inp)]) == 0
    out = capsys.readouterr().out
    shown = [c for c in out if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]
    lines = out.split("\n")[:-1]
    back = [json.loads(line) for line in lines]
    ok = not shown and len(lines) == len(rows)
    record("verify: terminal controls in written rows", len(rows), len(rows) if ok else 0)
    assert not shown, [f"U+{ord(c):04X}" for c in shown]
    assert [(b["id"], b["response"], b["score"]) for b in back] == [
        (r["id"], r["response"], 1.0) for r in rows
    ]
