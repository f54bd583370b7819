"""Spurious-reward control: seeded random rewards that ignore the response, applied
where the scorer's reward enters the group, and the report that flags an evaluation set
rising beyond seed noise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from recipe_arena.cli import main
from recipe_arena.config import EngineConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core.actor import Actor, ActorTask
from recipe_arena.core.metrics import group_metrics
from recipe_arena.data.micro import generate_split
from recipe_arena.eval.spurious import check, rl_eval_curves, write_spurious_check
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.spurious import spurious_rewards
from recipe_arena.wiring import ActorSettings, make_actor

SPEC = TinyModelSpec(
    hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=256
)


def test_spurious_rewards_are_seeded_bits_with_probability_p() -> None:
    """p = 0 gives only zeros, p = 1 only ones; one seed always gives the same bits and
    another seed other bits. Over 100 seeds x 40 rewards at p = 0.5 the count of ones is
    Binomial(4000, 0.5): mean 2000, sd sqrt(4000 / 4) = 31.6, so it lies in 2000 +- 4 sd."""
    assert spurious_rewards(7, 8, 0.0).tolist() == [0.0] * 8
    assert spurious_rewards(7, 8, 1.0).tolist() == [1.0] * 8
    assert torch.equal(spurious_rewards(7, 16, 0.5), spurious_rewards(7, 16, 0.5))
    assert not torch.equal(spurious_rewards(7, 16, 0.5), spurious_rewards(8, 16, 0.5))
    ones = sum(float(spurious_rewards(s, 40, 0.5).sum()) for s in range(100))
    assert 2000 - 4 * 31.6 < ones < 2000 + 4 * 31.6
    with pytest.raises(ValueError, match="p=1.5"):
        spurious_rewards(0, 4, 1.5)


@pytest.fixture(scope="module")
def scorer():  # type: ignore[no-untyped-def]
    with build_scorer(RewardsConfig(workers=1)) as s:
        yield s


def _actor(seed: int, spurious_p: float | None, scorer) -> Actor:  # type: ignore[no-untyped-def]
    model, tok = build_micro(SPEC, seed=seed)
    settings = ActorSettings(
        group_size=4, temperature=1.0, max_new_tokens=10, spurious_p=spurious_p
    )
    return make_actor(
        0,
        model,
        tok,
        "torch",
        EngineConfig(),
        RewardsConfig(),
        settings,
        scorer=scorer,
    )


def test_actor_replaces_rewards_independently_of_the_responses(scorer) -> None:  # type: ignore[no-untyped-def]
    """Two different random models answer the same math tasks (same draw seeds): their
    texts differ and a random model solves none (verifier 0), yet under the control both
    get the same rewards, spurious_rewards(task seed, G, p), and the verifier's score is
    kept beside them (reward/verifier/mean = 0). Without the control the reward is the
    verifier's (0) and no verifier metric appears."""
    rows = generate_split("math", "train", 3, seed=0)
    tasks = [ActorTask(row=r, seed=100 + i, tag=f"t{i}") for i, r in enumerate(rows)]
    groups = {}
    for model_seed in (0, 1):
        actor = _actor(model_seed, 0.5, scorer)
        try:
            groups[model_seed] = actor.rollouts(tasks)
        finally:
            actor.engine.close()
    assert [r.text for g in groups[0] for r in g.rollouts] != [
        r.text for g in groups[1] for r in g.rollouts
    ]
    for g0, g1, task in zip(groups[0], groups[1], tasks, strict=True):
        want = spurious_rewards(task.seed, 4, 0.5).tolist()
        assert g0.rewards_G.tolist() == want == g1.rewards_G.tolist()
        assert all(r.verifier_reward == 0.0 for r in g0.rollouts)
    m = group_metrics(groups[0])
    assert m["reward/verifier/mean"] == 0.0
    assert m["reward/mean"] == pytest.approx(
        sum(spurious_rewards(t.seed, 4, 0.5).sum().item() for t in tasks) / 12
    )
    real = _actor(0, None, scorer)
    try:
        plain = real.rollouts(tasks)
    finally:
        real.engine.close()
    assert all(r.reward == 0.0 and r.verifier_reward is None for g in plain for r in g.rollouts)
    assert "reward/verifier/mean" not in group_metrics(plain)


# ----------------------------------------------------------------------------- the report
def _run(path: Path, curves: dict[str, list[float]]) -> Path:
    """A run directory whose rlvr stage evaluated at steps 0, 50, 100, ..."""
    path.mkdir(parents=True)
    steps = range(0, 50 * len(next(iter(curves.values()))), 50)
    with open(path / "metrics.jsonl", "w") as f:
        f.write(json.dumps({"stage": "sft", "step": 5, "eval/math/pass@1": 0.9}) + "\n")
        for i, step in enumerate(steps):
            rec = {"stage": "rlvr", "step": step, "loss/policy": 0.1}
            rec.update({f"eval/{d}/pass@1": v[i] for d, v in curves.items()})
            rec["eval/mean/pass@1"] = 0.0
            f.write(json.dumps(rec) + "\n")
    return path


def test_check_flags_a_set_that_rises_beyond_seed_noise(tmp_path: Path) -> None:
    """Three spurious runs. math rises +0.01, -0.02, +0.01: mean 0, flat. ifeval rises
    +0.10, +0.12, +0.08: mean 0.10, sd 0.02, noise bound t(0.95, 2) * 0.02 / sqrt(3) =
    2.919986 * 0.011547 = 0.033717 < 0.10, suspect. The rise is last minus first, so the
    middle evaluation (a dip) does not enter; the sft stage's eval is not an RL curve."""
    math_curves = [[0.20, 0.10, 0.21], [0.22, 0.30, 0.20], [0.18, 0.18, 0.19]]
    if_curves = [[0.30, 0.35, 0.40], [0.30, 0.20, 0.42], [0.32, 0.33, 0.40]]
    runs = [
        _run(tmp_path / f"s{i}", {"math": m, "ifeval": f})
        for i, (m, f) in enumerate(zip(math_curves, if_curves, strict=True))
    ]
    real = _run(tmp_path / "real", {"math": [0.2, 0.25, 0.3], "ifeval": [0.3, 0.4, 0.5]})
    assert rl_eval_curves(runs[0])["math"] == [(0, 0.20), (50, 0.10), (100, 0.21)]
    verdicts = {
        v.domain: v for v in check([rl_eval_curves(r) for r in runs], [rl_eval_curves(real)])
    }
    assert verdicts["math"].mean == pytest.approx(0.0, abs=1e-12)
    assert verdicts["math"].suspect is False
    v = verdicts["ifeval"]
    assert v.mean == pytest.approx(0.10) and v.sd == pytest.approx(0.02)
    assert v.noise == pytest.approx(0.033717, abs=1e-6)
    assert v.suspect is True
    assert v.real_rises == [pytest.approx(0.2)]
    one = check([rl_eval_curves(runs[0])])
    assert all(x.suspect is None for x in one)


def test_spurious_check_command_writes_the_report(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Through the CLI: exit 0, a Markdown table naming the verdicts, a JSON file and the
    curve plot; a run without RL evaluations is refused naming it."""
    a = _run(tmp_path / "a", {"math": [0.2, 0.2]})
    b = _run(tmp_path / "b", {"math": [0.2, 0.21]})
    real = _run(tmp_path / "real", {"math": [0.2, 0.3]})
    out = tmp_path / "out"
    code = main(
        ["spurious-check", "--spurious", str(a), str(b), "--real", str(real), "--out", str(out)]
    )
    assert code == 0
    text = (out / "spurious_check.md").read_text()
    assert "| math |" in text and "flat" in text
    assert (out / "spurious_check.png").stat().st_size > 0
    assert json.loads((out / "spurious_check.json").read_text())[0]["domain"] == "math"
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "metrics.jsonl").write_text("")
    with pytest.raises(ValueError, match="no held-out evaluation"):
        write_spurious_check([empty], [], tmp_path / "out2")


def _run_with_scores(path: Path, flips: list[int], questions: int = 100) -> Path:
    """A spurious run on ``questions`` chat questions whose RL start solves none and
    whose last evaluation solves exactly the questions in ``flips``: pass@1 0 ->
    len(flips) / questions, in metrics.jsonl and per question in eval_scores.jsonl."""
    from recipe_arena.data.schema import Message, PromptRow
    from recipe_arena.eval.scores import log_eval_scores

    rows = [
        PromptRow(id=f"chat-{i}", messages=[Message(role="user", content=f"q {i}")], domain="chat")  # type: ignore[arg-type]
        for i in range(questions)
    ]
    end = [float(i in flips) for i in range(questions)]
    _run(path, {"chat": [0.0, sum(end) / questions]})
    log_eval_scores(path, "rlvr", 0, rows, [0.0] * questions)
    log_eval_scores(path, "rlvr", 50, rows, end)
    return path


@pytest.mark.parametrize(
    ("flips", "noise", "suspect"),
    [
        # the same question gained in every seed: MS_S = MS_E = 0, MS_Q = 3 (0.99^2 +
        # 99 * 0.01^2) / 99 = 0.03; bound t(0.95, 99) sqrt(0.03 / 300) = 1.66039 * 0.01
        ([[7], [7], [7]], 0.0166039, False),
        # a different question per seed: MS_S = 0, MS_Q = 0.0098 < MS_E = 2 / 198; bound
        # t(0.95, 2) sqrt(MS_E / 300) = 2.919986 * 0.0058026 = 0.016943
        ([[3], [5], [9]], 0.016943, False),
        # ten questions gained in every seed, the same ones: mean 0.10, MS_Q = 3 * 9 /
        # 99 = 0.27273, MS_S = MS_E = 0; bound 1.66039 * sqrt(0.27273 / 300) = 0.050063
        ([list(range(10))] * 3, 0.050063, True),
    ],
)
def test_equal_rises_get_a_bound_from_the_questions_noise(
    flips: list[list[int]], noise: float, suspect: bool, tmp_path: Path
) -> None:
    """Three spurious runs that rise by the same amount have sd 0 over seeds, so the
    seed-only bound was 0 and one question of 100 (+0.010 in every seed) read as
    SUSPECT. With the runs' per-question scores the bound counts the questions' noise
    (stats.noise_bound), through the report's own path (write_spurious_check)."""
    runs = [_run_with_scores(tmp_path / f"s{i}", f) for i, f in enumerate(flips)]
    write_spurious_check(runs, [], tmp_path / "out")
    (v,) = json.loads((tmp_path / "out" / "spurious_check.json").read_text())
    assert v["sd"] == pytest.approx(0.0, abs=1e-12)
    assert v["noise"] == pytest.approx(noise, abs=2e-6)
    assert v["suspect"] is suspect and v["questions"] == 100
    text = (tmp_path / "out" / "spurious_check.md").read_text()
    assert ("SUSPECT" in text) is suspect
