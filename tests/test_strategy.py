"""Registries are built from their packages: each strategy module declares its entry
(``STRATEGY``) and the axis package collects every module's (``strategy.collect``)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

from recipe_arena.strategy import Strategy, collect

AXES = ("advantages", "staleness", "length_control", "policy_loss")


@pytest.mark.parametrize("axis", AXES)
def test_each_axis_registry_holds_exactly_its_modules_entries(axis: str) -> None:
    """Every module of the package that defines ``STRATEGY`` is in the registry, under
    its parameter model's ``name``; nothing else is (base modules define none)."""
    package = importlib.import_module(f"recipe_arena.{axis}")
    registry = next(v for k, v in vars(package).items() if k.isupper() and isinstance(v, dict))
    declared = {}
    for info in pkgutil.iter_modules(package.__path__):
        entry = getattr(
            importlib.import_module(f"{package.__name__}.{info.name}"), "STRATEGY", None
        )
        if entry is not None:
            declared[entry.params.model_fields["name"].default] = entry
    assert registry == declared and registry


def _package(root: Path, name: str, modules: dict[str, str]) -> str:
    """A real package ``name`` under ``root`` with the given module sources."""
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for mod, source in modules.items():
        (pkg / f"{mod}.py").write_text(source)
    return name


ENTRY = """
from typing import Literal
from recipe_arena.strategy import Strategy, StrategyParams

class P(StrategyParams):
    name: Literal["{name}"] = "{name}"

def fn(inp, params):
    return (inp, params.name)

STRATEGY = Strategy(P, fn)
"""


def test_collect_finds_declared_entries_and_refuses_a_name_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package with modules a (entry "alpha"), b (entry "beta") and helpers (no
    entry): the registry is {alpha, beta}, in module order. A second module naming
    "alpha" makes collecting fail, naming the key."""
    monkeypatch.syspath_prepend(str(tmp_path))
    ok = _package(
        tmp_path,
        "axis_ok",
        {"a": ENTRY.format(name="alpha"), "b": ENTRY.format(name="beta"), "helpers": "X = 1\n"},
    )
    registry = collect(ok)
    assert list(registry) == ["alpha", "beta"]
    assert all(isinstance(e, Strategy) for e in registry.values())
    assert registry["beta"].fn(3, registry["beta"].params()) == (3, "beta")
    twice = _package(
        tmp_path, "axis_twice", {"a": ENTRY.format(name="alpha"), "c": ENTRY.format(name="alpha")}
    )
    with pytest.raises(ValueError, match="two strategies are named 'alpha'"):
        collect(twice)
    for name in [m for m in sys.modules if m.startswith(("axis_ok", "axis_twice"))]:
        monkeypatch.delitem(sys.modules, name)
