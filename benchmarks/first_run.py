"""Where a first run's minutes go: ``make run`` from an empty model cache, stage by stage.

Runs ``recipe-arena run recipe=olmo3_think`` (what ``make run`` runs; extra arguments are
passed on as overrides) with ``RECIPE_ARENA_CACHE`` an empty temporary folder (or
``--cache``), reads every line it prints with the time since the start, and reports:
- each stage's start, end and seconds (the ``stage <name>: <s> s`` lines), and the
  start-up before the first stage (imports, the world's data, the checks);
- the base model's and the micro judge's training: when each finished (its cache entry's
  metadata file, written last) and how long it trained (the metadata's ``seconds``); the
  judge trains in a background process from the start of the run
  (``rewards.micro_judge.train_in_background``);
- which held-out evaluations kept their chat answers for the judge while it trained
  (``eval.deferred``: base, SFT and DPO on a first run) and when they were scored;
- how long a stage waited for the judge (from ``micro judge: waiting for its training``
  to the judge's end; a wait after the last stage is the end of the run's), and the
  critical path: the judge, when a stage waited for it, else the stages in turn;
- the load average (1 minute) at the start and the end: on a shared machine the times
  are inflated by the other jobs, and ratios (judge against base model) say more.
Last line:
    first_run: <s> s from an empty cache (<critical path>)

Run: python benchmarks/first_run.py [--cache DIR] [--out DIR] [override ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_STAGE_END = re.compile(r"^stage (\w+): ([0-9.]+) s$")
_WAITING = "micro judge: waiting for its training in the background"
_KEPT = re.compile(r"^(\w+): chat answers of the held-out evaluation kept")
_SCORING = "micro judge: scoring the chat answers kept from"


def _meta(cache: Path, kind: str, name: str) -> tuple[float, dict[str, float]] | None:
    """(modification time, contents) of the newest ``<cache>/<kind>/*/<name>``, or None."""
    found = sorted(cache.glob(f"{kind}/*/{name}"), key=lambda p: p.stat().st_mtime)
    if not found:
        return None
    return found[-1].stat().st_mtime, json.loads(found[-1].read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=None, help="model cache (default: a new empty folder)")
    ap.add_argument("--out", default=None, help="out_dir of the run (default: a temporary one)")
    ap.add_argument("overrides", nargs="*", help="recipe-arena overrides (key=value)")
    args = ap.parse_args()
    cache = Path(args.cache or tempfile.mkdtemp(prefix="first-run-cache-"))
    out = Path(args.out or tempfile.mkdtemp(prefix="first-run-out-"))
    env = {**os.environ, "RECIPE_ARENA_CACHE": str(cache), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "recipe_arena.cli", "run", "recipe=olmo3_think"]
    cmd += [f"out_dir={out}", *args.overrides]
    load0 = os.getloadavg()[0]
    print(f"cache {cache}, out {out}, load average {load0:.2f}; {' '.join(cmd[2:])}", flush=True)
    start_wall, t0 = time.time(), time.perf_counter()
    ends: dict[str, tuple[float, float]] = {}
    waited_from: float | None = None
    waiting_stage: str | None = None
    current: str | None = None
    kept: list[str] = []
    scored_at: list[float] = []
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    assert proc.stdout is not None
    for raw in proc.stdout:
        now = time.perf_counter() - t0
        line = raw.strip().strip("─").strip()
        sys.stdout.write(f"[{now:7.1f}] {raw}")
        if line.startswith("stage ") and ":" not in line:
            current = line.removeprefix("stage ").strip()
        if (m := _STAGE_END.match(line)) is not None:
            ends[m.group(1)] = (now, float(m.group(2)))
        if (m := _KEPT.match(line)) is not None:
            kept.append(m.group(1))
        if line.startswith(_SCORING):
            scored_at.append(now)
        if _WAITING in line and waited_from is None:
            waited_from = now
            waiting_stage = "the end of the run" if current in ends else current
    rc = proc.wait()
    total = time.perf_counter() - t0
    load1 = os.getloadavg()[0]
    if rc != 0:
        raise SystemExit(f"first_run: the run exited with {rc}")

    print(f"\n{'stage':<14} {'start s':>8} {'end s':>8} {'seconds':>8}")
    first = min((end - secs for end, secs in ends.values()), default=total)
    print(f"{'(start-up)':<14} {0.0:8.1f} {first:8.1f} {first:8.1f}")
    for name, (end, secs) in ends.items():
        print(f"{name:<14} {end - secs:8.1f} {end:8.1f} {secs:8.1f}")
    trained: dict[str, tuple[float, float, float]] = {}
    for kind, name in (("base", "base_meta.json"), ("judge", "judge_meta.json")):
        found = _meta(cache, kind, name)
        if found is not None:
            mtime, meta = found
            trained[kind] = (mtime - start_wall, float(meta["seconds"]), float(meta["steps"]))
            print(
                f"{kind} model: finished at {mtime - start_wall:.1f} s, trained "
                f"{meta['steps']} steps in {meta['seconds']:.1f} s"
            )
    if "base" in trained and "judge" in trained:
        print(
            f"judge training / base model training: "
            f"{trained['judge'][1] / trained['base'][1]:.2f} (seconds), judge steps "
            f"{trained['judge'][2]:.0f}"
        )
    if kept:
        at = ", ".join(f"{t:.1f} s" for t in scored_at)
        print(f"chat answers kept for the judge: {', '.join(kept)}; scored from {at}")
    waited = 0.0
    if waited_from is not None and "judge" in trained:
        waited = max(0.0, trained["judge"][0] - waited_from)
        print(f"stage {waiting_stage} waited {waited:.1f} s for the micro judge")
    after = [n for n, (end, _) in ends.items() if "judge" in trained and end > trained["judge"][0]]
    if waited > 1.0:
        path = f"micro judge {trained['judge'][0]:.0f} s, waited for in {waiting_stage}"
        path += f", then {' -> '.join(n for n in after if n != waiting_stage)}" if after else ""
    else:
        path = " -> ".join(["start-up", *ends])
        if "judge" in trained:
            path += f"; the judge ready at {trained['judge'][0]:.0f} s"
    print(f"load average (1 min): {load0:.2f} at the start, {load1:.2f} at the end")
    print(f"first_run: {total:.0f} s from an empty cache ({path})")


if __name__ == "__main__":
    main()
