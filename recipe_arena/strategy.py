"""What every strategy axis shares: the base of a strategy's parameter model, one
registry entry, the registry an axis package builds from its modules, and the
discriminated union of an axis's parameter models that the config holds.

A strategy is a pure function ``fn(inp, params) -> result`` of a frozen input dataclass
and its own parameter model (a pydantic model in the strategy's module, whose ``name``
is its registry key). Each strategy module declares its entry at module level,

    STRATEGY = Strategy(TISParams, truncated_importance_sampling)

and its axis package collects every module's entry (``collect``), so a new strategy is
its module, one YAML file under ``recipes/<axis>/`` and its tests; ``params_union``
turns the registry into the config type (prime-rl's loss config is the pattern), and no
mapper elsewhere can drop one of its values.

The axes (``advantages``, ``staleness``, ``length_control``, ``policy_loss``) sit above
the core: they import its types, the core imports none of them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from recipe_arena.core.hooks import ActorHooks, ForwardHooks, RunFacts

InT = TypeVar("InT")
OutT = TypeVar("OutT")

STRICT_CONFIG = ConfigDict(
    extra="forbid",
    frozen=True,
    validate_default=True,
    allow_inf_nan=False,
    use_attribute_docstrings=True,
)
"""Every config model's settings (``config.Strict``, the strategies' parameter models,
``LossConfig``): unknown keys fail, and no float anywhere may be NaN or infinite (a
timeout of inf never fires, a temperature of inf gives NaN losses); each field's
docstring becomes its description, which `recipe-arena run --help` prints."""


class StrategyParams(BaseModel):
    """Base of every strategy's parameter model: frozen, unknown keys rejected, finite.

    A field's ``examples`` (``Field(2.0, examples=[1.5])``) names a value other than
    its default that changes what the strategy does; ``tests/test_config_reach.py``
    runs the strategy with it (a bool, a Literal or a field that may be null needs
    none: the test picks the other value)."""

    model_config = STRICT_CONFIG
    name: str
    """The strategy's key in its axis registry; the config union tells models apart by it."""


@dataclass(frozen=True)
class Strategy(Generic[InT, OutT]):
    """One registry entry: the parameter model, the pure function that reads it, and the
    hooks the strategy adds to the actor and the learner beyond its function, if any
    (``core.hooks``; the composition root, ``recipe_arena.wiring``, installs them)."""

    params: type[StrategyParams]
    fn: Callable[[InT, Any], OutT]
    actor_hooks: Callable[[Any, RunFacts], ActorHooks] | None = None
    """(params, run facts) -> one actor's hooks; called once per actor (they may keep
    state)."""
    learner_hooks: Callable[[Any], ForwardHooks] | None = None
    """params -> the forward wrappers and after-update metrics of the learner."""


def params_union(registry: Mapping[str, Strategy[Any, Any]]) -> Any:
    """The config type of an axis: its strategies' parameter models, told apart by
    ``name``. Checks that each entry's key is its model's ``name`` default."""
    for key, entry in registry.items():
        default = entry.params.model_fields["name"].default
        if default != key:
            raise ValueError(f"registry key {key!r} names a model whose name is {default!r}")
    members = tuple(entry.params for entry in registry.values())
    return Annotated[Union[members], Field(discriminator="name")]  # noqa: UP007


def collect(package: str) -> dict[str, Strategy[Any, Any]]:
    """The registry of the axis package ``package``: the ``STRATEGY`` entry of each of its
    modules that declares one, keyed by the entry's ``name`` default, in module-name
    order (``pkgutil`` lists a package's modules sorted). Two modules naming the same
    key are an error."""
    registry: dict[str, Strategy[Any, Any]] = {}
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        module = importlib.import_module(f"{package}.{info.name}")
        entry = getattr(module, "STRATEGY", None)
        if not isinstance(entry, Strategy):
            continue
        key = entry.params.model_fields["name"].default
        if key in registry:
            raise ValueError(f"{package}: two strategies are named {key!r}")
        registry[key] = entry
    return registry


def run_strategy(
    registry: Mapping[str, Strategy[InT, OutT]], params: StrategyParams, inp: InT
) -> OutT:
    """Apply the strategy ``params`` names (its registry entry's function) to ``inp``."""
    entry = registry.get(params.name)
    if entry is None or not isinstance(params, entry.params):
        raise ValueError(f"strategy {params.name!r} is not in this registry: {sorted(registry)}")
    return entry.fn(inp, params)
