"""The composition root of RL: the config's strategies become the core's hooks.

The core (``recipe_arena.core``) knows no strategy, config section, engine, scorer or
teacher by name; it calls the hooks and factories it is handed (``core.hooks``). This
module builds them from the configuration, once, for every caller (the RLVR stage, the
distillation stages, the benchmarks):

- the learner's loss terms (``strategy_loss``: the staleness strategy, then the policy
  loss over the mask it returned), its forward wrappers and after-update metrics (from
  the staleness strategy's registry entry);
- each actor's engine, scorer, teachers and hooks (the staleness strategy's weights
  for the engine, the length-control strategy's group hooks, the spurious-reward
  control, the noisy verifiers' label flips);
- the loop's advantage hook.

A strategy contributes hooks by declaring them in its registry entry
(``strategy.Strategy``: ``actor_hooks``, ``learner_hooks``), so nothing here names one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recipe_arena.advantages import compute_advantages
from recipe_arena.config import EngineConfig, RLConfig, RunConfig
from recipe_arena.config_rewards import LabelFlipConfig, RewardsConfig
from recipe_arena.core.actor import Actor
from recipe_arena.core.actor import ActorSettings as CoreActorSettings
from recipe_arena.core.hooks import (
    ActorHooks,
    AdvantageFn,
    FinishedGroup,
    ForwardHooks,
    GroupVerdict,
    LearnerHooks,
    LossArgs,
    LossTerms,
    RunFacts,
)
from recipe_arena.core.learner import Learner
from recipe_arena.core.learner import LearnerSettings as CoreLearnerSettings
from recipe_arena.core.loop import LoopSettings
from recipe_arena.length_control import LENGTH_CONTROL, apply_length_control
from recipe_arena.length_control.base import length_input
from recipe_arena.policy_loss import (
    LossConfig,
    PolicyLossInput,
    PolicyLossResult,
    apply_policy_loss,
)
from recipe_arena.staleness import STALENESS, StalenessInput, apply_staleness
from recipe_arena.staleness.mismatch import correction_metrics
from recipe_arena.strategy import StrategyParams

if TYPE_CHECKING:
    import torch
    from torch import nn

    from recipe_arena.core.types import LearnerBatch


def _default(axis: str) -> Any:
    """The config's default parameters of a strategy axis."""
    return RunConfig.model_fields[axis].get_default()


# ----------------------------------------------------------------------------- loop
def advantage_hook(params: StrategyParams) -> AdvantageFn:
    """The loop's advantage hook: the strategy ``params`` names, bound to them."""
    return partial(compute_advantages, params)


def loop_settings(cfg: RunConfig, pad_id: int) -> LoopSettings:
    """The loop reads the RL section and the advantage strategy as configured."""
    return LoopSettings(
        rl=cfg.rl, advantages=advantage_hook(cfg.advantage), seed=cfg.seed, pad_id=pad_id
    )


# ----------------------------------------------------------------------------- learner
def strategy_loss(
    staleness: StrategyParams,
    loss: LossConfig,
    constant_len: int,
    learner_version: int,
    batch: LearnerBatch,
    logp_BL: torch.Tensor,
    old_BL: torch.Tensor,
    ref_BL: torch.Tensor | None,
    policy: StrategyParams | None = None,
) -> tuple[PolicyLossResult, dict[str, float]]:
    """The staleness strategy, then the policy loss ``policy`` names (None: the
    default, OlmoRL's) over the mask it returned, from logprobs already computed (the
    engine-vs-trainer metrics are the learner's: once per batch, not per micro-batch).
    Returns the policy loss's result and the metrics: the policy loss's, the staleness
    strategy's, and the mismatch the correction saw and what it masked and clipped
    (``staleness.mismatch``; per micro-batch too, the learner logs the whole batch's)."""
    st = apply_staleness(
        staleness,
        StalenessInput(
            logprobs_BL=logp_BL,
            old_logprobs_BL=old_BL,
            behavior_logprobs_BL=batch.behavior_logprobs_BL,
            advantages_BL=batch.advantages_BL,
            mask_BL=batch.mask_BL,
            versions_BL=batch.versions_BL,
            learner_version=learner_version,
        ),
    )
    out = apply_policy_loss(
        _default("policy_loss") if policy is None else policy,
        PolicyLossInput(
            logprobs_BL=logp_BL,
            old_logprobs_BL=old_BL,
            advantages_BL=batch.advantages_BL,
            mask_BL=st.mask_BL,
            cfg=loss,
            constant_len=constant_len,
            token_weights_BL=st.token_weights_BL,
            extra_loss_BL=st.extra_loss_BL,
            ref_logprobs_BL=ref_BL,
        ),
    )
    metrics = {**out.metrics, **st.metrics}
    metrics.update(
        correction_metrics(
            old_BL, batch.behavior_logprobs_BL, batch.mask_BL, st.token_weights_BL, st.mask_BL
        )
    )
    return out, metrics


@dataclass(frozen=True)
class LearnerSettings:
    """The learner as configured: the RL section, the shared loss settings, the
    staleness strategy and the policy loss, where it runs."""

    rl: RLConfig = field(default_factory=RLConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    staleness: StrategyParams = field(default_factory=lambda: _default("staleness"))
    policy_loss: StrategyParams = field(default_factory=lambda: _default("policy_loss"))
    device: str = "cpu"
    """torch device of the model, its reference and the optimiser state (``rl.device``)."""
    bf16: bool = False
    """Forwards under bfloat16 autocast (``rl.bf16``)."""


def learner_hooks(s: LearnerSettings) -> LearnerHooks:
    """The loss terms of ``strategy_loss`` and the staleness strategy's own hooks."""

    def loss(args: LossArgs) -> LossTerms:
        out, metrics = strategy_loss(
            s.staleness,
            s.loss,
            s.rl.max_new_tokens,
            args.learner_version,
            args.batch,
            args.logprobs_BL,
            args.old_logprobs_BL,
            args.ref_logprobs_BL,
            s.policy_loss,
        )
        return dataclasses.replace(out, metrics=metrics)

    make = STALENESS[s.staleness.name].learner_hooks
    extra = make(s.staleness) if make is not None else ForwardHooks()
    return LearnerHooks(loss=loss, forward=extra.forward, on_update=extra.on_update)


def make_learner(
    model: nn.Module,
    settings: LearnerSettings | None = None,
    version: int = 0,
    ref_model: nn.Module | None = None,
) -> Learner:
    """The core learner over ``model`` under ``settings`` (defaults: the config's); a
    KL weight makes it keep a reference (``ref_model``, else a copy of ``model``)."""
    s = settings or LearnerSettings()
    core = CoreLearnerSettings(
        rl=s.rl,
        hooks=learner_hooks(s),
        reference=s.loss.kl_beta > 0,
        device=s.device,
        bf16=s.bf16,
    )
    return Learner(model, core, version=version, ref_model=ref_model)


def learner_settings(cfg: RunConfig) -> LearnerSettings:
    """The learner reads the RL section, the loss, the staleness strategy and the policy
    loss as configured."""
    import torch

    device = cfg.device_for("learner")
    bf16 = cfg.rl.bf16 if cfg.rl.bf16 is not None else torch.device(device).type == "cuda"
    bf16 = bf16 and not cfg.rl.fp16  # rl.fp16: float16 autocast in its place
    return LearnerSettings(
        rl=cfg.rl,
        loss=cfg.loss,
        staleness=cfg.staleness,
        policy_loss=cfg.policy_loss,
        device=device,
        bf16=bf16,
    )


# ----------------------------------------------------------------------------- actors
@dataclass(frozen=True)
class ActorSettings:
    """An actor as configured: sampling (group_size, temperature, max_new_tokens,
    max_groups_in_engine and prompt_template as in ``core.actor.ActorSettings``), the
    strategies it applies, the controls."""

    group_size: int
    temperature: float
    max_new_tokens: int
    max_groups_in_engine: int = 8
    length_control: StrategyParams = field(default_factory=lambda: _default("length_control"))
    """The length-control strategy's parameters (``length_control``)."""
    staleness: StrategyParams = field(default_factory=lambda: _default("staleness"))
    """The staleness strategy's parameters: its actor hooks, if it has any (shared
    quantisation's weights for the engine)."""
    max_staleness: int = field(default_factory=lambda: RLConfig().max_staleness)
    """rl.max_staleness, which length control may take into account."""
    prompt_template: str = "chat"
    """How a row's messages become prompt tokens (``data.templates``)."""
    spurious_p: float | None = None
    """Spurious-reward control: when set, every rollout's reward is replaced by a seeded
    random bit that is 1 with this probability, independent of the response
    (``rewards.spurious``); None trains on the verifiers' scores."""
    label_flip: LabelFlipConfig = field(default_factory=LabelFlipConfig)
    """Noisy verifiers: each rollout's reward in its domains flipped, r -> 1 - r, with
    probability p (``rewards.label_flip``); p 0 trains on the verifiers' scores."""
    window_quota: int | None = None
    """At max_staleness 0: the groups of each batch this actor supplies, ceil(N / actors)
    (discard-early-short keeps a quota of them per generation window); None: none."""
    refill_equal_rewards: bool = field(
        default_factory=lambda: RLConfig().zero_gradient_filter and RLConfig().active_sampling
    )
    """Whether a group whose rewards are all equal is replaced instead of counting toward
    its batch (rl.zero_gradient_filter with rl.active_sampling, ``core.sampling``)."""
    teachers: dict[str, str] | None = None
    """On-policy distillation: route -> teacher checkpoint (``distill.teachers``); each
    group's completions are scored by its prompt's teacher and carry its logprobs.
    None: no teacher."""


def _length_hooks(params: StrategyParams, facts: RunFacts) -> ActorHooks:
    """The length-control strategy's actor hooks: its own, or its function applied to
    each finished group."""
    make = LENGTH_CONTROL[params.name].actor_hooks
    if make is not None:
        return make(params, facts)
    return ActorHooks(on_group_finished=lambda g: apply_length_control(params, length_input(g)))


def _spurious(
    p: float, hook: Callable[[FinishedGroup], GroupVerdict]
) -> Callable[[FinishedGroup], GroupVerdict]:
    """The spurious-reward control before ``hook``: each rollout's reward a seeded
    random bit, 1 with probability ``p`` (``rewards.spurious``)."""
    from recipe_arena.rewards.spurious import spurious_rewards

    def replaced(g: FinishedGroup) -> GroupVerdict:
        n = g.rewards_G.shape[0]
        return hook(dataclasses.replace(g, rewards_G=spurious_rewards(g.seed, n, p)))

    return replaced


def _label_flip(
    cfg: LabelFlipConfig, hook: Callable[[FinishedGroup], GroupVerdict]
) -> Callable[[FinishedGroup], GroupVerdict]:
    """Noisy verifiers before ``hook``: a group of ``cfg.domains`` has each reward
    flipped with probability ``cfg.p``, seeded by its draw (``rewards.label_flip``). The
    verdict's metrics gain ``reward/label_flips`` (rollouts flipped) and
    ``reward/label_flip_frac`` (their share of the group), for groups of those domains."""
    from recipe_arena.rewards.label_flip import flip_labels

    def flipped(g: FinishedGroup) -> GroupVerdict:
        if g.row.domain not in cfg.domains:
            return hook(g)
        rewards_G, n = flip_labels(g.seed, g.rewards_G, cfg.p)
        verdict = hook(dataclasses.replace(g, rewards_G=rewards_G))
        counted = {"reward/label_flips": float(n), "reward/label_flip_frac": n / len(rewards_G)}
        return dataclasses.replace(verdict, metrics={**verdict.metrics, **counted})

    return flipped


def _keep_all(g: FinishedGroup) -> GroupVerdict:
    """The group as it is: its rewards, every rollout kept (no group-finished hook)."""
    import torch

    return GroupVerdict(g.rewards_G, torch.ones(len(g.rewards_G), dtype=torch.bool), {})


def _replaces_rewards(s: ActorSettings) -> bool:
    """Whether a control trains on rewards other than the verifiers' scores."""
    return s.spurious_p is not None or s.label_flip.p > 0


def actor_hooks(s: ActorSettings) -> ActorHooks:
    """One actor's hooks: the length-control strategy's (a state of their own per
    actor), the staleness strategy's engine weights, the spurious-reward control, the
    noisy verifiers' label flips."""
    facts = RunFacts(
        max_new_tokens=s.max_new_tokens,
        max_staleness=s.max_staleness,
        batch_share=s.window_quota,
        refill_equal_rewards=s.refill_equal_rewards,
    )
    hooks = _length_hooks(s.length_control, facts)
    make = STALENESS[s.staleness.name].actor_hooks
    if make is not None:
        hooks = dataclasses.replace(hooks, engine_weights=make(s.staleness, facts).engine_weights)
    if s.spurious_p is not None and hooks.on_group_finished is not None:
        hooks = dataclasses.replace(
            hooks, on_group_finished=_spurious(s.spurious_p, hooks.on_group_finished)
        )
    if s.label_flip.p > 0:
        then = hooks.on_group_finished or _keep_all
        hooks = dataclasses.replace(hooks, on_group_finished=_label_flip(s.label_flip, then))
    return hooks


def make_actor(
    actor_id: int,
    model: Any,
    tokenizer: Any,
    engine_name: str,
    engine_cfg: EngineConfig,
    rewards_cfg: RewardsConfig,
    settings: ActorSettings,
    version: int = 0,
    scorer: Any = None,
) -> Actor:
    """The core actor over ``model`` (a module, or a checkpoint directory it loads):
    its engine, its scorer (``scorer`` shared, else one of its own), its teachers and
    its hooks, as configured."""
    from recipe_arena.engines import build_engine

    if isinstance(model, (str, Path)):  # Ray: each actor process loads its own copy
        from recipe_arena.models.factory import load_checkpoint

        model, tokenizer = load_checkpoint(model)
    hooks = actor_hooks(settings)
    engine = build_engine(engine_name, model, tokenizer, engine_cfg, version=version)
    if hooks.engine_weights is not None:  # the engine samples with what the hook makes
        engine.update_weights(hooks.engine_weights(model.state_dict()), version)
    if scorer is None:
        from recipe_arena.rewards import build_scorer

        scorer = build_scorer(rewards_cfg, shared=True)
    teachers = None
    if settings.teachers:
        from recipe_arena.distill.teachers import TeacherPool

        teachers = TeacherPool(settings.teachers, engine_cfg)
    core = CoreActorSettings(
        group_size=settings.group_size,
        temperature=settings.temperature,
        max_new_tokens=settings.max_new_tokens,
        max_groups_in_engine=settings.max_groups_in_engine,
        prompt_template=settings.prompt_template,
        keep_verifier_reward=_replaces_rewards(settings),
    )
    return Actor(actor_id, engine, tokenizer, scorer, core, hooks, version, teachers)


@dataclass(frozen=True)
class ActorSpec:
    """Everything an actor needs to build itself, in this process or another (a
    ``core.backends.ActorFactory``)."""

    checkpoint: str
    """Model checkpoint directory each actor loads (its starting weights)."""
    engine_name: str
    engine_cfg: EngineConfig
    rewards_cfg: RewardsConfig
    settings: ActorSettings
    version: int = 0

    def build(self, actor_id: int, scorer: Any = None) -> Actor:
        return make_actor(
            actor_id,
            self.checkpoint,
            None,
            self.engine_name,
            self.engine_cfg,
            self.rewards_cfg,
            self.settings,
            version=self.version,
            scorer=scorer,
        )


def actor_settings(cfg: RunConfig, teachers: dict[str, str] | None = None) -> ActorSettings:
    """The actors' settings; ``teachers`` (route -> checkpoint) makes them score every
    group with its prompt's teacher (on-policy distillation, ``distill.teachers``)."""
    rl = cfg.rl
    return ActorSettings(
        group_size=rl.group_size,
        temperature=rl.temperature,
        max_new_tokens=rl.max_new_tokens,
        # enough groups to fill the engine's batch: max_batch_size // G (at least one)
        max_groups_in_engine=max(1, cfg.engine.max_batch_size // rl.group_size),
        length_control=cfg.length_control,
        staleness=cfg.staleness,
        max_staleness=rl.max_staleness,
        # at max_staleness 0 each actor's share of the batch, counted as groups start
        window_quota=-(-rl.prompts_per_step // rl.num_actors) if rl.max_staleness == 0 else None,
        refill_equal_rewards=rl.zero_gradient_filter and rl.active_sampling,
        prompt_template=cfg.prompt_template,
        spurious_p=cfg.spurious_reward.p if cfg.spurious_reward.enabled else None,
        label_flip=cfg.rewards.label_flip,
        teachers=teachers,
    )


def actor_spec(
    cfg: RunConfig, checkpoint: Path, version: int, teachers: dict[str, str] | None = None
) -> ActorSpec:
    """What each actor builds itself from (the checkpoint as an absolute path: a Ray
    actor process may start elsewhere)."""
    return ActorSpec(
        checkpoint=str(Path(checkpoint).resolve()),
        engine_name=cfg.engine.name,
        engine_cfg=cfg.engine,
        rewards_cfg=cfg.rewards,
        settings=actor_settings(cfg, teachers),
        version=version,
    )
