"""Run directories nothing can clobber: names not paths, one run per directory, resume
that logs no step twice, and checkpoints that are verified before they are trusted."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

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


# ----------------------------------------------------------------------------- out_dir
# A run writes, moves and deletes only inside out_dir, and never another live run's
# directory. The tests below plant what an attacker (or a slip) could: paths as recipe
# names, symbolic links where the run directory, its .prev or its lock go, a live run
# named <name>.prev.


def _victim(tmp_path: Path) -> Path:
    """A folder outside out_dir with one file, to check afterwards."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "data.txt").write_text("mine")
    return victim


def _intact(victim: Path) -> bool:
    return (
        sorted(p.name for p in victim.iterdir()) == ["data.txt"]
        and (victim / "data.txt").read_text() == "mine"
    )


@pytest.mark.parametrize(
    "recipe", ["++recipe=/tmp/victim", "+recipe=../victim", "recipe=../../victim", "~recipe="]
)
def test_recipe_that_is_a_path_writes_nothing(capsys, tmp_path: Path, recipe: str) -> None:
    """Issue example: ``++recipe=/abs/path`` named the run directory
    ``/abs/path-default-s0`` and moved aside what was there. Every spelling of a path
    (or no recipe) now exits 2 in one line before out_dir is created."""
    victim = _victim(tmp_path)
    (tmp_path / "victim-smoke-s0").mkdir()
    out = tmp_path / "runs"
    code = main(
        ["run", "budget=smoke", f"out_dir={out}", recipe.replace("/tmp/victim", str(victim))]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "recipe" in err, err
    assert not out.exists() and _intact(victim)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim", "victim-smoke-s0"]


@pytest.mark.parametrize("name", ["/etc", "..", ".", "a/b", ".hidden", "", "x\0y"])
def test_run_dir_path_is_always_directly_inside_out_dir(tmp_path: Path, name: str) -> None:
    """``run_dir_path`` (the one place a run directory path is made) refuses any name
    that is not one plain component; ``RunLock`` builds on it, so its lock cannot land
    elsewhere either."""
    from recipe_arena.compose import ConfigError
    from recipe_arena.rundir import run_dir_path

    with pytest.raises(ConfigError):
        run_dir_path(tmp_path, name)
    with pytest.raises(ConfigError):
        RunLock(tmp_path, name)
    assert run_dir_path(tmp_path, "ok.prev") == tmp_path.resolve() / "ok.prev"


def test_out_dir_through_a_symlink_resolves_once(tmp_path: Path) -> None:
    """out_dir given through a symbolic link is resolved when the path is made: the run
    directory and its lock lie in the real folder, and re-pointing the link later does
    not move them."""
    from recipe_arena.rundir import run_dir_path

    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    path = run_dir_path(tmp_path / "link", "r")
    lock = RunLock(tmp_path / "link", "r")
    (tmp_path / "link").unlink()
    (tmp_path / "link").symlink_to(tmp_path / "victim", target_is_directory=True)
    assert path == real.resolve() / "r" and lock.path == real.resolve() / ".r.lock"


def _prepare(tmp_path: Path, *over: str) -> Path:
    """``pipeline._prepare_dir`` for name=r under out_dir=tmp_path/runs, with the run's
    lock held, as ``run_pipeline`` calls it."""
    from recipe_arena.compose import load_config
    from recipe_arena.pipeline import _prepare_dir

    cfg = load_config(["budget=smoke", f"out_dir={tmp_path / 'runs'}", "name=r", *over])
    with RunLock(cfg.out_dir, cfg.run_name):
        return _prepare_dir(cfg)


def test_prev_of_a_live_run_is_not_deleted(capsys, tmp_path: Path) -> None:
    """Issue example: a run named ``r.prev`` is live (it holds ``.r.prev.lock``) and a
    new run ``r`` starts over an earlier ``r``: moving ``r`` aside deleted the live
    run's folder. Now the new run takes the lock of ``r.prev`` first, finds it held and
    exits 2 naming it; both folders keep their files. Once that run ends, the move
    goes through: ``r`` becomes ``r.prev`` and the old ``r.prev`` is gone."""
    out = tmp_path / "runs"
    (out / "r").mkdir(parents=True)
    (out / "r" / "metrics.jsonl").write_text('{"stage": "sft", "step": 0}\n')
    (out / "r.prev").mkdir()
    (out / "r.prev" / "metrics.jsonl").write_text('{"stage": "rlvr", "step": 3}\n')
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.replace('"shared"', '"r.prev"'), str(out)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code = main(["run", "budget=smoke", f"out_dir={out}", "name=r"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1, err
        assert "r.prev" in err and "live run" in err, err
        assert (out / "r.prev" / "metrics.jsonl").read_text() == '{"stage": "rlvr", "step": 3}\n'
        assert (out / "r" / "metrics.jsonl").read_text() == '{"stage": "sft", "step": 0}\n'
    finally:
        holder.kill()
        holder.wait()
    assert _prepare(tmp_path) == out.resolve() / "r"
    assert (out / "r.prev" / "metrics.jsonl").read_text() == '{"stage": "sft", "step": 0}\n'
    assert not (out / "r").exists()


def test_symlinked_run_dir_is_moved_as_a_link_never_followed(tmp_path: Path) -> None:
    """``runs/r`` is a symbolic link to a folder outside out_dir and ``runs/r.prev`` a
    link to another: a fresh run removes the old link, renames the ``r`` link to
    ``r.prev`` and starts in a new real folder; both targets keep their files."""
    victim = _victim(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "data.txt").write_text("mine")
    out = tmp_path / "runs"
    out.mkdir()
    (out / "r").symlink_to(victim)
    (out / "r.prev").symlink_to(other)
    path = _prepare(tmp_path)
    assert not path.exists() and not path.is_symlink()
    assert (out / "r.prev").is_symlink() and os.readlink(out / "r.prev") == str(victim)
    assert _intact(victim) and (other / "data.txt").read_text() == "mine"


@pytest.mark.parametrize("where", ["run dir", "metrics.jsonl", "checkpoints", "nested file"])
def test_resume_through_a_symlink_is_refused(capsys, tmp_path: Path, where: str) -> None:
    """resume=true where the run directory, or anything in it, is a symbolic link to a
    folder outside out_dir: the run would append and write through it. It exits 2 in one
    line naming the link; the outside folder keeps exactly its file."""
    victim = _victim(tmp_path)
    out = tmp_path / "runs"
    run = out / "r"
    if where == "run dir":
        out.mkdir()
        run.symlink_to(victim)
    else:
        (run / "checkpoints" / "sft").mkdir(parents=True)
        target = {
            "metrics.jsonl": (run / "metrics.jsonl", victim / "data.txt"),
            "checkpoints": (run / "checkpoints" / "rlvr", victim),
            "nested file": (run / "checkpoints" / "sft" / "state.pt", victim / "data.txt"),
        }[where]
        target[0].symlink_to(target[1])
    code = main(
        [
            "run",
            "budget=smoke",
            f"out_dir={out}",
            "name=r",
            "resume=true",
            "rewards.allow_weak_sandbox=true",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "symbolic link" in err, err
    assert _intact(victim)


def test_lock_file_that_is_a_symlink_is_not_followed(capsys, tmp_path: Path) -> None:
    """``runs/.r.lock`` planted as a link to a file outside: taking the lock would
    truncate and overwrite that file. The open refuses links (O_NOFOLLOW): exit 2 in one
    line, the file unchanged."""
    victim = _victim(tmp_path)
    out = tmp_path / "runs"
    out.mkdir()
    (out / ".r.lock").symlink_to(victim / "data.txt")
    code = main(
        ["run", "budget=smoke", f"out_dir={out}", "name=r", "rewards.allow_weak_sandbox=true"]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and ".r.lock" in err, err
    assert _intact(victim) and not (out / "r").exists()


# ----------------------------------------------------------------------------- torn lines
TORN = '{"stage": "sft", "st'
"""What a writer killed mid-line leaves: a prefix of a record, no newline."""


@pytest.mark.parametrize(
    "torn",
    [TORN, '{"stage": "rlvr", "step": 1, "loss/x": 0.', "\xff\xfe garbage", "5", "[1, 2]"],
)
def test_torn_line_in_the_middle_loses_no_valid_line(tmp_path: Path, torn: str) -> None:
    """Issue example: metrics.jsonl = base 40, a torn line, sft 0 and 10 (a resumed run
    appended after the tear). RL's fresh start (``truncate_logs('rlvr', -1)``) read up to
    the tear and rewrote the file without the sft lines. Now a torn line, or a complete
    line that is not a record, is skipped on read and dropped on rewrite; base 40 and
    sft 0, 10 stay, in order."""
    run = RunDir(RunConfig(), tmp_path / "r")
    run.log("base", 40, {"cached": 1.0})
    with open(run.metrics_path, "a", encoding="utf-8") as f:
        f.write(torn + "\n")
    run.log("sft", 0, {"loss/train": 3.0})
    run.log("sft", 10, {"loss/train": 2.0})
    run.log("rlvr", 1, {"loss/x": 1.0})
    assert [(r["stage"], r["step"]) for r in read_metrics(run.path)] == [
        ("base", 40),
        ("sft", 0),
        ("sft", 10),
        ("rlvr", 1),
    ]
    run.truncate_logs("rlvr", -1)
    lines = run.metrics_path.read_text().splitlines()
    assert [(json.loads(x)["stage"], json.loads(x)["step"]) for x in lines] == [
        ("base", 40),
        ("sft", 0),
        ("sft", 10),
    ]


@pytest.mark.parametrize("log", ["metrics.jsonl", "rollouts.jsonl", "eval_scores.jsonl"])
def test_torn_last_line_is_repaired_when_the_run_dir_opens(tmp_path: Path, log: str) -> None:
    """A killed run left a torn last line (no newline). Opening the run directory again
    (as a resumed run does) drops it, so the next append starts a line of its own; before,
    the next record ran on from the tear and both were lost. Complete lines stay
    byte-for-byte."""
    path = tmp_path / "r" / log
    path.parent.mkdir()
    good = '{"stage": "sft", "step": 0, "x": 1}\n{"stage": "sft", "step": 10, "x": 2}\n'
    path.write_text(good + TORN)
    run = RunDir(RunConfig(), tmp_path / "r")
    assert path.read_text() == good
    if log == "metrics.jsonl":
        run.log("sft", 11, {"x": 3.0})
        assert [r["step"] for r in read_metrics(run.path)] == [0, 10, 11]


def test_resume_with_a_link_inside_the_run_dir_is_allowed(tmp_path: Path) -> None:
    """A link that stays inside the run directory (W&B writes ``wandb/latest-run``)
    does not stop a resume; one through ``..`` back out of it does."""
    from recipe_arena.compose import ConfigError

    run = tmp_path / "runs" / "r"
    (run / "wandb" / "run-1").mkdir(parents=True)
    (run / "wandb" / "latest-run").symlink_to("run-1")
    assert _prepare(tmp_path, "resume=true") == run.resolve()
    (run / "wandb" / "escape").symlink_to("../../..")
    with pytest.raises(ConfigError, match="escape"):
        _prepare(tmp_path, "resume=true")


@pytest.mark.parametrize("name", ["../../victim", "/tmp/victim", ".hidden"])
def test_comparison_name_that_is_a_path_writes_nothing(capsys, tmp_path: Path, name: str) -> None:
    """``recipe-arena compare name=...`` names the comparison folder under out_dir, where
    its plan and runs go: a path exits 2 in one line before anything is written."""
    victim = _victim(tmp_path)
    out = tmp_path / "cmp"
    name = name.replace("/tmp/victim", str(victim))
    code = main(["compare", f"name={name}", "axis=staleness", "arms=[tis,none]", f"out_dir={out}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "not a path" in err, err
    assert _intact(victim) and not out.exists()
