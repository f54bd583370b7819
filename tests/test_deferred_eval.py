"""A first run does not wait for its micro judge to evaluate: the held-out evaluations of
base, SFT and DPO keep their chat answers while the judge trains in the background, and
the run scores them once the judge is ready (``eval.deferred``). What it logs is what a
run whose judge was cached logs, and a run killed before the judge was ready loses none
of it on resume.

Each run is ``recipe-arena run recipe=olmo3_think budget=smoke`` through the CLI, with
the evaluations on and a judge of ``STEPS`` steps, so that it trains in the background
(``rewards.micro_judge.BACKGROUND_MIN_STEPS``). Whether that judge is still training when
SFT evaluates depends on the machine's load, so the test holds the judge's cache lock
(``cache.build_lock``) until the evaluations have deferred: the lock another process
training the same judge holds, and the background training then waits for it exactly as
it waits for such a process. That stands in for a judge that trains slower than the
stages; its training and every score are real. Four smoke runs, hence ``slow``; the
other tests check the completion's arithmetic and which stages wait, without a model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recipe_arena.cache import build_lock
from recipe_arena.compose import load_config
from recipe_arena.eval.deferred import PENDING_FILE
from recipe_arena.rewards.micro_judge import judge_cache_entry
from recipe_arena.rundir import read_metrics

ROOT = Path(__file__).resolve().parents[1]
STEPS = 400
"""The judge's steps: at least ``BACKGROUND_MIN_STEPS``; 400 at the smoke judge's batch
of 4 grade the smoke policy's chat answers unevenly (some scores 1), so that equal chat
scores are not all zeros."""
OVERRIDES = (
    "recipe=olmo3_think",
    "budget=smoke",
    "base.evaluate=true",
    "sft.evaluate=true",
    "dpo.evaluate=true",
    f"rewards.micro_judge.steps={STEPS}",
    "eval.domain_prompts={chat: 20}",
)
"""The smoke run with every held-out evaluation on and all 20 held-out chat questions."""


def _start(cache: Path, out: Path, name: str, *extra: str) -> subprocess.Popen[bytes]:
    """The CLI run in a session of its own (a kill reaches its judge and pool too)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), RECIPE_ARENA_CACHE=str(cache))
    log = open(out / f"{name}.log", "wb")  # noqa: SIM115
    return subprocess.Popen(
        [sys.executable, "-m", "recipe_arena.cli", "run", *OVERRIDES, f"out_dir={out}"]
        + [f"name={name}", *extra],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen[bytes], out: Path, name: str) -> str:
    assert proc.wait(timeout=900) == 0, (out / f"{name}.log").read_text()[-4000:]
    return (out / f"{name}.log").read_text()


def _pending(run: Path) -> list[dict[str, Any]]:
    path = run / PENDING_FILE
    try:
        return json.loads(path.read_text()) if path.exists() else []
    except ValueError:  # read between the temporary file and the rename: read again
        return []


class _JudgeHeld:
    """Holds the judge's cache lock in a thread of this process until ``release`` or
    until ``until(run directory)`` holds; keeps the pending evaluations seen then."""

    def __init__(self, cache: Path, run: Path, until: Callable[[Path], bool]) -> None:
        cfg = load_config([*OVERRIDES, "out_dir=unused"])
        self.entry = judge_cache_entry(cfg.rewards.micro_judge, str(cache))
        self.entry.parent.mkdir(parents=True, exist_ok=True)
        self.run, self.until = run, until
        self.seen: list[dict[str, Any]] = []
        self.held, self.stop = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._hold, daemon=True)
        self.thread.start()
        assert self.held.wait(30)

    def _hold(self) -> None:
        with build_lock(self.entry):
            self.held.set()
            deadline = time.monotonic() + 600
            while not self.stop.is_set() and time.monotonic() < deadline:
                if self.until(self.run):
                    self.seen = _pending(self.run)
                    return
                time.sleep(0.1)

    def release(self) -> None:
        self.stop.set()
        self.thread.join(30)


def _deferred(*stages: str) -> Callable[[Path], bool]:
    return lambda run: [e["stage"] for e in _pending(run)] == list(stages)


def _evaluations(run: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The held-out evaluations (the ``eval/`` metrics of a record; an RL step's record
    holds its training metrics too, timings among them), by (stage, step)."""
    return {
        (r["stage"], r["step"]): {k: v for k, v in r.items() if k.startswith("eval/")}
        for r in read_metrics(run)
        if "eval/mean/pass@1" in r
    }


def _stage_records(run: Path, stage: str) -> list[dict[str, Any]]:
    """``stage``'s records in file order, without their time."""
    return [
        {k: v for k, v in r.items() if k != "time"}
        for r in read_metrics(run)
        if r["stage"] == stage
    ]


def _cached_scores(checkpoint: Path) -> list[dict[str, Any]]:
    """The per-question evaluations cached in a checkpoint (``eval.final``)."""
    out = []
    for path in sorted(checkpoint.glob("eval-*.json")):
        cached = json.loads(path.read_text())
        out.append({"metrics": cached["metrics"], "scores": cached["scores"]})
    return out


@pytest.mark.slow
def test_a_first_run_scores_chat_later_with_the_numbers_of_a_waiting_run(tmp_path: Path) -> None:
    """Run A, from an empty cache, with the judge held: base, SFT and DPO each defer
    their chat answers (``pending_scores.json`` lists the three, chat rows unscored,
    the others scored), and the prompt filter, which filters chat prompts with the
    judge, completes them. Run B, same cache (base model and judge cached now), waits
    for nothing. A's held-out evaluations equal B's in every number (the same SFT and
    DPO checkpoints, the same greedy answers, the same verdicts), with at least one chat
    score above 0 so the equality is not one of zeros; within each stage the records
    keep their order; the per-question scores (``eval_scores.jsonl``, and each
    checkpoint's cached evaluation) are equal. Run C, from another empty cache with the
    judge held, is killed (SIGKILL of its session, the judge with it) once SFT has
    finished with base's and SFT's chat answers deferred; its metrics then lack SFT's
    evaluation. Resumed, it scores them (training the judge, killed with the run, in the
    foreground) before DPO and logs base's, SFT's and DPO's evaluations as B did."""
    out = tmp_path / "runs"
    out.mkdir()
    cache_ab, cache_c = tmp_path / "cache-ab", tmp_path / "cache-c"

    held = _JudgeHeld(cache_ab, out / "a", _deferred("base", "sft", "dpo"))
    proc = _start(cache_ab, out, "a")
    try:
        log_a = _finish(proc, out, "a")
    finally:
        held.release()
    assert [e["stage"] for e in held.seen] == ["base", "sft", "dpo"], log_a[-3000:]
    for e in held.seen:
        domains = [r["domain"] for r in e["rows"]]
        assert [s is None for s in e["scores"]] == [d == "chat" for d in domains]
        assert all(
            (t is not None) == (d == "chat") for t, d in zip(e["texts"], domains, strict=True)
        )
    assert not (out / "a" / PENDING_FILE).exists()
    for stage in ("base", "sft", "dpo"):
        assert f"{stage}: chat answers of the held-out evaluation kept" in log_a

    log_b = _finish(_start(cache_ab, out, "b"), out, "b")
    assert "kept for the micro judge" not in log_b and "waiting for its training" not in log_b
    a, b = _evaluations(out / "a"), _evaluations(out / "b")
    assert {k[0] for k in b} == {"base", "sft", "dpo", "rlvr", "eval"}
    assert a == b
    assert any(r["eval/chat/pass@1"] > 0 for r in b.values()), b
    for stage in ("sft", "dpo"):
        assert _stage_records(out / "a", stage) == _stage_records(out / "b", stage)
        ckpt = f"checkpoints/{stage}"
        assert _cached_scores(out / "a" / ckpt) == _cached_scores(out / "b" / ckpt) != []
    scores_a = (out / "a" / "eval_scores.jsonl").read_text()
    assert scores_a == (out / "b" / "eval_scores.jsonl").read_text() != ""

    def sft_done(run: Path) -> bool:
        stages = run / "stages.json"
        return stages.exists() and "sft" in json.loads(stages.read_text()).get("done", {})

    held = _JudgeHeld(cache_c, out / "c", sft_done)
    proc = _start(cache_c, out, "c")
    try:
        deadline = time.monotonic() + 600
        while not sft_done(out / "c") and time.monotonic() < deadline:
            assert proc.poll() is None, (out / "c.log").read_text()[-3000:]
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        held.release()
    assert [e["stage"] for e in _pending(out / "c")] == ["base", "sft"]
    assert ("sft", 20) not in _evaluations(out / "c")
    log_c = _finish(_start(cache_c, out, "c", "resume=true"), out, "c")
    assert "micro judge: scoring the chat answers kept from base, sft" in log_c
    assert not (out / "c" / PENDING_FILE).exists()
    c = _evaluations(out / "c")
    for key in [k for k in b if k[0] in ("base", "sft", "dpo")]:
        assert c[key] == b[key], key


def test_completion_logs_the_summary_of_the_kept_scores_once(tmp_path: Path) -> None:
    """A deferred evaluation whose rows are all scored (no chat left) is completed
    without the judge: math rows scored 1 and 0 with answers of 10 and 20 tokens, a code
    row scored 0.5 with 30 and 50 tokens (two samples) give math pass@1 (1 + 0) / 2 =
    0.5 and tokens (10 + 20) / 2 = 15, code pass@1 0.5 and tokens (30 + 50) / 2 = 40, and
    a mean over the two domains of 0.5. It is logged under its own stage and step, in
    place of a line an interrupted completion had logged for it (the training record at
    that step stays), cached at its cache path, and the file of kept evaluations goes."""
    from recipe_arena.data.micro import generate_split
    from recipe_arena.eval.deferred import _write, complete_pending, has_pending
    from recipe_arena.eval.final import cached_evaluation
    from recipe_arena.rundir import RunDir

    cfg = load_config(["recipe=olmo3_think", "budget=smoke", f"out_dir={tmp_path}"])
    run = RunDir(cfg, tmp_path / "run")
    rows = generate_split("math", "heldout", 2, 0) + generate_split("code", "heldout", 1, 0)
    cache = tmp_path / "eval-x.json"
    entry = {
        "stage": "sft",
        "step": 20,
        "cache": str(cache),
        "rows": [r.model_dump(mode="json") for r in rows],
        "texts": [None, None, None],
        "lengths": [[10], [20], [30, 50]],
        "scores": [1.0, 0.0, 0.5],
    }
    run.log("sft", 20, {"loss/train": 1.5})
    run.log("sft", 20, {"eval/mean/pass@1": 9.0})  # an interrupted completion's line
    _write(run, [entry])
    assert has_pending(run)
    complete_pending(cfg, run)
    want = {
        "eval/code/pass@1": 0.5,
        "eval/code/tokens": 40.0,
        "eval/math/pass@1": 0.5,
        "eval/math/tokens": 15.0,
        "eval/mean/pass@1": 0.5,
    }
    records = [{k: v for k, v in r.items() if k != "time"} for r in read_metrics(run.path)]
    assert records == [
        {"stage": "sft", "step": 20, "loss/train": 1.5},
        {"stage": "sft", "step": 20, **want},
    ]
    cached = cached_evaluation(cache)
    assert cached is not None and cached.metrics == want and cached.scores == [1.0, 0.0, 0.5]
    assert not has_pending(run) and not (run.path / PENDING_FILE).exists()


@pytest.mark.parametrize(
    ("stage", "overrides", "needs"),
    [
        ("base", [], False),
        ("sft", [], False),
        ("dpo", [], False),  # validation on ifeval only
        ("dpo", ["dpo.validation_prompts={chat: 5}"], True),
        ("prompt_filter", [], True),  # chat weighted 0.1 among the filtered prompts
        ("prompt_filter", ["prompt_filter.enabled=false"], False),
        ("prompt_filter", ["rl.domain_weights={math: 1.0, chat: 0.0}"], False),
        ("rlvr", [], True),
        ("eval", [], True),
    ],
)
def test_which_stages_wait_for_kept_chat_scores(
    stage: str, overrides: list[str], needs: bool
) -> None:
    """A stage that scores chat with the judge outside a held-out evaluation needs the
    kept chat scores completed first: the prompt filter when it filters chat prompts
    (default: chat at weight 0.1 of 640 filtered prompts), DPO when its validation rows
    hold chat (default: ifeval only), RL and the final evaluation always; base and SFT
    never."""
    from recipe_arena.pipeline import _needs_judge

    cfg = load_config(["recipe=olmo3_think", "out_dir=unused", *overrides])
    assert _needs_judge(cfg, stage) is needs
