"""The deterministic schedule (``rl.schedule=deterministic``, ``core.lockstep``).

Real parts throughout: a randomly initialised micro model, the torch engine stepped on
the learner's thread, the real ifeval verifier with partial credit (a random character
model sometimes avoids commas and sometimes not, so groups carry reward variance and the
learner's weights move at every step). The load is real too: busy-loop processes, one
per core, while one of two runs trains.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch

from recipe_arena.advantages import CenteredParams
from recipe_arena.config import EngineConfig, RLConfig, RunConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core import lockstep
from recipe_arena.core.learner import Learner
from recipe_arena.core.lockstep import VersionPlan
from recipe_arena.core.loop import LoopSettings, StepRecord
from recipe_arena.core.prompts import PromptSource
from recipe_arena.data.micro import generate_split
from recipe_arena.data.schema import PromptRow
from recipe_arena.length_control.discard_early_short import DiscardEarlyShortParams
from recipe_arena.models.factory import TinyModelSpec, build_micro, load_checkpoint, save_checkpoint
from recipe_arena.wiring import (
    ActorSettings,
    LearnerSettings,
    advantage_hook,
    make_actor,
    make_learner,
)

SPEC = TinyModelSpec(
    hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=256
)
REWARDS = RewardsConfig(ifeval_partial_credit=True, workers=1)
ACTOR = ActorSettings(group_size=4, temperature=1.0, max_new_tokens=12, max_groups_in_engine=4)


@pytest.fixture(scope="module")
def init_ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model, tok = build_micro(SPEC, seed=0)
    return save_checkpoint(model, tok, tmp_path_factory.mktemp("init") / "model")


@pytest.fixture(scope="module")
def rows() -> list[PromptRow]:
    return generate_split("ifeval", "train", 40, seed=0)


@contextmanager
def busy_cores() -> Iterator[None]:
    """One busy-loop process per core for the duration of the block."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 1)
    ]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _rl(steps: int, lag: int, update_at: int | None, **rl: Any) -> RLConfig:
    return RLConfig(
        steps=steps,
        prompts_per_step=2,
        schedule="deterministic",
        lag=lag,
        update_at_decode_step=update_at,
        lr=1e-2,
        # batches fill: none cut short by the draw cap
        **{"max_staleness": max(lag, 1), "max_resample_factor": 64, **rl},
    )


def _run(
    ckpt: Path,
    rows: list[PromptRow],
    steps: int,
    lag: int,
    update_at: int | None,
    resume: dict[str, Any] | None = None,
    actor_settings: ActorSettings = ACTOR,
    **rl: Any,
) -> tuple[list[StepRecord], Learner, PromptSource]:
    """``lockstep.train`` as ``stages.rlvr`` calls it: N = 2 prompts of G = 4.
    ``resume``: the learner, source and schedule states of a checkpoint of ``ckpt``."""
    cfg = _rl(steps, lag, update_at, **rl)
    model, tok = load_checkpoint(ckpt)
    learner = make_learner(model, LearnerSettings(rl=cfg))
    source = PromptSource(rows, {"ifeval": 1.0}, seed=3)
    start = 0
    if resume is not None:
        learner.load_state_dict(resume["learner"])
        source.load_state_dict(resume["source"])
        start = learner.version
    actor = make_actor(
        0,
        ckpt,
        None,
        "torch",
        EngineConfig(max_batch_size=16),
        REWARDS,
        actor_settings,
        version=start,
    )
    try:
        settings = LoopSettings(
            rl=cfg, advantages=advantage_hook(CenteredParams()), seed=3, pad_id=0
        )
        state = None if resume is None else resume["schedule"]
        records = lockstep.train(learner, actor, source, settings, start, state=state)
    finally:
        actor.close()
    return records, learner, source


def test_version_plan_by_hand() -> None:
    """k = 2, u = 5, starting at version v_0 = 0. At learner version V the batch starts
    with max(0, V - 2) and switches to V - 1 when 0 < V - 1 <= V: V = 0, 1 have no
    switch (targets -1 and 0 are not after v_0), V = 2 switches to 1, V = 5 starts at 3
    and switches to 4. k = 0: start V, never a switch (target V + 1 is not trained while
    the batch is sampled). Resumed at v_0 = 10 with k = 3: start 10 until V - 3 > 10."""
    plan = VersionPlan(lag=2, update_at=5)
    assert [plan.start_version(v) for v in range(6)] == [0, 0, 0, 1, 2, 3]
    assert [plan.switch_version(v) for v in range(6)] == [None, None, 1, 2, 3, 4]
    assert VersionPlan(lag=2, update_at=None).switch_version(5) is None
    sync = VersionPlan(lag=0, update_at=3)
    assert [sync.start_version(v) for v in range(3)] == [0, 1, 2]
    assert [sync.switch_version(v) for v in range(3)] == [None, None, None]
    resumed = VersionPlan(lag=3, update_at=None, first=10)
    assert [resumed.start_version(v) for v in (10, 12, 13, 15)] == [10, 10, 10, 12]


def test_lag_k_gives_staleness_exactly_k(init_ckpt: Path, rows: list[PromptRow]) -> None:
    """lag k = 3, no in-flight update, 6 steps. Step s trains at version s - 1 on a batch
    sampled entirely by version max(0, s - 4), so every trained token lags
    min(s - 1, 3): 0, 1, 2 while the pipeline fills, then exactly 3, and the logged lag
    histogram has one bin holding all tokens. Also every trained token's version is the
    batch's start version."""
    records, learner, _ = _run(init_ckpt, rows, steps=6, lag=3, update_at=None)
    assert learner.version == 6
    for rec in records:
        lag = min(rec.step - 1, 3)
        m = rec.metrics
        assert (m["staleness/lag_mean"], m["staleness/lag_max"]) == (lag, lag), rec.step
        assert m[f"staleness/lag_hist/{lag}"] == 1.0
        assert m["schedule/start_version"] == max(0, rec.step - 4)
        assert m["schedule/switch_at"] == -1
        assert len(rec.trained) == 2
        versions = {v for g in rec.groups for r in g.rollouts for v in r.token_versions}
        assert versions == {max(0, rec.step - 4)}


def test_in_flight_update_lands_at_the_stated_decode_step(
    init_ckpt: Path, rows: list[PromptRow]
) -> None:
    """lag 2, update after u = 4 engine iterations, zero-gradient filter off (so the
    first N = 2 groups drawn are the batch: all 8 samples start together at iteration
    0, where the prefill samples their first token). From step 3 on (V = s - 1 >= 2) the
    batch starts with version v = s - 3 and version v + 1 lands before iteration 4: a
    response of L tokens carries versions [v] * min(L, 4) + [v + 1] * max(0, L - 4).
    Steps 1 and 2 have no switch (the next version would be v_0 = 0 itself), so each
    response is version 0 throughout. Lag of a trained token: (s - 1) - version, i.e. 2
    for the first 4 tokens and 1 after."""
    u = 4
    records, _, _ = _run(init_ckpt, rows, steps=4, lag=2, update_at=u, zero_gradient_filter=False)
    switched = 0
    for rec in records:
        s = rec.step
        assert rec.metrics["sampling/groups_received"] == 2
        v = max(0, s - 3)
        for g in rec.groups:
            for r in g.rollouts:
                L = len(r.completion_tokens)
                if s >= 3:
                    expected = (v,) * min(L, u) + (v + 1,) * max(0, L - u)
                    switched += u < L
                else:
                    expected = (0,) * L
                assert r.token_versions == expected, (s, r.token_versions)
        assert rec.metrics["schedule/switch_at"] == (u if s >= 3 else -1)
    assert switched > 0  # some response ran past the update: versions change inside it


def _without_wall_time(metrics: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in metrics.items() if not k.startswith(("throughput/", "time/"))}


def test_same_seed_same_run_under_load(init_ckpt: Path, rows: list[PromptRow]) -> None:
    """Two runs of one configuration and seed, the second with every core kept busy by
    other processes: every logged metric but the wall-time ones (loss, gradient norm,
    engine/trainer KL, lag histogram, rewards, lengths) and the final weights are
    bitwise equal. Lag 1 with an in-flight update at iteration 3, so the equality also
    covers where the update lands inside sequences; a schedule that followed wall time
    would change which versions sampled which tokens, and with them every float."""
    first, learner_a, _ = _run(init_ckpt, rows, steps=4, lag=1, update_at=3)
    with busy_cores():
        second, learner_b, _ = _run(init_ckpt, rows, steps=4, lag=1, update_at=3)
    assert [_without_wall_time(r.metrics) for r in first] == [
        _without_wall_time(r.metrics) for r in second
    ]
    assert [r.trained for r in first] == [r.trained for r in second]
    a, b = learner_a.model.state_dict(), learner_b.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(r.metrics["loss/grad_norm"] > 0 for r in first)  # the weights did move


def _stop_and_resume(
    init_ckpt: Path, rows: list[PromptRow], tmp: Path, stop: int, steps: int, **kw: Any
) -> tuple[list[StepRecord], list[StepRecord], list[StepRecord]]:
    """A run of ``steps`` steps; one stopped after ``stop`` and checkpointed as
    ``stages.rlvr`` does (model, learner, prompt source, the record's
    ``schedule_state``); that one resumed to ``steps``. Returns the three runs' records,
    having checked that the whole and the resumed runs end with the same weights."""
    whole, learner_w, _ = _run(init_ckpt, rows, steps=steps, **kw)
    part, learner_p, source_p = _run(init_ckpt, rows, steps=stop, **kw)
    _, tok = load_checkpoint(init_ckpt)
    saved = save_checkpoint(learner_p.model, tok, tmp / f"step_{stop}")
    resume = {
        "learner": learner_p.state_dict(),
        "source": source_p.state_dict(),
        "schedule": part[-1].schedule_state,
    }
    rest, learner_r, _ = _run(saved, rows, steps=steps, resume=resume, **kw)
    a, b = learner_w.model.state_dict(), learner_r.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    return whole, part, rest


def test_resumed_run_continues_the_uninterrupted_one(
    init_ckpt: Path, rows: list[PromptRow], tmp_path: Path
) -> None:
    """Lag 2 with an update at iteration 3: steps 3 and 4 sample with versions 0 -> 1
    and 1 -> 2, weights older than the checkpoint of step 2 holds in its model. A run
    stopped after step 2 and resumed from what ``stages.rlvr`` checkpoints (model,
    learner, prompt source, the record's ``schedule_state``) logs steps 3 and 4 exactly as
    the run that never stopped, and ends with the same weights."""
    whole, part, rest = _stop_and_resume(init_ckpt, rows, tmp_path, 2, 4, lag=2, update_at=3)
    assert sorted(part[-1].schedule_state["weights"]) == [0, 1, 2]  # versions 0..V held
    assert [r.step for r in rest] == [3, 4]
    assert [_without_wall_time(r.metrics) for r in rest] == [
        _without_wall_time(r.metrics) for r in whole[2:]
    ]


def test_a_resumed_run_discards_early_short_samples_as_the_uninterrupted_one(
    init_ckpt: Path, rows: list[PromptRow], tmp_path: Path
) -> None:
    """Discard-early-short at k = 1 judges each group against the deadline k W + C,
    from the medians of the actor's past generation windows, which the actor keeps as it
    runs. A run stopped after step 3 and resumed from its checkpoint logs steps 4-6 as
    the run that never stopped, the rule's horizon and discards included, and ends with
    the same weights. Without the actor's state in the checkpoint the resumed actor
    started with no past windows, and its first update made a window of width 0 at
    decode step 0: a deadline of 0, every group discarded until windows accumulated."""
    # D: a full response counted as 150 decode steps (the cap is 12): a window here runs
    # 36-156 steps, so groups that start late in theirs miss the deadline k W + C
    full = 150
    settings = dataclasses.replace(
        ACTOR, length_control=DiscardEarlyShortParams(full_length=full), max_staleness=1
    )
    whole, _, rest = _stop_and_resume(
        init_ckpt, rows, tmp_path, 3, 6, lag=1, update_at=None, actor_settings=settings
    )
    later = [_without_wall_time(r.metrics) for r in whole[3:]]
    assert [_without_wall_time(r.metrics) for r in rest] == later
    # the rule was at work after the resume: it judged groups, and dropped some
    assert sum(m.get("length/discarded_groups", 0.0) for m in later) > 0
    assert all(m["length/horizon_steps"] > 0 for m in later)  # windows of some width


def test_config_rejects_a_lag_beyond_max_staleness() -> None:
    """lag 3 with max_staleness 1 would make every group stale; the error names both."""
    with pytest.raises(ValueError, match=r"rl.lag=3 exceeds rl.max_staleness=1"):
        RLConfig(schedule="deterministic", lag=3, max_staleness=1)
    with pytest.raises(ValueError, match="needs rl.lag >= 1"):
        RLConfig(schedule="deterministic", lag=0, update_at_decode_step=2)
    with pytest.raises(ValueError, match="runs one actor"):
        RunConfig.model_validate({"rl": {"schedule": "deterministic", "num_actors": 2}})
    RLConfig(lag=3, max_staleness=1)  # the wall-clock schedule does not read rl.lag


# ----------------------------------------------------------------------------- the CLI
def _recipe_run(out: Path, name: str) -> Path:
    """A smoke run of olmo3_think under the deterministic schedule, with spurious
    rewards (seeded coin flips) so that groups carry reward variance and RL moves the
    weights even though the smoke policy solves nothing."""
    cmd = [
        sys.executable,
        "-m",
        "recipe_arena.cli",
        "run",
        "recipe=olmo3_think",
        "budget=smoke",
        f"out_dir={out}",
        f"name={name}",
        "rl.schedule=deterministic",
        "rl.steps=4",
        "rl.lag=2",
        "rl.max_staleness=2",
        "rl.update_at_decode_step=5",
        "spurious_reward.enabled=true",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out / name


def _records(path: Path) -> list[dict[str, Any]]:
    """metrics.jsonl without its wall-time fields: each record's ``time``, the base
    stage's ``seconds`` and every ``throughput/`` or ``time/`` metric."""
    out = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        out.append(
            {
                k: v
                for k, v in r.items()
                if k not in ("time", "seconds") and not k.startswith(("throughput/", "time/"))
            }
        )
    return out


@pytest.mark.slow
@pytest.mark.timeout(2400)  # several smoke runs; slow on a loaded machine
def test_recipe_run_is_reproducible_under_load(tmp_path: Path) -> None:
    """``recipe-arena run`` twice with the same seed, the second beside busy-loop
    processes on every core: metrics.jsonl (all stages, wall-time fields aside) and the
    per-question held-out scores (eval_scores.jsonl) are identical, and RL did train
    (a non-zero gradient norm, a lag of 2 reached)."""
    a = _recipe_run(tmp_path, "quiet")
    with busy_cores():
        b = _recipe_run(tmp_path, "loaded")
    ra, rb = _records(a / "metrics.jsonl"), _records(b / "metrics.jsonl")
    assert ra == rb
    assert (a / "eval_scores.jsonl").read_text() == (b / "eval_scores.jsonl").read_text()
    rl = [r for r in ra if r["stage"] == "rlvr" and "loss/grad_norm" in r]
    assert any(r["loss/grad_norm"] > 0 for r in rl)
    assert max(r["staleness/lag_max"] for r in rl) == 2
