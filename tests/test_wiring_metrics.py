"""Step metrics as a run logs them: fractions stay fractions when a step's groups are
combined, every scorer counter reaches the step's metrics, and the run summary warns
about a reward domain whose verdicts were mostly unparsable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipe_arena.advantages import CenteredParams
from recipe_arena.config import EngineConfig, RLConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core.backends import LocalBackend
from recipe_arena.core.loop import LoopSettings, train
from recipe_arena.core.metrics import group_counters, group_metrics, length_metrics
from recipe_arena.core.prompts import PromptSource
from recipe_arena.core.types import Rollout, RolloutGroup
from recipe_arena.data.micro import generate_split
from recipe_arena.length_control import TokenBudgetParams
from recipe_arena.models.factory import TinyModelSpec, build_micro, load_checkpoint, save_checkpoint
from recipe_arena.summary import run_summary, unparsable_warnings
from recipe_arena.wiring import (
    ActorSettings,
    ActorSpec,
    LearnerSettings,
    advantage_hook,
    make_learner,
)


def _group(metrics: dict[str, float], g: int = 4) -> RolloutGroup:
    row = generate_split("math", "train", 1, seed=0)[0]
    r = Rollout(row.id, (1,), (2, 3), (0.0, 0.0), (0, 0), "stop", "math")
    return RolloutGroup(row, (r,) * g, sampled_lengths=(2,) * g, metrics=metrics)


def test_fractions_are_weighted_means_counts_are_sums_values_are_means() -> None:
    """Four groups of 4 under token_budget with 4, 2, 2, 2 responses over budget
    (fractions 1, 0.5, 0.5, 0.5: summed they read 2.5) and one group of 8 without a
    budget: violations 4+2+2+2 = 10 of the 16 rollouts of the groups that had a
    budget, so the fraction is 10 / 16 = 0.625 (the group without one does not enter
    it), the count 10, budget_missing 1. Two groups' horizons of 100 and 140 decode
    steps average to 120, their horizon_groups count sums to 2."""
    groups = [
        _group({"length/budget_violations": v, "length/budget_violation_frac": v / 4})
        for v in (4.0, 2.0, 2.0, 2.0)
    ]
    groups.append(_group({"length/budget_missing": 1.0}, g=8))
    groups += [
        _group({"length/horizon_groups": 1.0, "length/horizon_steps": h}) for h in (100.0, 140.0)
    ]
    out = length_metrics(groups, groups[:1])
    assert out["length/budget_violation_frac"] == pytest.approx(0.625)
    assert out["length/budget_violations"] == 10.0
    assert out["length/budget_missing"] == 1.0
    assert out["length/horizon_steps"] == pytest.approx(120.0)
    assert out["length/horizon_groups"] == 2.0
    # reward counters go with the reward metrics, length ones with the length metrics
    mixed = [_group({"reward/math/checks": 4.0, "length/budget_violations": 1.0})] * 3
    assert group_counters(mixed, "reward/") == {"reward/math/checks": 12.0}
    assert group_metrics(mixed)["reward/math/checks"] == 12.0
    assert "reward/math/checks" not in length_metrics(mixed, mixed)


def test_loop_logs_budget_fraction_and_scorer_counters(tmp_path: Path) -> None:
    """The real loop, actor, scorer and learner: 2 steps of N = 2 ifeval prompts, G = 4,
    responses capped at 12 tokens, every row given a budget of 6 tokens under
    length_control=token_budget. In each step's metrics the violation fraction is a
    share of the sampled rollouts: violations / sampled_n, in [0, 1] (a random model
    rarely stops within 6, so it is well above 1 / (groups received) and a sum over
    groups would read above 1); and the scorer counted one ifeval check per sampled
    rollout: reward/ifeval/checks = sampled_n = 4 x groups received."""
    spec_model = TinyModelSpec(
        hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=256
    )
    model, tok = build_micro(spec_model, seed=0)
    ckpt = save_checkpoint(model, tok, tmp_path / "init")
    rewards = RewardsConfig(ifeval_partial_credit=True, workers=1)
    actor = ActorSettings(
        group_size=4,
        temperature=1.0,
        max_new_tokens=12,
        max_groups_in_engine=4,
        length_control=TokenBudgetParams(),
    )
    spec = ActorSpec(str(ckpt), "torch", EngineConfig(max_batch_size=16), rewards, actor)
    rows = [
        r.model_copy(update={"token_budget": 6})
        for r in generate_split("ifeval", "train", 20, seed=0)
    ]
    rl = RLConfig(steps=2, prompts_per_step=2, max_resample_factor=4)
    learner = make_learner(load_checkpoint(ckpt)[0], LearnerSettings(rl=rl))
    settings = LoopSettings(rl=rl, advantages=advantage_hook(CenteredParams()), seed=3, pad_id=0)
    records = train(learner, LocalBackend(spec), PromptSource(rows, {"ifeval": 1.0}, 3), settings)
    for rec in records:
        m = rec.metrics
        received = m["sampling/groups_received"]
        assert received >= 2
        assert m["length/sampled_n"] == 4 * received
        assert m["reward/ifeval/checks"] == m["length/sampled_n"]
        assert m["length/budget_violations"] > 4
        frac = m["length/budget_violation_frac"]
        assert frac == pytest.approx(m["length/budget_violations"] / m["length/sampled_n"])
        assert 0.0 < frac <= 1.0


def test_summary_warns_about_a_domain_with_mostly_unparsable_verdicts(tmp_path: Path) -> None:
    """Two training steps: chat tournament games 12 + 12 of which 10 + 4 unparsable
    (14 / 24 = 58% > 50%: warned); judge verdicts 8 + 8 of which 3 + 1 unparsable (4 /
    16 = 25%: not warned); ifeval checks carry no verdict counter (never warned). A
    domain at exactly half is not warned (the rule is "more than half")."""
    records = [
        {"stage": "rlvr", "step": 1, "reward/chat/tournament_games": 12.0,
         "reward/chat/tournament_unparsable": 10.0, "reward/chat/judged": 8.0,
         "reward/chat/judge_unparsable": 3.0, "reward/ifeval/checks": 8.0},
        {"stage": "rlvr", "step": 2, "reward/chat/tournament_games": 12.0,
         "reward/chat/tournament_unparsable": 4.0, "reward/chat/judged": 8.0,
         "reward/chat/judge_unparsable": 1.0, "reward/chat/mean": 0.0},
    ]  # fmt: skip
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    text = run_summary(tmp_path)
    warned = [ln for ln in text.splitlines() if "warning" in ln]
    assert warned == [
        "  warning     chat: 14 of 24 tournament verdicts unparsable in training (58%); they "
        "score 0, so chat rewards carry little signal"
    ]
    half = [{"reward/chat/judged": 4.0, "reward/chat/judge_unparsable": 2.0}]
    assert unparsable_warnings(half) == []
