"""What every strategy axis shares: the base of a strategy's parameter model, one
registry entry, and the discriminated union of an axis's parameter models that the
config holds.

A strategy is a pure function ``fn(inp, params) -> result`` of a frozen input dataclass
and its own parameter model (a pydantic model in the strategy's module, whose ``name``
is its registry key). An axis's registry is a plain dict literal of ``Strategy``
entries; ``params_union`` turns it into the config type (prime-rl's loss config is the
pattern), so a new strategy is its module, one registry line, one YAML file under
``recipes/<axis>/`` and its tests, and no mapper elsewhere can drop one of its values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field

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
    """Base of every strategy's parameter model: frozen, unknown keys rejected, finite."""

    model_config = STRICT_CONFIG
    name: str
    """The strategy's key in its axis registry; the config union tells models apart by it."""


@dataclass(frozen=True)
class Strategy(Generic[InT, OutT]):
    """One registry entry: the parameter model and the pure function that reads it."""

    params: type[StrategyParams]
    fn: Callable[[InT, Any], OutT]


def params_union(registry: Mapping[str, Strategy[Any, Any]]) -> Any:
    """The config type of an axis: its strategies' parameter models, told apart by
    ``name``. Checks that each entry's key is its model's ``name`` default."""
    for key, entry in registry.items():
        default = entry.params.model_fields["name"].default
        if default != key:
            raise ValueError(f"registry key {key!r} names a model whose name is {default!r}")
    members = tuple(entry.params for entry in registry.values())
    return Annotated[Union[members], Field(discriminator="name")]  # noqa: UP007


def run_strategy(
    registry: Mapping[str, Strategy[InT, OutT]], params: StrategyParams, inp: InT
) -> OutT:
    """Apply the strategy ``params`` names (its registry entry's function) to ``inp``."""
    entry = registry.get(params.name)
    if entry is None or not isinstance(params, entry.params):
        raise ValueError(f"strategy {params.name!r} is not in this registry: {sorted(registry)}")
    return entry.fn(inp, params)
