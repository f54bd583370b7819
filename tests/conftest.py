"""Shared test setup. The OpenMP wait policy must be in the environment before any test
module imports torch (recipe_arena/__init__.py sets the same default for the CLI); the
CLI subprocesses the tests start inherit it."""

import os

import pytest

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

FIRST = ("tests/test_recipe_smoke.py",)
"""Test files that run first: the recipe smoke runs take 30-80 s each on 2 cores, ten
times most tests. Under ``pytest -n N`` (``make test``) the workers take tests in this
order, so the long ones start at once and the short ones fill in beside them, rather
than one long run starting last and keeping the suite open alone."""

SMOKE_ORDER = ("olmo3_rl_zero", "olmo3_think")
"""Among the smoke runs, these two first: each trains a smoke base model of its own
(RL-Zero's has plain documents), so with two workers the two train side by side, and
the other recipes, each next in line on one worker, find olmo3_think's in the cache."""


def _rank(item: pytest.Item) -> tuple[int, int]:
    """(0, order among the smoke runs) for a ``FIRST`` file's test, else (1, 0)."""
    if not item.nodeid.startswith(FIRST):
        return (1, 0)
    recipe = item.callspec.params.get("recipe") if hasattr(item, "callspec") else None
    return (0, SMOKE_ORDER.index(recipe) if recipe in SMOKE_ORDER else len(SMOKE_ORDER))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run ``FIRST`` files first (stable: the rest keep their order)."""
    items.sort(key=_rank)
