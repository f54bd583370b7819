"""A module imported on its first attribute access.

The strategy modules (advantages, loss, staleness, length control) hold the parameter
models of the run config next to the functions that use them. Every command reads that
config (``--help``, ``--cfg job``, ``--dry-run``, a config error, ``verify``), and
importing torch costs seconds of CPU, though only the functions, which run in training,
need it. Those modules therefore import ``torch`` from here: ``LazyModule("torch")`` at
run time, the real module for type checkers::

    from recipe_arena.core.lazy import torch

Only attribute access at call time may use it: a module-level ``torch.x`` outside an
annotation would import torch at once (``tests/test_config.py`` checks that reading a
config imports no torch).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any


class LazyModule:
    """Stands for the module ``name`` until an attribute is read, then imports it; the
    attribute is kept on this object, so later reads cost an ordinary lookup."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # copy, pickle and inspect probe dunders: not the module's
            raise AttributeError(attr)
        value = getattr(importlib.import_module(self._name), attr)
        setattr(self, attr, value)
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


if TYPE_CHECKING:
    import torch as torch
else:
    torch = LazyModule("torch")
