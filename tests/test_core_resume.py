"""Checkpoint and resume of the RLVR stage after a real kill -9.

A child process runs ``run_rlvr`` (real engine, real ifeval verifier with partial credit,
a random micro model); the test kills it with SIGKILL mid-run, resumes with
``resume=true``, and compares the ledger of trained prompt ids with an uninterrupted
run of the same seed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHILD = r"""
import sys
from pathlib import Path
from recipe_arena.config import RunConfig
from recipe_arena.data.micro import generate_split
from recipe_arena.models.factory import TinyModelSpec, build_micro, save_checkpoint
from recipe_arena.rundir import RunDir
from recipe_arena.stages.rlvr import run_rlvr

out, depth, resume = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
spec = TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=256)
init = out.parent / "init"
if not init.exists():
    m, t = build_micro(spec, seed=0)
    save_checkpoint(m, t, init)
cfg = RunConfig.model_validate({
    "seed": 5, "resume": resume,
    "engine": {"max_batch_size": 16},
    "rewards": {"ifeval_partial_credit": True, "workers": 1},
    "rl": {"steps": 4, "prompts_per_step": 2, "group_size": 4, "max_new_tokens": 8,
           "pipeline_depth": depth, "max_staleness": depth - 1, "checkpoint_every": 2,
           "domain_weights": {"ifeval": 1.0}, "lr": 0.01},
})
rows = generate_split("ifeval", "train", 400, seed=0)  # no second pass within the run
run_rlvr(cfg, RunDir(cfg, out), init, rows, [])
"""


def _start(out: Path, depth: int, resume: bool) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(out), str(depth), "1" if resume else "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _ledger(out: Path) -> list[dict[str, list[str] | int]]:
    path = out / "rlvr_ledger.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _finish(p: subprocess.Popen[bytes]) -> None:
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err.decode()[-3000:]


def _kill_after(out: Path, depth: int, lines: int) -> None:
    """Run until the ledger holds ``lines`` steps (past the step-2 checkpoint), then SIGKILL."""
    p = _start(out, depth, resume=False)
    deadline = time.monotonic() + 300
    while len(_ledger(out)) < lines:
        assert p.poll() is None, p.stderr.read().decode()[-3000:] if p.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert (out / "checkpoints" / "rlvr" / "latest").exists()


@pytest.mark.slow
def test_kill_and_resume_trains_the_same_prompts_as_an_uninterrupted_run(tmp_path: Path) -> None:
    """pipeline_depth 1: the learner's step consumes everything in flight, so a
    checkpoint holds the exact cursor; prompts, per-draw seeds and weights then follow
    the same course. Killed after step 3 (checkpoint at 2) and resumed, the run trains,
    step by step, the same prompt ids as an uninterrupted run: none lost, none twice."""
    full = tmp_path / "full"
    _finish(_start(full, 1, resume=False))
    killed = tmp_path / "killed"
    _kill_after(killed, 1, lines=3)
    _finish(_start(killed, 1, resume=True))
    a, b = _ledger(full), _ledger(killed)
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    assert [sorted(r["trained"]) for r in a] == [sorted(r["trained"]) for r in b]  # type: ignore[arg-type]


@pytest.mark.slow
def test_kill_mid_run_with_prompts_in_flight_loses_none_and_trains_none_twice(
    tmp_path: Path,
) -> None:
    """pipeline_depth 2: when the kill lands, prompts are in flight. The checkpoint lists
    them; after resume every one of them is consumed (trained or dropped as zero-variance)
    and no prompt id is trained twice across the four steps (400 rows: no second pass)."""
    out = tmp_path / "run"
    _kill_after(out, 2, lines=3)
    import torch

    state = torch.load(
        out / "checkpoints" / "rlvr" / "step_000002" / "state.pt", weights_only=False
    )
    pending = list(state["source"]["requeued"])
    assert pending, "with two batches in flight the checkpoint must list prompts in flight"
    _finish(_start(out, 2, resume=True))
    ledger = _ledger(out)
    assert [r["step"] for r in ledger] == [1, 2, 3, 4]
    trained = [pid for r in ledger for pid in r["trained"]]  # type: ignore[union-attr]
    assert len(trained) == len(set(trained)) > 0
    after = {
        pid for r in ledger[2:] for key in ("trained", "zero_variance", "stale") for pid in r[key]
    }  # type: ignore[union-attr]
    in_flight_at_end = set(
        json.loads(
            json.dumps(
                torch.load(
                    out / "checkpoints" / "rlvr" / "step_000004" / "state.pt", weights_only=False
                )["source"]["requeued"]
            )
        )
    )
    assert set(pending) <= after | in_flight_at_end
