"""kill -9 of a real run in the middle of a stage, then ``resume=true``: every stage's
steps are logged once, none lost, whatever stage was interrupted and whatever the kill
left in metrics.jsonl. Each test starts the CLI twice at budget=smoke (about a minute
or two on 2 busy cores), hence ``slow``.

Before: RL cut its logs back on resume, but SFT and DPO start again from their first
step and logged their early steps a second time beside the interrupted run's."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recipe_arena.rundir import read_metrics

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _start(out: Path, *over: str) -> subprocess.Popen[bytes]:
    """``recipe-arena run budget=smoke name=k`` in a session of its own (the kill
    reaches its verifier pool and engine processes too, as a kill of the whole job)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    log = open(out.parent / f"{out.name}-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "recipe_arena.cli",
            "run",
            "budget=smoke",
            f"out_dir={out}",
            "name=k",
            *over,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )


def _records(out: Path) -> list[dict[str, Any]]:
    path = out / "k" / "metrics.jsonl"
    return read_metrics(path) if path.exists() else []


def _kill_when(
    proc: subprocess.Popen[bytes], out: Path, ready: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """SIGKILL the run's process group as soon as its metrics satisfy ``ready``; the
    records at that moment."""
    deadline = time.monotonic() + 500
    while time.monotonic() < deadline:
        records = _records(out)
        if ready(records):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return records
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (rc {proc.returncode}) before the kill point")
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("kill point not reached in 500 s")


def _steps(records: list[dict[str, Any]], stage: str) -> list[int]:
    return [int(r["step"]) for r in records if r["stage"] == stage]


def test_sft_killed_mid_stage_resumes_logging_each_step_once(tmp_path: Path) -> None:
    """[base, sft] with 30 SFT steps; SFT logs steps 0, 10, 20 and 29 (every 10th and
    the last: ``train_steps``). The run is killed once step 0 is logged, mid-stage.
    A torn line (what a kill mid-write leaves) is then planted after base's line, and
    the run resumed: base is done (logged once, at its 40 steps), SFT starts again and
    its steps are 0, 10, 20, 29 once each, the interrupted run's step 0 dropped; the
    torn line is gone and nothing else is."""
    out = tmp_path / "runs"
    over = ["pipeline.stages=[base,sft]", "sft.steps=30"]
    killed = _kill_when(_start(out, *over), out, lambda rs: 0 in _steps(rs, "sft"))
    assert _steps(killed, "sft")[-1] < 29, "SFT finished before the kill"
    metrics = out / "k" / "metrics.jsonl"
    lines = metrics.read_text().splitlines(keepends=True)
    metrics.write_text(lines[0] + '{"stage": "sft", "step": 3, "loss/tr\n' + "".join(lines[1:]))
    resumed = _start(out, *over, "resume=true")
    assert resumed.wait(timeout=600) == 0
    records = _records(out)
    assert _steps(records, "base") == [40]
    assert _steps(records, "sft") == [0, 10, 20, 29]
    assert all(line.endswith("}\n") for line in metrics.read_text().splitlines(keepends=True))


def test_dpo_killed_mid_stage_resumes_logging_each_step_once(tmp_path: Path) -> None:
    """[base, sft, dpo] at budget=smoke: SFT 5 steps (logged at 0 and 4); DPO logs its
    pair counts and the start's validation at step 0, then steps 1..ceil(n/4) for its
    n pairs (batch 4, one epoch), then the chosen size. The run is killed once DPO's
    first record is in; resumed, SFT (done) keeps its two records and DPO's records
    are exactly one pass: one pair-count record, one start validation, steps
    1..ceil(n/4) once each, one chosen record."""
    out = tmp_path / "runs"
    over = ["pipeline.stages=[base,sft,dpo]"]
    killed = _kill_when(_start(out, *over), out, lambda rs: bool(_steps(rs, "dpo")))
    assert not any("dpo/chosen_size" in r for r in killed), "DPO finished before the kill"
    resumed = _start(out, *over, "resume=true")
    assert resumed.wait(timeout=600) == 0
    records = _records(out)
    assert _steps(records, "sft") == [0, 4]
    dpo = [r for r in records if r["stage"] == "dpo"]
    pair_counts = [r for r in dpo if any(k.startswith("dpo/pairs/") for k in r)]
    start = [r for r in dpo if r.get("dpo/size") == 0.0]
    trained = [r for r in dpo if r.get("dpo/size", 0.0) > 0]
    chosen = [r for r in dpo if "dpo/chosen_size" in r]
    assert len(pair_counts) == 1 and len(start) == 1 and len(chosen) == 1, dpo
    n = int(trained[0]["dpo/size"])
    assert [r["step"] for r in trained] == list(range(1, math.ceil(n / 4) + 1))
    assert len(dpo) == 3 + math.ceil(n / 4)
