"""How many hostile attempts each boundary met and contained, printed at the end of a
pytest run (``hostile attempts per boundary``), with pytest-xdist too.

A hostile test calls ``record(boundary, tried, contained)`` once its results are in and
before it asserts, so a failing run still shows what got through. Each process appends
its records to a file in a folder the controlling process makes at start-up (named in
``$RECIPE_ARENA_HOSTILE_TALLY``, inherited by xdist workers); the controller sums them
in its terminal summary and removes the folder."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ENV = "RECIPE_ARENA_HOSTILE_TALLY"


def record(boundary: str, tried: int, contained: int) -> None:
    """Add ``tried`` attempts at ``boundary``, ``contained`` of them contained."""
    folder = os.environ.get(ENV)
    if not folder or not os.path.isdir(folder):
        return
    line = json.dumps([boundary, tried, contained]) + "\n"
    with open(Path(folder) / f"{os.getpid()}.jsonl", "a") as f:
        f.write(line)


def record_all_scored_0(boundary: str, got: dict[Any, Any]) -> None:
    """``record`` the outcomes ``got`` (by attempt: a score, or a score and its reason)
    at ``boundary``, an attempt contained when it scored 0, then assert that every one
    was (the failure shows them all)."""
    held = [k for k, v in got.items() if (v[0] if isinstance(v, tuple) else v) == 0.0]
    record(boundary, len(got), len(held))
    assert len(held) == len(got), got


def pytest_configure(config: Any) -> None:
    if not hasattr(config, "workerinput"):  # the controlling process, not an xdist worker
        os.environ[ENV] = tempfile.mkdtemp(prefix="recipe_arena_hostile_")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    if hasattr(config, "workerinput"):
        return
    folder = os.environ.get(ENV)
    if not folder:
        return
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for f in Path(folder).glob("*.jsonl"):
        for line in f.read_text().splitlines():
            with contextlib.suppress(ValueError):
                boundary, tried, contained = json.loads(line)
                sums[boundary][0] += int(tried)
                sums[boundary][1] += int(contained)
    shutil.rmtree(folder, ignore_errors=True)
    if not sums:
        return
    terminalreporter.write_sep("-", "hostile attempts per boundary")
    width = max(len(b) for b in sums)
    for boundary in sorted(sums):
        tried, contained = sums[boundary]
        flag = "" if tried == contained else f"   <-- {tried - contained} got through"
        terminalreporter.write_line(
            f"{boundary:<{width}}  tried {tried:>4}  contained {contained:>4}{flag}"
        )
