"""`recipe-arena verify` on a file of rows each near the line cap: the rows held at once
are bounded in bytes as well as in number, so the memory the run needs does not grow
with the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.hostile_tally import record

RUN = """
import sys
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.rewards.verify import verify_jsonl
summary = verify_jsonl(sys.argv[1], sys.argv[2], RewardsConfig(workers=1))
peak = [x for x in open("/proc/self/status") if x.startswith("VmHWM")][0].split()[1]
print(int(peak) >> 10, summary["rows"], summary["score/math"])
"""


def test_rows_near_the_line_cap_are_not_all_held_at_once(tmp_path: Path) -> None:
    """Issue example: each line under the 4 MiB cap is read, but 256 of them were held
    parsed until their chunk was scored. A line of ``[{}, {}, ...]`` parses into about
    25 times its size (4 MiB: 100 MB), so a 1 GiB file of such rows needed 25 GB and
    took the machine's memory; 12 of them already peaked at 1.2 GB. Now a chunk is
    scored once its lines reach 16 MiB (4 such rows): 12 rows, each a right math answer
    with a 4 MiB pad, are all scored 1 and the verify process peaks under 800 MB."""
    n = (4 << 20) // 3 - 100
    row = json.dumps({"domain": "math", "response": "\\boxed{4}", "ground_truth": "4"})
    line = row[:-1] + ', "pad": [' + ",".join(["{}"] * n) + "]}\n"
    assert len(line) < 4 << 20
    inp, out = tmp_path / "rows.jsonl", tmp_path / "scored.jsonl"
    inp.write_text(line * 12)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.run(
        [sys.executable, "-c", RUN, str(inp), str(out)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    peak_mb, rows, score = proc.stdout.split()
    ok = int(peak_mb) < 800 and float(rows) == 12.0 and float(score) == 1.0
    record("verify: memory of rows near the line cap", 1, int(ok))
    assert ok, (peak_mb, rows, score)
