"""Noisy verifiers (``rewards.label_flip``): the seeded flips, the rewards the learner
sees under a composed config, the step metrics, held-out evaluation left exact, and the
settings refused at start-up."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
import torch

from recipe_arena.cli import main
from recipe_arena.compose import load_config
from recipe_arena.config import EngineConfig, RunConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core.actor import ActorTask
from recipe_arena.core.batch import build_learner_batch
from recipe_arena.core.metrics import group_metrics
from recipe_arena.data.micro import generate_split
from recipe_arena.eval.final import evaluate_model
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.label_flip import LABEL_FLIP_SALT, flip_labels, flip_mask
from recipe_arena.rewards.spurious import spurious_rewards
from recipe_arena.wiring import actor_spec, advantage_hook, make_actor
from tests.test_config_validation import assert_refused_naming

SPEC = TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1)

DRAWS_SEED_7 = [0.8415, 0.2218, 0.0920, 0.5309, 0.9050, 0.7145, 0.1604, 0.5625]
"""The first 8 uniform draws of ``random.Random("label-flip/7")`` (Python's Mersenne
Twister seeded from the string), to 4 places: rollout i flips when draw i < p."""


# ----------------------------------------------------------------------------- the draws
def test_flip_mask_draws_at_a_stated_seed() -> None:
    """Seed 7: the draws are ``DRAWS_SEED_7``. p = 0 flips none (no draw is below 0),
    p = 1 flips all (every draw is below 1). p = 0.2 flips the draws 0.0920 and 0.1604,
    rollouts 2 and 6; p = 0.6 adds 0.2218, 0.5309 and 0.5625, rollouts 1, 3 and 7. A
    rerun draws the same; seed 8 draws another pattern; the stream is not the
    spurious-reward control's bits at the same seed (their own salt)."""
    rng = random.Random(f"{LABEL_FLIP_SALT}/7")
    assert [round(rng.random(), 4) for _ in range(8)] == DRAWS_SEED_7
    assert flip_mask(7, 8, 0.0).tolist() == [False] * 8
    assert flip_mask(7, 8, 1.0).tolist() == [True] * 8
    assert flip_mask(7, 8, 0.2).int().tolist() == [0, 0, 1, 0, 0, 0, 1, 0]
    assert flip_mask(7, 8, 0.6).int().tolist() == [0, 1, 1, 1, 0, 0, 1, 1]
    assert torch.equal(flip_mask(7, 32, 0.5), flip_mask(7, 32, 0.5))
    assert not torch.equal(flip_mask(7, 32, 0.5), flip_mask(8, 32, 0.5))
    assert flip_mask(7, 8, 0.5).float().tolist() != spurious_rewards(7, 8, 0.5).tolist()
    with pytest.raises(ValueError, match=r"p=1.5 is not in \[0, 1\]"):
        flip_mask(0, 4, 1.5)


def test_flip_labels_flips_binary_and_partial_rewards() -> None:
    """Seed 7, p = 0.6 flips rollouts 1, 2, 3, 6, 7 (above). Rewards
    [1, 0, 0.25, 1, 0, 0.5, 1, nan]: 0 -> 1, 0.25 -> 0.75, 1 -> 0 at 1, 2, 3, 6;
    rollout 7's nan is no verifier's score and stays, so 4 are flipped; 0, 4 and 5
    are not drawn and keep 1, 0 and 0.5."""
    rewards = torch.tensor([1.0, 0.0, 0.25, 1.0, 0.0, 0.5, 1.0, float("nan")])
    out, n = flip_labels(7, rewards, 0.6)
    assert out[:7].tolist() == [1.0, 1.0, 0.75, 0.0, 0.0, 0.5, 0.0]
    assert out[7].isnan() and n == 4


# ----------------------------------------------------------------------------- the learner
@pytest.fixture(scope="module")
def scorer():  # type: ignore[no-untyped-def]
    with build_scorer(RewardsConfig(workers=1)) as s:
        yield s


def _groups(overrides: list[str], scorer, tmp_path: Path, domain: str = "math"):  # type: ignore[no-untyped-def]
    """Two groups of a random micro model's answers to ``domain`` rows, sampled by the
    actor the RL stage builds from the composed config (``actor_spec``)."""
    cfg = load_config(["recipe=olmo3_think", "budget=smoke", *overrides])
    spec = actor_spec(cfg, tmp_path, 0)
    settings = dataclasses.replace(spec.settings, max_new_tokens=8, window_quota=None)
    model, tok = build_micro(SPEC, seed=0)
    rows = generate_split(domain, "train", 2, seed=0)
    tasks = [ActorTask(r, seed=20 + i, tag=f"s{i}") for i, r in enumerate(rows)]
    actor = make_actor(
        0, model, tok, "torch", EngineConfig(max_batch_size=8), cfg.rewards, settings, scorer=scorer
    )
    try:
        groups = actor.rollouts(tasks)
    finally:
        actor.engine.close()
    batch = build_learner_batch(groups, advantage_hook(cfg.advantage), int(tok.pad_token_id))
    return cfg, tasks, groups, batch


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0])
def test_label_flip_setting_reaches_the_rewards_the_learner_sees(
    p: float,
    scorer,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """``rewards.label_flip.p=<p>`` composed as a run composes it: a random model's math
    answers score 0 with the verifier, so a flipped rollout carries 1 and the others 0.
    p = 0: all 0 (the exact verifier, no flip metric); p = 1: all 1; p = 0.5: 1 exactly
    where ``flip_mask(task seed, G, 0.5)`` is set. Each group reports its flips k and
    k / G; the step's ``reward/label_flip_frac`` is all flips over the 2G rollouts
    (``group_metrics``), and ``reward/verifier/mean`` the exact verifier's 0."""
    cfg, tasks, groups, batch = _groups([f"rewards.label_flip.p={p}"], scorer, tmp_path)
    g = cfg.rl.group_size
    flips = [flip_mask(t.seed, g, p) for t in tasks]
    want = [float(x) for f in flips for x in f.tolist()]
    assert want == [p] * (2 * g) if p in (0.0, 1.0) else 0 < sum(want) < 2 * g
    assert batch.rewards_B is not None and batch.rewards_B.tolist() == want
    metrics = group_metrics(groups)
    if p == 0.0:
        assert "reward/label_flip_frac" not in metrics
        assert [r.verifier_reward for grp in groups for r in grp.rollouts] == [None] * (2 * g)
        return
    for grp, f in zip(groups, flips, strict=True):
        assert grp.metrics["reward/label_flips"] == int(f.sum())
        assert grp.metrics["reward/label_flip_frac"] == pytest.approx(int(f.sum()) / g)
    assert metrics["reward/label_flips"] == sum(want)
    assert metrics["reward/label_flip_frac"] == pytest.approx(sum(want) / (2 * g))
    assert metrics["reward/verifier/mean"] == 0.0
    assert [r.verifier_reward for grp in groups for r in grp.rollouts] == [0.0] * (2 * g)


def test_label_flip_leaves_other_domains_exact(scorer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``rewards.label_flip.domains=[code]`` with p = 1: math groups keep the verifier's
    0s and report no flips; the default domains (math, code, ifeval) flip them all."""
    over = ["rewards.label_flip.p=1.0", "rewards.label_flip.domains=[code]"]
    cfg, _, groups, batch = _groups(over, scorer, tmp_path)
    assert batch.rewards_B is not None and batch.rewards_B.tolist() == [0.0] * (
        2 * cfg.rl.group_size
    )
    assert all("reward/label_flips" not in grp.metrics for grp in groups)
    assert load_config(["budget=smoke"]).rewards.label_flip.domains == ["math", "code", "ifeval"]


# ----------------------------------------------------------------------------- evaluation
def test_held_out_evaluation_uses_the_exact_verifiers(scorer) -> None:  # type: ignore[no-untyped-def]
    """The same model evaluated (``evaluate_model``, the RL stage's path) under p = 1
    scores exactly as under p = 0, per row: every verdict flipped would turn a 0 into a
    1. The evaluation cache key does not read the setting, so a start checkpoint shared
    by an exact and a noisy arm is evaluated once."""
    from recipe_arena.eval import final

    model, tok = build_micro(SPEC, seed=0)
    rows = [r for d in ("math", "ifeval") for r in generate_split(d, "heldout", 3, seed=0)]
    exact = RunConfig(eval={"max_prompts_per_domain": 3, "domain_prompts": {}, "max_new_tokens": 8})
    noisy = exact.model_copy(
        update={"rewards": RewardsConfig(label_flip={"p": 1.0, "domains": ["math", "ifeval"]})}
    )
    a = evaluate_model(exact, model, tok, rows, scorer)
    b = evaluate_model(noisy, model, tok, rows, scorer)
    assert a.scores == b.scores and a.metrics == b.metrics and len(a.scores) == 6
    dump = noisy.rewards.model_dump(mode="json", exclude=final.UNKEYED_REWARDS)
    assert dump == exact.rewards.model_dump(mode="json", exclude=final.UNKEYED_REWARDS)


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("override", "must_name"),
    [
        ("rewards.label_flip.p=1.5", ["rewards.label_flip.p", "1.5", "less than or equal to 1"]),
        ("rewards.label_flip.p=-0.1", ["rewards.label_flip.p", "-0.1", "greater than or equal"]),
        ("rewards.label_flip.domains=[maths]", ["rewards.label_flip.domains", "maths"]),
    ],
)
def test_label_flip_values_that_cannot_run_fail_naming_the_key(
    override: str, must_name: list[str]
) -> None:
    assert_refused_naming(override, must_name)


@pytest.mark.parametrize(
    "overrides",
    [
        ["rewards.label_flip.p=2"],
        ["rewards.label_flip.p=0.1", "spurious_reward.enabled=true"],
    ],
)
def test_run_refuses_label_flip_at_start_up(capsys, tmp_path: Path, overrides: list[str]) -> None:  # type: ignore[no-untyped-def]
    """``recipe-arena run`` exits 2 with one line naming rewards.label_flip.p, before a
    run directory exists: p = 2 is no probability, and under the spurious-reward control
    there is no verifier label to flip."""
    code = main(["run", "budget=smoke", f"out_dir={tmp_path / 'runs'}", "name=r", *overrides])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "rewards.label_flip.p" in err
    assert not (tmp_path / "runs" / "r").exists()


# ----------------------------------------------------------------------------- the study
def test_table_9_2_noisy_verifier_row_composes(tmp_path: Path) -> None:
    """The study's noisy_verifier row: exact, flip_10 and flip_25 over the study's 4
    seeds compose (paired, no run made) with p = 0, 0.1 and 0.25 on the default domains;
    its exact arm is the run the reward_hack row's exact arm is (shared, made once)."""
    from recipe_arena.study import prepare
    from recipe_arena.study_spec import load_spec

    spec = load_spec(Path(__file__).resolve().parent.parent / "studies" / "table_9_2.yaml")
    jobs, links = prepare(spec, tmp_path, rows=["noisy_verifier", "reward_hack"])
    row = links["noisy_verifier.default"]
    assert len(row) == 3 * len(spec.seeds) and len(spec.seeds) >= 4
    assert row["exact-s0"] == links["reward_hack.default"]["exact-s0"]
    args = {j.name: j.args for j in jobs}
    for arm, p in (("exact", 0.0), ("flip_10", 0.1), ("flip_25", 0.25)):
        cfg = load_config(args[row[f"{arm}-s0"]])
        assert cfg.rewards.label_flip.p == p and cfg.rl.schedule == "deterministic"
        assert cfg.rewards.label_flip.domains == ["math", "code", "ifeval"]
