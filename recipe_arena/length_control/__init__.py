"""Length-control strategies, one registry (plain dict)."""

from __future__ import annotations

from recipe_arena.length_control.base import LengthFn, LengthInput, LengthResult
from recipe_arena.length_control.none import no_length_control

LENGTH_CONTROL: dict[str, LengthFn] = {
    "none": no_length_control,
}


def get_length_control(name: str) -> LengthFn:
    if name not in LENGTH_CONTROL:
        raise ValueError(
            f"length control {name!r} is not implemented; available: {sorted(LENGTH_CONTROL)}"
        )
    return LENGTH_CONTROL[name]


__all__ = ["LENGTH_CONTROL", "LengthFn", "LengthInput", "LengthResult", "get_length_control"]
