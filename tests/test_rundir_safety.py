"""Run directories nothing can clobber: names not paths, one run per directory, resume
that logs no step twice, and checkpoints that are verified before they are trusted."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from recipe_arena.cli import main
from recipe_arena.config import RunConfig
from recipe_arena.core.checkpoint import latest_training_state, save_training_state, verify
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.rundir import RunDir, RunLock, read_metrics

TINY = TinyModelSpec(
    hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=256
)


def test_name_that_is_a_path_touches_nothing(capsys, tmp_path: Path) -> None:
    """Issue example: ``name=/tmp/victim`` moved an unrelated folder aside and deleted
    its ``.prev`` with rmtree. Now it exits 2 and both folders keep their files."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "data.txt").write_text("mine")
    (tmp_path / "victim.prev").mkdir()
    (tmp_path / "victim.prev" / "old.txt").write_text("also mine")
    code = main(["run", "budget=smoke", f"out_dir={tmp_path / 'runs'}", f"name={victim}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "name" in err and "not a path" in err, err
    assert (victim / "data.txt").read_text() == "mine"
    assert (tmp_path / "victim.prev" / "old.txt").read_text() == "also mine"


HOLDER = """
import sys, time
from recipe_arena.rundir import RunLock
lock = RunLock(sys.argv[1], "shared")
lock.acquire()
print("held", flush=True)
time.sleep(120)
"""


def test_second_run_of_a_directory_exits_2_naming_the_holder(capsys, tmp_path: Path) -> None:
    """A process holds the lock of ``runs/shared`` (as a live run does for its whole
    life); a run with name=shared exits 2 naming that process's pid and leaves the
    directory alone. Once the holder is gone the lock can be taken again."""
    out = tmp_path / "runs"
    (out / "shared").mkdir(parents=True)
    (out / "shared" / "metrics.jsonl").write_text('{"stage": "rlvr", "step": 1}\n')
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code = main(["run", "budget=smoke", f"out_dir={out}", "name=shared"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and f"pid {holder.pid}" in err and len(err.splitlines()) == 1, err
        assert (out / "shared" / "metrics.jsonl").exists() and not (out / "shared.prev").exists()
    finally:
        holder.kill()
        holder.wait()
    with RunLock(out, "shared"):
        pass


def test_truncate_logs_cuts_only_the_resumed_stage_after_its_step(tmp_path: Path) -> None:
    """metrics.jsonl holds sft steps 1-3 and rlvr steps 0-4 plus a torn line;
    rollouts.jsonl rlvr steps 1-4. Cutting rlvr after step 2 keeps sft 1-3 and rlvr
    0-2 in metrics, rlvr 1-2 in rollouts."""
    run = RunDir(RunConfig(), tmp_path / "r")
    for s in (1, 2, 3):
        run.log("sft", s, {"loss/x": 1.0})
    for s in range(5):
        run.log("rlvr", s, {"loss/x": float(s)})
    with open(run.metrics_path, "a") as f:
        f.write('{"stage": "rlvr", "st')
    run.log_rollouts([{"stage": "rlvr", "step": s, "text": "t"} for s in range(1, 5)])
    run.truncate_logs("rlvr", 2)
    got = [(r["stage"], r["step"]) for r in read_metrics(run.path)]
    assert got == [("sft", 1), ("sft", 2), ("sft", 3), ("rlvr", 0), ("rlvr", 1), ("rlvr", 2)]
    rolls = [json.loads(x)["step"] for x in (run.path / "rollouts.jsonl").read_text().splitlines()]
    assert rolls == [1, 2]


def _corrupt_middle(path: Path, n: int) -> None:
    data = bytearray(path.read_bytes())
    mid = len(data) // 2 - n // 2
    data[mid : mid + n] = random.Random(0).randbytes(n)
    path.write_bytes(bytes(data))


def test_corrupt_latest_checkpoint_is_reported_and_the_previous_used(
    tmp_path: Path, capsys
) -> None:
    """Two checkpoints (steps 2 and 4) verify. Random bytes over the middle third of
    step 4's model file: latest_training_state reports step_000004 by path and returns
    step_000002; a deleted state.pt is caught the same way."""
    model, tok = build_micro(TINY, seed=0)
    root = tmp_path / "ckpt"
    for step in (2, 4):
        save_training_state(root, step, model, tok, {"learner": {}, "source": {}})
    assert verify(root / "step_000004") is None
    assert latest_training_state(root) == root / "step_000004"
    weights = next((root / "step_000004" / "model").glob("*.safetensors"))
    _corrupt_middle(weights, weights.stat().st_size // 3)
    assert latest_training_state(root) == root / "step_000002"
    err = capsys.readouterr().err
    assert str(root / "step_000004") in err and "checksum" in err
    (root / "step_000002" / "state.pt").unlink()
    assert latest_training_state(root) is None


CHILD_CFG = {
    "seed": 5,
    "engine": {"max_batch_size": 16},
    "rewards": {"ifeval_partial_credit": True, "workers": 1},
    "rl": {
        "steps": 4,
        "prompts_per_step": 2,
        "group_size": 4,
        "max_new_tokens": 8,
        "checkpoint_every": 2,
        "domain_weights": {"ifeval": 1.0},
        "lr": 0.01,
    },
}


def test_resume_past_a_corrupt_checkpoint_logs_each_step_once(tmp_path: Path, capsys) -> None:
    """Issue example: 200 KB of random bytes over the middle of a model file gave a
    resumed run NaN loss, reward 0 and exit 0. A 4-step RL run checkpoints at steps 2
    and 4; the middle third of step 4's model file is overwritten; resuming to 6 steps
    reports step 4's checkpoint as corrupt, continues from step 2 and re-runs 3 and 4.
    metrics.jsonl then holds rlvr steps 1-6 once each (truncated after step 2 as the
    ledger is) and every loss is finite."""
    from recipe_arena.data.micro import generate_split
    from recipe_arena.models.factory import save_checkpoint
    from recipe_arena.stages.rlvr import run_rlvr

    model, tok = build_micro(TINY, seed=0)
    init = save_checkpoint(model, tok, tmp_path / "init")
    rows = generate_split("ifeval", "train", 200, seed=0)
    out = tmp_path / "run"
    cfg = RunConfig.model_validate(CHILD_CFG)
    run_rlvr(cfg, RunDir(cfg, out), init, rows, [])
    weights = next((out / "checkpoints" / "rlvr" / "step_000004" / "model").glob("*.safetensors"))
    _corrupt_middle(weights, weights.stat().st_size // 3)
    capsys.readouterr()
    resumed = RunConfig.model_validate(
        {**CHILD_CFG, "resume": True, "rl": {**CHILD_CFG["rl"], "steps": 6}}
    )
    run_rlvr(resumed, RunDir(resumed, out), init, rows, [])
    err = capsys.readouterr().err
    assert "step_000004" in err and "corrupt" in err and "resumed from step_000002" in err, err
    rl = [r for r in read_metrics(out) if r["stage"] == "rlvr"]
    assert [r["step"] for r in rl] == [1, 2, 3, 4, 5, 6]
    losses = [v for r in rl for k, v in r.items() if k.startswith("loss/")]
    assert losses and all(v == v and abs(v) != float("inf") for v in losses)
    ledger = [json.loads(x)["step"] for x in (out / "rlvr_ledger.jsonl").read_text().splitlines()]
    assert ledger == [1, 2, 3, 4, 5, 6]


def test_a_saved_model_checkpoint_is_sealed_and_a_corrupt_one_refused(tmp_path: Path) -> None:
    """``save_checkpoint`` lists every file's SHA-256 (model weights, config, tokenizer);
    one byte changed in the weights makes ``load_checkpoint`` fail naming that file,
    where before it would have loaded the altered weights silently. A folder without a
    checksum list (a checkpoint written by another tool) still loads."""
    from recipe_arena.models.factory import load_checkpoint, save_checkpoint

    model, tok = build_micro(TINY, seed=0)
    path = save_checkpoint(model, tok, tmp_path / "ckpt")
    sums = json.loads((path / "checksums.json").read_text())
    assert {"model.safetensors", "config.json"} <= set(sums)
    load_checkpoint(path)
    weights = path / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    try:
        load_checkpoint(path)
    except ValueError as e:
        assert "model.safetensors" in str(e) and "corrupt" in str(e)
    else:
        raise AssertionError("a corrupt checkpoint loaded")
    (path / "checksums.json").unlink()
    load_checkpoint(path)
