"""Every field of the RL section (``RLConfig``) changes what it names: the component it
reaches (the learner, the loop's batch rules, the actors' settings, the prompt source,
the deterministic schedule) is run once with the default and once with the field
changed, and its output must differ. The tables must list every field of the section, so
a field added without a consumer fails here; the stage hands the configured sections
through whole."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch

from recipe_arena import wiring
from recipe_arena.advantages import CenteredParams
from recipe_arena.config import EngineConfig, RLConfig, RunConfig
from recipe_arena.core.loop import InFlight, LoopSettings, top_up_prompts
from recipe_arena.core.types import LearnerBatch
from recipe_arena.data.micro import generate_split
from recipe_arena.length_control import TokenBudgetParams
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.policy_loss import LossConfig
from recipe_arena.stages import rlvr
from recipe_arena.staleness import SharedQuantParams
from recipe_arena.wiring import LearnerSettings, advantage_hook, make_learner
from tests.test_config_reach import _same


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
