"""Base training: schedule, packing, the atomic cache, loss going down, and (slow) the
held-out math accuracy of the default base model."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import pytest
import torch

from recipe_arena.config import RunConfig
from recipe_arena.core.schedule import lr_at
from recipe_arena.models.tokenizer import build_char_tokenizer
from recipe_arena.rundir import RunDir, read_metrics
from recipe_arena.stages.base import (
    base_cache_entry,
    base_corpus,
    corpus_sizes,
    packed_batches,
    train_base,
)
from recipe_arena.stages.common import STALE_TMP_S, build_cached


def _cfg(tmp_path: Path, **base: object) -> RunConfig:
    small = {
        "steps": 40,
        "batch_size": 8,
        "seq_len": 64,
        "lr": 3e-3,
        "warmup_steps": 4,
        "evaluate": False,
    }
    small["corpus"] = {"math": 300, "code": 30, "ifeval": 30, "chat": 30}
    return RunConfig.model_validate(
        {
            "base": {**small, **base},
            "world": {"cache_dir": str(tmp_path / "cache")},
            "out_dir": str(tmp_path),
        }
    )


def test_lr_schedule_by_hand() -> None:
    """peak 1.0, warm-up 4, total 14: step 0 -> 1/4, step 3 -> 1; then cosine to 0.1:
    step 9 is halfway through 10 decay steps -> 0.1 + 0.9 * 0.5 * (1 + cos(pi/2)) = 0.55;
    step 14 -> 0.1."""
    assert lr_at(0, 14, 4, 1.0) == 0.25
    assert lr_at(3, 14, 4, 1.0) == 1.0
    assert lr_at(9, 14, 4, 1.0) == pytest.approx(0.55)
    assert lr_at(14, 14, 4, 1.0) == pytest.approx(0.1)
    assert lr_at(4, 14, 4, 1.0) == pytest.approx(1.0)
    assert math.isclose(lr_at(0, 10, 0, 2.0), 2.0)


def test_packed_windows_are_slices_of_the_stream() -> None:
    stream_N = torch.arange(100)
    input_ids_BT, labels_BT = next(packed_batches(stream_N, batch_size=3, seq_len=10, seed=0))
    assert input_ids_BT.shape == (3, 10)
    assert torch.equal(input_ids_BT, labels_BT)
    for row in input_ids_BT:  # consecutive integers: a contiguous window
        assert torch.equal(row, torch.arange(int(row[0]), int(row[0]) + 10))
    with pytest.raises(ValueError, match="fewer than seq_len"):
        next(packed_batches(torch.arange(5), 1, 10, 0))


def test_corpus_is_chat_rendered_and_never_holds_heldout(tmp_path: Path) -> None:
    from recipe_arena.data.micro import generate_split

    tok = build_char_tokenizer()
    cfg = _cfg(tmp_path)
    text = tok.decode(base_corpus(cfg, tok).tolist(), skip_special_tokens=False)
    # 40 steps * 8 * 64 tokens / 100 per doc = 204.8 docs wanted of 390: scale 0.5251;
    # math ceil(300 * 0.5251) = 158, the others max(20, ceil(15.75)) = 20 -> 218 docs.
    assert corpus_sizes(cfg) == {"math": 158, "code": 20, "ifeval": 20, "chat": 20}
    assert text.count("<|im_start|>assistant\n<think>") == 218
    heldout = generate_split("math", "heldout", 200, cfg.world.data_seed)
    assert not any(f"\n{r.prompt_text}<|im_end|>" in text for r in heldout)


def test_cache_build_is_atomic(tmp_path: Path) -> None:
    """A build that crashes leaves neither the entry nor a temporary directory; a good
    build appears whole; an existing entry is returned without building again."""
    entry = tmp_path / "base" / "k"

    def crash(tmp: Path) -> None:
        (tmp / "half").write_text("x")
        raise RuntimeError("crash mid-build")

    with pytest.raises(RuntimeError, match="crash mid-build"):
        build_cached(entry, crash)
    # only the lock file stays (an OS lock on it is what matters, not its existence)
    assert [p.name for p in (tmp_path / "base").iterdir()] == ["k.lock"]
    build_cached(entry, lambda tmp: (tmp / "done").write_text("ok"))
    assert (entry / "done").read_text() == "ok"
    build_cached(entry, crash)  # not called: the entry exists


def test_a_second_process_waits_for_a_build_instead_of_repeating_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """While one process builds an entry, another asking for the same entry waits (saying
    so on stderr) and returns the first one's result: its own build never runs."""
    import multiprocessing

    from tests.cache_build_child import build_slowly

    entry = tmp_path / "k"
    ctx = multiprocessing.get_context("spawn")
    started = ctx.Event()
    child = ctx.Process(target=build_slowly, args=(str(entry), started))
    child.start()
    try:
        assert started.wait(60)
        calls: list[Path] = []
        assert build_cached(entry, calls.append) == entry
    finally:
        child.join(60)
    assert child.exitcode == 0 and calls == []
    assert (entry / "by").read_text() == "child"
    assert f"waiting for another process building {entry}" in capfd.readouterr().err


def test_abandoned_temporary_builds_are_removed(tmp_path: Path) -> None:
    """A temporary directory older than STALE_TMP_S (a killed build) is deleted before the
    next build of the same entry; a fresh one (maybe a live build) is left alone."""
    entry = tmp_path / "k"
    old, fresh = tmp_path / "k.abc.tmp", tmp_path / "k.def.tmp"
    old.mkdir()
    fresh.mkdir()
    past = time.time() - STALE_TMP_S - 60
    os.utime(old, (past, past))
    build_cached(entry, lambda tmp: (tmp / "done").write_text("ok"))
    assert not old.exists() and fresh.exists() and (entry / "done").exists()


def test_cache_key_follows_what_base_depends_on(tmp_path: Path) -> None:
    a = base_cache_entry(_cfg(tmp_path))
    assert a == base_cache_entry(_cfg(tmp_path))
    assert a != base_cache_entry(_cfg(tmp_path, steps=41))
    bigger = _cfg(tmp_path).model_copy(
        update={"world": _cfg(tmp_path).world.model_copy(update={"data_seed": 9})}
    )
    assert a != base_cache_entry(bigger)
    other_run_seed = _cfg(tmp_path).model_copy(update={"seed": 5})
    assert a == base_cache_entry(other_run_seed)  # run seeds share one base model


def test_train_base_lowers_loss_and_is_reused(tmp_path: Path) -> None:
    """40 steps from random init: the first logged loss is near ln(104) = 4.64 (uniform
    over the vocabulary) and the last is at least 1 nat lower. A second call with the
    same config returns the cached entry and logs cached = 1."""
    cfg = _cfg(tmp_path)
    run = RunDir(cfg, tmp_path / "run")
    path = train_base(cfg, run)
    assert (path / "model.safetensors").exists() and path == base_cache_entry(cfg)
    losses = [
        m["loss/train"]
        for m in read_metrics(run.path)
        if m["stage"] == "base" and "loss/train" in m
    ]
    assert abs(losses[0] - math.log(104)) < 0.3
    assert losses[-1] < losses[0] - 1.0
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    run2 = RunDir(cfg, tmp_path / "run2")
    assert train_base(cfg, run2) == path
    assert (path / "model.safetensors").stat().st_mtime_ns == stamp
    assert [m["cached"] for m in read_metrics(run2.path) if "cached" in m] == [1.0]


def test_given_checkpoint_skips_training(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    cfg = cfg.model_copy(
        update={"world": cfg.world.model_copy(update={"checkpoint": str(tmp_path / "ck")})}
    )
    assert train_base(cfg, None) == tmp_path / "ck"


@pytest.mark.slow
def test_default_base_model_knows_the_steps(tmp_path: Path) -> None:
    """The default base config, greedy, on 100 held-out math prompts with the SFT/eval
    prompt format: the base model always works step by step (its corpus has only the
    careful procedure) and knows the single-step facts, so pass@1 is at least 0.8 (0.95
    measured on 300 prompts); the quick form and its errors first appear in SFT."""
    from recipe_arena.data.micro import generate_split
    from recipe_arena.eval.final import evaluate_checkpoint

    cfg = RunConfig.model_validate({"world": {"cache_dir": str(tmp_path / "cache")}})
    path = train_base(cfg, None)
    rows = generate_split("math", "heldout", 100, cfg.world.data_seed)
    acc = evaluate_checkpoint(cfg, path, rows).metrics["eval/math/pass@1"]
    assert acc >= 0.8, acc


def test_micro_judge_trains_in_the_background(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``train_in_background`` starts the judge's training in a child process when the
    judge is not cached and has at least ``BACKGROUND_MIN_STEPS`` steps, and says so while
    it trains (``training_in_background``, which held-out evaluations read to keep their
    chat answers for later, ``eval.deferred``). It runs in the idle time (SCHED_IDLE on
    Linux) until ``hurry_background`` gives it a normal share. Stopped (the run failed), the child is
    killed and nothing is cached; ``micro_judge_checkpoint`` waits for a running one and
    returns its checkpoint, which is then cached, so nothing starts again.

    The threshold is lowered to 20 steps here (the smoke judge's size): the rule is the
    same at any threshold, and a judge of the real one's 200 steps took most of this
    test's time."""
    from recipe_arena.rewards import micro_judge as mj

    monkeypatch.setenv("RECIPE_ARENA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(mj, "BACKGROUND_MIN_STEPS", 20)

    def cfg(steps: int) -> RunConfig:
        judge = {"steps": steps, "batch_size": 2, "examples": 8, "warmup_steps": 1}
        return RunConfig.model_validate({"rewards": {"micro_judge": judge}, "out_dir": "x"})

    endless = cfg(10**6)
    assert not mj.training_in_background(endless.rewards.micro_judge)
    assert mj.train_in_background(endless.rewards.micro_judge)
    assert not mj.train_in_background(endless.rewards.micro_judge)  # already started
    assert mj.training_in_background(endless.rewards.micro_judge)
    (proc,) = mj._BACKGROUND.values()
    if hasattr(os, "SCHED_IDLE"):  # Linux: idle time until hurried, then a normal share
        assert os.sched_getscheduler(proc.pid) == os.SCHED_IDLE
        mj.hurry_background()
        assert os.sched_getscheduler(proc.pid) == os.SCHED_OTHER
    mj.finish_background(False)
    assert not mj.training_in_background(endless.rewards.micro_judge)
    assert not mj.judge_cache_entry(endless.rewards.micro_judge).exists()

    small = cfg(mj.BACKGROUND_MIN_STEPS - 1).rewards.micro_judge
    assert not mj.train_in_background(small)

    judge = cfg(mj.BACKGROUND_MIN_STEPS).rewards.micro_judge
    assert mj.train_in_background(judge)
    entry = mj.micro_judge_checkpoint(judge)
    assert entry == mj.judge_cache_entry(judge) and (entry / "model.safetensors").exists()
    assert json.loads((entry / "judge_meta.json").read_text())["steps"] == mj.BACKGROUND_MIN_STEPS
    assert not mj.training_in_background(judge)
    assert not mj.train_in_background(judge)  # cached


def test_a_run_trains_the_judge_in_the_background_only_beside_a_base_model(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The pipeline starts the background judge training only when the run trains the
    micro base model (a base stage whose model is not cached) and scores chat with the
    micro judge: not with another judge, not from a given checkpoint, not without a base
    stage or once it is done (a resumed run), not when the base model is cached."""
    from recipe_arena.pipeline import PipelineState, _trains_base_model

    monkeypatch.setenv("RECIPE_ARENA_CACHE", str(tmp_path / "cache"))
    cfg = _cfg(tmp_path)
    fresh = PipelineState()
    assert _trains_base_model(cfg, fresh)
    other_judge = cfg.model_copy(
        update={"rewards": cfg.rewards.model_copy(update={"judge_model": "smol"})}
    )
    assert not _trains_base_model(other_judge, fresh)
    given = cfg.model_copy(
        update={"world": cfg.world.model_copy(update={"checkpoint": str(tmp_path)})}
    )
    assert not _trains_base_model(given, fresh)
    no_base = cfg.model_copy(
        update={"pipeline": cfg.pipeline.model_copy(update={"stages": ["sft"]})}
    )
    assert not _trains_base_model(no_base, fresh)
    assert not _trains_base_model(cfg, PipelineState(done={"base": 1.0}))
    train_base(cfg, None)
    assert not _trains_base_model(cfg, fresh)
