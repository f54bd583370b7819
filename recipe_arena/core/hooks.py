"""The extension points of the actor, the loop and the learner: the hooks a strategy
provides and the core calls, and the values that pass through them.

The core knows no strategy by name. A strategy's module supplies the hooks it needs
(``strategy.Strategy``: ``actor_hooks``, ``learner_hooks``), and the composition root
(``recipe_arena.wiring``) builds them from the config and hands them to the core:

    actor     before sampling     ``ActorHooks.engine_weights``: the weights the engine
                                  samples with, from the trainer's (shared quantisation)
              group started       ``ActorHooks.before_sampling``: a ticket for the group
              group finished      ``ActorHooks.on_group_finished``: rewards, which
                                  rollouts to keep, metrics (length control)
              group done          ``ActorHooks.on_group_done``: the group as it leaves
              on update           ``ActorHooks.on_update``: a weight update landed
              on batch closed     ``ActorHooks.on_batch_closed``: the learner closed its
                                  batch (discard-early-short's window and quota)
    loop      advantages          ``AdvantageFn``: per-token advantages of a batch
    learner   forward wrappers    ``LearnerHooks.forward``: what surrounds the trainer's
                                  forward (routing replay, fake-quantised weights)
              loss terms          ``LearnerHooks.loss``: staleness weights and mask, then
                                  the policy loss, from the logprobs
              on update           ``LearnerHooks.on_update``: metrics after a step
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

    from recipe_arena.core.types import LearnerBatch, RolloutGroup
    from recipe_arena.data.schema import PromptRow


# ----------------------------------------------------------------------------- advantages
@dataclass(frozen=True)
class AdvantageInput:
    """What the advantage hook sees: a learner batch's rewards, groups and tokens.

    In: each row's reward, the group (prompt) it belongs to, the completion-token mask,
    the engine's behaviour logprobs and, when a teacher scored the rollouts (on-policy
    distillation), the teacher's logprobs of the sampled tokens."""

    rewards_B: torch.Tensor
    """float32, the verifier reward of each row's rollout (unscaled)."""
    group_B: torch.Tensor
    """int64, index of each row's group: rows of one prompt's G rollouts share it."""
    mask_BL: torch.Tensor
    """1 on completion tokens."""
    behavior_logprobs_BL: torch.Tensor
    """log pi_behavior of each sampled token (the student's, in distillation)."""
    teacher_logprobs_BL: torch.Tensor | None = None
    """A teacher's log-probability of each sampled token; None when no teacher scored."""
    teacher_B: tuple[str, ...] | None = None
    """The name of the teacher that scored each row (per-teacher metrics); None when no
    teacher scored."""


@dataclass(frozen=True)
class AdvantageResult:
    advantages_BL: torch.Tensor
    """Per-token advantages (0 off the completion mask)."""
    metrics: dict[str, float]


AdvantageFn = Callable[[AdvantageInput], AdvantageResult]
"""The loop's advantage hook: the configured advantage strategy, bound to its params."""


# ----------------------------------------------------------------------------- actor
@dataclass(frozen=True)
class RunFacts:
    """What a strategy's hooks may read of the run besides their own parameters."""

    max_new_tokens: int
    """rl.max_new_tokens: the decode steps a full-length response takes."""
    max_staleness: int
    """rl.max_staleness: the learner drops a group whose oldest token lags more."""
    batch_share: int | None = None
    """The groups of each batch this actor supplies, ceil(N / actors); None: not known
    (an actor used outside the loop)."""
    refill_equal_rewards: bool = False
    """Whether a group whose rewards are all equal is replaced instead of counting toward
    its batch (rl.zero_gradient_filter with rl.active_sampling, ``core.sampling``)."""


@dataclass(frozen=True)
class FinishedGroup:
    """A group whose G completions are back and scored, before it leaves the actor."""

    row: PromptRow
    seed: int
    """The draw's sampling seed."""
    rewards_G: torch.Tensor
    """float32, the verifier's scores."""
    lengths_G: torch.Tensor
    """int64, completion tokens of each rollout."""
    finish_seconds_G: torch.Tensor
    """float32, seconds from submission to each rollout's last token."""
    start_versions_G: torch.Tensor
    """int64, policy version of each rollout's first token (-1 for an empty rollout)."""
    end_versions_G: torch.Tensor
    """int64, policy version of each rollout's last token (-1 for an empty rollout)."""
    start_steps: tuple[int | None, ...]
    """The engine's decode-step count at each rollout's first token (None where the
    engine does not count them)."""
    engine_version: int
    """The engine's policy version when the group was finished."""
    ticket: Any = None
    """What ``ActorHooks.before_sampling`` returned when the group was submitted."""


@dataclass(frozen=True)
class GroupVerdict:
    """What the group-finished hook decides: the rewards the learner sees, which
    rollouts go on, and what it counted."""

    rewards_G: torch.Tensor
    keep_G: torch.Tensor
    """bool, rollouts that go on to the learner."""
    metrics: dict[str, float]


WeightsHook = Callable[["Mapping[str, torch.Tensor]"], "Mapping[str, torch.Tensor]"]


@dataclass(frozen=True)
class ActorHooks:
    """The hooks of one actor (module docstring); None: the hook does nothing. A hook
    may keep state (one ``ActorHooks`` per actor); the learner's thread calls
    ``on_update`` and ``on_batch_closed`` while the actor's calls the others."""

    engine_weights: WeightsHook | None = None
    """Before sampling: the weights the engine runs, from the trainer's; None: the same."""
    before_sampling: Callable[[], Any] | None = None
    """A group is submitted: its ticket, handed back in ``FinishedGroup.ticket``."""
    on_group_finished: Callable[[FinishedGroup], GroupVerdict] | None = None
    """None: the verifier's rewards, every rollout kept."""
    on_group_done: Callable[[FinishedGroup, RolloutGroup], None] | None = None
    """The group as it goes to the learner (its kept rollouts and final rewards)."""
    on_update: Callable[[int, int | None], None] | None = None
    """A weight update landed: (new version, the engine's decode-step count or None)."""
    on_batch_closed: Callable[[int | None], None] | None = None
    """The learner closed the batch of the actor's current version: (the engine's
    decode-step count or None)."""
    state: Callable[[int | None], dict[str, Any]] | None = None
    """What a checkpoint keeps of the hooks' state, given the engine's decode-step count
    (a resumed run's engine counts from 0 again, so steps are kept relative to it); None:
    the hooks keep nothing that a resumed run needs."""
    load_state: Callable[[dict[str, Any], int | None], None] | None = None
    """Restore what ``state`` returned, in a resumed run, given its engine's count."""


# ----------------------------------------------------------------------------- learner
@dataclass(frozen=True)
class LossArgs:
    """What the loss hook sees: a (micro-)batch and its logprobs under the weights."""

    batch: LearnerBatch
    logprobs_BL: torch.Tensor
    """log pi_theta (current trainer forward, carries gradient)."""
    old_logprobs_BL: torch.Tensor
    """log pi_old: the weights before this step (no gradient)."""
    ref_logprobs_BL: torch.Tensor | None
    """The reference model's, when the learner keeps one (``LearnerSettings.reference``)."""
    learner_version: int


@dataclass(frozen=True)
class LossTerms:
    """The loss of a (micro-)batch as the learner back-propagates it."""

    loss: torch.Tensor
    """numerator / max(count, 1): the loss of this batch alone."""
    numerator: torch.Tensor
    """A sum over rows: micro-batches' numerators add up (``policy_loss.base``)."""
    count: float
    """The normalisation's count over this batch's rows (a sum over rows too)."""
    metrics: dict[str, float]


ForwardWrapper = Callable[
    ["nn.Module", "LearnerBatch"], AbstractContextManager["Mapping[str, torch.Tensor] | None"]
]
"""Surrounds one trainer forward of ``model`` over ``batch``; what it yields (parameter
name -> tensor, or None) replaces the model's parameters in that forward."""


@dataclass(frozen=True)
class ForwardHooks:
    """What a strategy adds to the learner besides its loss terms."""

    forward: tuple[ForwardWrapper, ...] = ()
    on_update: Callable[[nn.Module], dict[str, float]] | None = None


@dataclass(frozen=True)
class LearnerHooks:
    """The hooks of the learner (module docstring)."""

    loss: Callable[[LossArgs], LossTerms]
    """Staleness weights and mask, then the policy loss over them."""
    forward: tuple[ForwardWrapper, ...] = ()
    """Entered in order around every forward (policy and reference)."""
    on_update: Callable[[nn.Module], dict[str, float]] | None = None
    """Metrics of the updated weights, after each step."""
