"""Every setting of the RL side's strategies and policy loss changes what it names.

For each field of every strategy's parameter model (advantage, staleness, length
control) and of the policy loss, the component the field names is run once with the
default and once with the field changed, and its output must differ. Each table below
must list every field of its model, so a field added without a consumer fails here. The
RL section's fields are checked in test_config_reach_rl.py, the rewards section's (chat's
rubric tournament, label flip) in test_config_reach_rewards.py.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

import pytest
import torch
from pydantic import BaseModel

from recipe_arena.advantages import (
    ADVANTAGES,
    AdvantageInput,
    compute_advantages,
)
from recipe_arena.core.hooks import RunFacts
from recipe_arena.length_control import (
    LENGTH_CONTROL,
    apply_length_control,
)
from recipe_arena.length_control.discard_early_short import WindowedInput
from recipe_arena.policy_loss import (
    POLICY_LOSS,
    LossConfig,
    OlmoParams,
    PolicyLossInput,
    apply_policy_loss,
)
from recipe_arena.staleness import (
    STALENESS,
    StalenessInput,
    apply_staleness,
)

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
