"""Every setting of the RL side changes what it names.

For each field of every strategy's parameter model (advantage, staleness, length
control), of the policy loss and of the RL section, the component the field names is
run once with the default and once with the field changed, and its output must differ.
Each table below must list every field of its model, so a field added without a
consumer fails here. Chat's rubric tournament is checked to reach the groups RL and the
prompt filter score.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

import pytest
import torch
from pydantic import BaseModel

from recipe_arena import wiring
from recipe_arena.advantages import (
    ADVANTAGES,
    AdvantageInput,
    CenteredParams,
    compute_advantages,
)
from recipe_arena.config import (
    EngineConfig,
    LabelFlipConfig,
    RewardsConfig,
    RLConfig,
    RunConfig,
)
from recipe_arena.core.hooks import RunFacts
from recipe_arena.core.loop import InFlight, LoopSettings, top_up_prompts
from recipe_arena.core.types import LearnerBatch
from recipe_arena.data.micro import generate_split
from recipe_arena.length_control import (
    LENGTH_CONTROL,
    TokenBudgetParams,
    apply_length_control,
)
from recipe_arena.length_control.discard_early_short import WindowedInput
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.policy_loss import (
    POLICY_LOSS,
    LossConfig,
    OlmoParams,
    PolicyLossInput,
    apply_policy_loss,
)
from recipe_arena.stages import rlvr
from recipe_arena.staleness import (
    STALENESS,
    SharedQuantParams,
    StalenessInput,
    apply_staleness,
)
from recipe_arena.wiring import LearnerSettings, advantage_hook, make_learner

policy_loss = partial(apply_policy_loss, OlmoParams())
"""The default policy loss (OlmoRL's), as the learner applies it."""


def _same(a: Any, b: Any) -> bool:
    """Deep equality over tensors, dicts, sequences and dataclass-like results."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if hasattr(a, "__dataclass_fields__"):
        return _same(vars(a), vars(b))
    return bool(a == b)


def _fields(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields) - {"name"}


# ----------------------------------------------------------------------------- strategies
def _staleness_input() -> StalenessInput:
    """Four rows; TIS ratios 1.25, 1.8, 3 (row 0) etc.; row 1 has A < 0 and a mean
    behaviour-theta log-ratio of 0.3; row 2's tokens lag 1 and 2 versions; row 3's
    ratios 3, 1/3, 1 have a geometric mean of 1 (a row sequence masks keep)."""
    theta = torch.log(
        torch.tensor([[0.5, 0.9, 0.3], [0.5, 0.5, 0.5], [0.4, 0.4, 0.4], [0.9, 0.1, 0.5]])
    )
    beh = torch.log(
        torch.tensor([[0.4, 0.5, 0.1], [0.6, 0.7, 0.7], [0.4, 0.2, 0.3], [0.3, 0.3, 0.5]])
    )
    return StalenessInput(
        logprobs_BL=theta,
        old_logprobs_BL=theta,
        behavior_logprobs_BL=beh,
        advantages_BL=torch.tensor([[1.0] * 3, [-1.0] * 3, [0.5] * 3, [1.0] * 3]),
        mask_BL=torch.ones(4, 3),
        versions_BL=torch.tensor([[4, 4, 4], [4, 4, 4], [3, 2, 2], [4, 4, 4]]),
        learner_version=4,
    )


def _staleness_view(params: Any) -> Any:
    """What each component sees of a staleness strategy: the loss side's output, the
    weights its actor hooks give the engine (of a one-row q_proj), and the number of
    forward wrappers its learner hooks add (routing replay, quantised weights)."""
    out = apply_staleness(params, _staleness_input())
    entry = STALENESS[params.name]
    w = {"layers.0.q_proj.weight": torch.tensor([[0.3, -0.7, 0.11, 0.52]])}
    engine = w
    if entry.actor_hooks is not None:
        hook = entry.actor_hooks(params, RunFacts(max_new_tokens=8, max_staleness=1))
        engine = dict(hook.engine_weights(w)) if hook.engine_weights else w
    forward = len(entry.learner_hooks(params).forward) if entry.learner_hooks else 0
    return (out, engine, forward)


def _length_view(params: Any) -> Any:
    """A group of four (lengths 10, 50, 70, 150) with and without a row budget, effort
    medium, started 40 decode steps into a 100-step window (a 150-step response would
    go stale at max_staleness 0)."""
    outs = []
    for row_budget in (60, None):
        inp = WindowedInput(
            rewards_G=torch.tensor([1.0, 0.0, 1.0, 0.0]),
            lengths_G=torch.tensor([10, 50, 70, 150]),
            row_budget=row_budget,
            effort="medium",
            finish_seconds_G=torch.tensor([0.1, 0.5, 0.7, 1.5]),
            start_versions_G=torch.tensor([3, 3, 2, 1]),
            end_versions_G=torch.tensor([3, 4, 4, 4]),
            engine_version=4,
            phase_steps_G=torch.full((4,), 40),
            window_steps=100.0,
            collect_steps=None,
            response_cap=150,
            max_staleness=0,
        )
        outs.append(apply_length_control(params, inp))
    return outs


def _advantage_view(params: Any) -> Any:
    inp = AdvantageInput(
        rewards_B=torch.tensor([1.0, 0.0, 0.0, 1.0, 0.5, 0.5]),
        group_B=torch.tensor([0, 0, 0, 1, 1, 1]),
        mask_BL=torch.ones(6, 2),
        behavior_logprobs_BL=torch.zeros(6, 2),
        teacher_logprobs_BL=torch.full((6, 2), -1.0),  # gap -1 nat: clipped at c < 1
    )
    return compute_advantages(params, inp)


def _policy_loss_view(params: Any) -> Any:
    """Two rows of 1 and 3 tokens, ratios 0.6 (A < 0), 1.2 and 1.4 (A > 0), TIS-like
    weights and an extra loss: the loss and its gradient."""
    logp = torch.log(torch.tensor([[0.6, 0.0, 0.0], [1.2, 1.4, 1.1]]))
    x = logp.clone().requires_grad_(True)
    out = apply_policy_loss(
        params,
        PolicyLossInput(
            x,
            torch.zeros(2, 3),
            torch.tensor([[-1.0, 0.0, 0.0], [1.0, 1.0, 1.0]]),
            torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]]),
            LossConfig(),
            4,
            token_weights_BL=torch.tensor([[1.0, 1.0, 1.0], [0.5, 1.0, 2.0]]),
        ),
    )
    out.loss.backward()
    return out.loss.detach(), x.grad


AXES: list[tuple[dict[str, Any], Callable[[Any], Any]]] = [
    (STALENESS, _staleness_view),
    (LENGTH_CONTROL, _length_view),
    (ADVANTAGES, _advantage_view),
    (POLICY_LOSS, _policy_loss_view),
]


def _change(model: type[BaseModel], field: str) -> Any:
    """A valid value other than the default that the strategy must notice: the field's
    declared ``examples`` (in the strategy's module), else for a bool the other value,
    for a Literal its first other value, for a field that may be null, null."""
    info = model.model_fields[field]
    if info.examples:
        return info.examples[0]
    default, ann = info.get_default(call_default_factory=True), info.annotation
    if ann is bool:
        return not default
    if typing.get_origin(ann) is Literal:
        return next(v for v in typing.get_args(ann) if v != default)
    if default is not None and type(None) in typing.get_args(ann):
        return None
    raise AssertionError(
        f"{model.__name__}.{field}: declare Field(..., examples=[a changed value])"
    )


STRATEGY_CHANGES: dict[tuple[type[BaseModel], str], Any] = {
    (entry.params, f): _change(entry.params, f)
    for registry, _ in AXES
    for entry in registry.values()
    for f in sorted(_fields(entry.params))
}
"""(model, field) -> the changed value, for every field of every registry entry."""


def test_every_strategy_field_has_a_change_listed() -> None:
    """Derived from the registries: each field of each entry has a change, and the
    shipped strategies' fields are all among them (14 as of this test)."""
    listed = {(m.__name__, f) for m, f in STRATEGY_CHANGES}
    assert {
        ("TISParams", "cap"),
        ("SharedQuantParams", "regularizer"),
        ("DeepSeekMaskParams", "routing_replay"),
        ("TokenBudgetParams", "budget_by_effort"),
        ("DiscardEarlyShortParams", "full_length"),
        ("DistillParams", "clip"),
    } <= listed
    assert len(listed) >= 14


@pytest.mark.parametrize(
    ("model", "field"), sorted(STRATEGY_CHANGES, key=lambda k: (k[0].__name__, k[1]))
)
def test_strategy_field_changes_its_output(model: type[BaseModel], field: str) -> None:
    view = next(v for reg, v in AXES if any(e.params is model for e in reg.values()))
    default = model()
    changed = model(**{field: STRATEGY_CHANGES[(model, field)]})
    assert not _same(view(default), view(changed)), f"{model.__name__}.{field} changed nothing"


# ----------------------------------------------------------------------------- loss
LOSS_CHANGES: dict[str, Any] = {
    "normalisation": "sample",
    "clip_low": 0.5,
    "clip_high": 0.1,
    "kl_beta": 0.1,
}


def test_every_loss_field_changes_the_loss() -> None:
    """Two rows of 1 and 3 tokens, ratios 0.6 (A < 0), 1.2 and 1.4 (A > 0): each clip
    bound binds somewhere, the rows' lengths differ, a reference policy is given."""
    assert set(LOSS_CHANGES) == _fields(LossConfig)
    logp = torch.log(torch.tensor([[0.6, 0.0, 0.0], [1.2, 1.4, 1.1]]))
    mask = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    adv = torch.tensor([[-1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])

    def view(cfg: LossConfig) -> Any:
        x = logp.clone().requires_grad_(True)
        out = policy_loss(
            PolicyLossInput(x, torch.zeros(2, 3), adv, mask, cfg, 4, ref_logprobs_BL=logp - 0.3)
        )
        out.loss.backward()
        return out.loss.detach(), x.grad

    for field, value in LOSS_CHANGES.items():
        assert not _same(view(LossConfig()), view(LossConfig(**{field: value}))), field


# ----------------------------------------------------------------------------- RL section
def _tiny_learner_view(rl: RLConfig, version: int = 3) -> Any:
    """Two train steps of a tiny model on a fixed two-row batch: metrics and weights."""
    model, _ = build_micro(
        TinyModelSpec(hidden_size=16, num_layers=1, num_heads=1, intermediate_size=32), seed=0
    )
    batch = LearnerBatch(
        tokens_BL=torch.tensor([[8, 9, 10, 11, 12, 13], [8, 9, 14, 15, 0, 0]]),
        mask_BL=torch.tensor([[0.0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 0, 0]]),
        advantages_BL=torch.tensor([[0.0, 0, 2, 2, 2, 2], [0, 0, -2, -2, 0, 0]]),
        behavior_logprobs_BL=torch.full((2, 6), -4.0),
        versions_BL=torch.full((2, 6), version),
        attention_BL=torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]),
    )
    learner = make_learner(model, LearnerSettings(rl=rl, loss=LossConfig(normalisation="constant")))
    learner.version = version
    metrics = [learner.train_step(batch) for _ in range(2)]
    keep = ("loss/lr", "loss/ratio_mean", "loss/total", "throughput/microbatches")
    return [{k: m[k] for k in keep} for m in metrics], [p.detach() for p in model.parameters()]


def _loop_view(rl: RLConfig) -> Any:
    """The batch rules the loop applies and the prompts it keeps in flight."""
    from recipe_arena.core.channels import LocalChannel
    from recipe_arena.core.prompts import PromptSource

    s = LoopSettings(rl=rl, advantages=advantage_hook(CenteredParams()), seed=0, pad_id=0)
    f = s.batch_filler()

    class Prompts:  # top_up_prompts only writes to a backend's prompt channel
        prompts = LocalChannel()

    rows = generate_split("math", "train", 5, seed=0)
    top_up_prompts(Prompts(), PromptSource(rows, {"math": 1.0}, 0), InFlight(), s)  # type: ignore[arg-type]
    queued = Prompts.prompts.qsize()
    return (
        f.n_prompts,
        f.max_staleness,
        f.zero_gradient_filter,
        f.active_sampling,
        f.max_draws,
        queued,
    )


def _actor_view(rl: RLConfig) -> Any:
    return wiring.actor_settings(RunConfig(rl=rl))


def _source_view(rl: RLConfig) -> Any:
    rows = [r for d in ("math", "ifeval") for r in generate_split(d, "train", 5, seed=0)]
    source = rlvr.prompt_source(RunConfig(rl=rl), rows)
    return [source.next().id for _ in range(12)]


def _plan_view(rl: RLConfig) -> Any:
    """The deterministic schedule's versions: each batch's start and in-flight switch."""
    from recipe_arena.core.lockstep import VersionPlan

    plan = VersionPlan.of(rl)
    return [(plan.start_version(v), plan.switch_version(v)) for v in range(6)]


# field -> (the component's view, a context the field matters in, the changed value)
RL_CHANGES: dict[str, tuple[Callable[[RLConfig], Any], dict[str, Any], Any]] = {
    "steps": (_tiny_learner_view, {"lr_schedule": "cosine"}, 5),
    "prompts_per_step": (_loop_view, {}, 3),
    "group_size": (_actor_view, {}, 4),
    "temperature": (_tiny_learner_view, {}, 0.7),
    "max_new_tokens": (_tiny_learner_view, {}, 8),
    "lr": (_tiny_learner_view, {}, 1e-3),
    "warmup_steps": (_tiny_learner_view, {}, 10),
    "lr_schedule": (_tiny_learner_view, {"steps": 4}, "cosine"),
    "max_staleness": (_loop_view, {}, 0),
    "pipeline_depth": (_loop_view, {}, 1),
    "zero_gradient_filter": (_loop_view, {}, False),
    "active_sampling": (_loop_view, {}, False),
    "max_resample_factor": (_loop_view, {}, 2),
    "domain_weights": (_source_view, {}, {"math": 0.5, "code": 0.0, "ifeval": 0.5, "chat": 0.0}),
    "epochs": (_tiny_learner_view, {}, 2),
    "microbatch_tokens": (_tiny_learner_view, {}, 6),
    "grad_clip": (_tiny_learner_view, {}, 1e-3),
    "adam_betas": (_tiny_learner_view, {}, (0.5, 0.9)),
    "weight_decay": (_tiny_learner_view, {"lr": 0.5}, 0.5),
    "lr_floor": (_tiny_learner_view, {"lr_schedule": "cosine", "steps": 4}, 0.5),
    "lag": (_plan_view, {"schedule": "deterministic", "max_staleness": 4}, 3),
    "update_at_decode_step": (_plan_view, {"schedule": "deterministic"}, 2),
    "fp16": (_tiny_learner_view, {}, True),
    "lm_head_fp32": (_tiny_learner_view, {"fp16": True}, True),
}
RL_READ_BY_THE_STAGE = {"num_actors", "checkpoint_every", "eval_every", "schedule"}
"""Read by ``run_rlvr`` itself (actors started, checkpoint and evaluation cadence, which
loop runs): the recipe smoke test checks the cadence (evaluations and checkpoints at its
steps), tests/test_core_lockstep.py the deterministic schedule through the CLI."""


RL_DEVICE_FIELDS = {"device": "cuda:1", "bf16": True}
"""Where and in which precision the learner runs, resolved by ``learner_settings``
(device None follows the run's device, bf16 None is on for CUDA only)."""


def test_every_rl_field_is_listed() -> None:
    listed = set(RL_CHANGES) | RL_READ_BY_THE_STAGE | set(RL_DEVICE_FIELDS)
    assert listed == set(RLConfig.model_fields)


@pytest.mark.parametrize("field", sorted(RL_DEVICE_FIELDS))
def test_rl_device_fields_reach_the_learner_settings(field: str) -> None:
    """rl.device and rl.bf16 land in the learner's settings; unset, the learner is on
    the CPU in float32 (bf16 off), and rl.device=cuda:1 alone turns bf16 on."""
    from recipe_arena.config import RunConfig
    from recipe_arena.wiring import learner_settings

    base = learner_settings(RunConfig())
    assert (base.device, base.bf16) == ("cpu", False)
    changed = learner_settings(RunConfig(rl={field: RL_DEVICE_FIELDS[field]}))
    assert getattr(changed, field) == RL_DEVICE_FIELDS[field]
    if field == "device":
        assert changed.bf16 is True


@pytest.mark.parametrize("field", sorted(RL_CHANGES))
def test_rl_field_reaches_its_component(field: str) -> None:
    view, context, value = RL_CHANGES[field]
    base = RLConfig(**context)
    changed = RLConfig(**{**context, field: value})
    assert not _same(view(base), view(changed)), f"rl.{field} changed nothing"


def test_the_actors_window_quota_follows_the_batch() -> None:
    """At max_staleness 0 each actor keeps a quota of ceil(N / actors) groups per
    window (N = 5 over 2 actors: 3) and counts groups as the learner does: a group with
    equal rewards is replaced only under both the zero-gradient filter and active
    sampling; at max_staleness 1 it keeps none."""
    k0 = _actor_view(RLConfig(max_staleness=0, prompts_per_step=5, num_actors=2))
    assert k0.window_quota == 3 and k0.refill_equal_rewards is True
    for off in ({"zero_gradient_filter": False}, {"active_sampling": False}):
        assert _actor_view(RLConfig(max_staleness=0, **off)).refill_equal_rewards is False
    assert _actor_view(RLConfig(max_staleness=1)).window_quota is None


def test_the_rl_stage_passes_strategies_and_sections_through_whole() -> None:
    """The stage hands the configured objects themselves to the loop, the learner and the
    actors: no mapper picks fields out of them."""
    cfg = RunConfig(
        staleness=SharedQuantParams(), length_control=TokenBudgetParams(), engine=EngineConfig()
    )
    loop, learner = wiring.loop_settings(cfg, 0), wiring.learner_settings(cfg)
    spec = wiring.actor_spec(cfg, __import__("pathlib").Path("/x"), 0)
    assert loop.rl is cfg.rl and loop.advantages.args[-1] is cfg.advantage  # type: ignore[attr-defined]
    assert loop.seed == cfg.seed
    assert learner.rl is cfg.rl and learner.loss is cfg.loss and learner.staleness is cfg.staleness
    assert learner.policy_loss is cfg.policy_loss
    assert spec.engine_cfg is cfg.engine and spec.rewards_cfg is cfg.rewards
    assert spec.settings.length_control is cfg.length_control
    assert spec.settings.staleness is cfg.staleness
    assert not math.isnan(spec.settings.temperature)


# ----------------------------------------------------------------------------- chat judge
@pytest.fixture(scope="module")
def tournament_scorer() -> Any:
    from recipe_arena.engines import build_engine
    from recipe_arena.rewards import build_scorer
    from recipe_arena.rewards.judge import EngineGenerator, Judge

    model, tok = build_micro(TinyModelSpec(max_position_embeddings=1024), seed=0)
    gen = EngineGenerator(build_engine("hf", model, tok), tok, max_new_tokens=4)
    cfg = RewardsConfig(chat="rubric_tournament", workers=1)
    with build_scorer(cfg, judge=Judge(gen)) as scorer:
        yield scorer
    gen.close()


def test_rubric_tournament_scores_the_rl_actors_groups(tournament_scorer: Any) -> None:
    """An RL actor's chat group of G = 3 is judged as a tournament: all pairs in both
    orders, 3 x 2 = 6 games (the plain judge would play none)."""
    from recipe_arena.core.actor import ActorTask
    from recipe_arena.wiring import ActorSettings, make_actor

    model, tok = build_micro(TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1), seed=0)
    row = generate_split("chat", "train", 1, seed=0)[0]
    before = tournament_scorer.counts["chat/tournament_games"]
    actor = make_actor(
        0,
        model,
        tok,
        "torch",
        EngineConfig(max_batch_size=4),
        tournament_scorer.cfg,
        ActorSettings(group_size=3, temperature=1.0, max_new_tokens=6),
        scorer=tournament_scorer,
    )
    try:
        actor.rollouts([ActorTask(row, seed=1, tag="t")])
    finally:
        actor.engine.close()
    assert tournament_scorer.counts["chat/tournament_games"] - before == 6


def test_rubric_tournament_scores_the_prompt_filters_groups(tournament_scorer: Any) -> None:
    """The prompt filter's k = 2 rollouts of each of 2 chat prompts are judged as two
    tournaments of 2 x 1 = 2 games each, 4 in all; the math prompt beside them goes to
    its verifier."""
    from recipe_arena.engines import build_engine
    from recipe_arena.stages.prompt_filter import _pass_rates

    model, tok = build_micro(TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1), seed=0)
    rows = generate_split("chat", "train", 2, seed=0) + generate_split("math", "train", 1, seed=0)
    cfg = RunConfig.model_validate(
        {
            "prompt_filter": {"rollouts": 2},
            "rl": {"max_new_tokens": 6},
            "rewards": {"chat": "rubric_tournament"},
        }
    )
    engine = build_engine("torch", model, tok, EngineConfig(max_batch_size=8))
    before = tournament_scorer.counts["chat/tournament_games"]
    try:
        rates = _pass_rates(cfg, engine, tok, tournament_scorer, rows, seed=0)
    finally:
        engine.close()
    assert tournament_scorer.counts["chat/tournament_games"] - before == 4
    assert len(rates) == 3 and all(0.0 <= r <= 1.0 for r in rates)


# ----------------------------------------------------------------------------- label flip
def _label_flip_view(flip: LabelFlipConfig) -> Any:
    """The rewards an RL actor's group-finished hook hands on for a math group of four
    whose verifier paid [1, 0, 1, 0] (seed 7), with the flips it counted."""
    from recipe_arena.core.hooks import FinishedGroup

    settings = wiring.actor_settings(RunConfig(rewards=RewardsConfig(label_flip=flip)))
    hook = wiring.actor_hooks(settings).on_group_finished
    group = FinishedGroup(
        row=generate_split("math", "train", 1, seed=0)[0],
        seed=7,
        rewards_G=torch.tensor([1.0, 0.0, 1.0, 0.0]),
        lengths_G=torch.tensor([3, 3, 3, 3]),
        finish_seconds_G=torch.zeros(4),
        start_versions_G=torch.zeros(4, dtype=torch.long),
        end_versions_G=torch.zeros(4, dtype=torch.long),
        start_steps=(None,) * 4,
        engine_version=0,
    )
    verdict = hook(group) if hook is not None else None
    return None if verdict is None else (verdict.rewards_G, verdict.metrics)


# field -> (a context the field matters in, the changed value)
LABEL_FLIP_CHANGES: dict[str, tuple[dict[str, Any], Any]] = {
    "p": ({}, 1.0),
    "domains": ({"p": 1.0}, ["code"]),
}


def test_every_label_flip_field_is_listed() -> None:
    assert set(LABEL_FLIP_CHANGES) == set(LabelFlipConfig.model_fields)


@pytest.mark.parametrize("field", sorted(LABEL_FLIP_CHANGES))
def test_label_flip_field_reaches_the_actors_rewards(field: str) -> None:
    """rewards.label_flip.p 0 -> 1 turns [1, 0, 1, 0] into [0, 1, 0, 1]; at p = 1,
    domains [code] leaves the math group's [1, 0, 1, 0] as the verifier paid it."""
    context, value = LABEL_FLIP_CHANGES[field]
    base = _label_flip_view(LabelFlipConfig(**context))
    changed = _label_flip_view(LabelFlipConfig(**{**context, field: value}))
    assert not _same(base, changed), f"rewards.label_flip.{field} changed nothing"
