"""Shared test setup. The OpenMP wait policy and thread count must be in the environment
before any test module imports torch (recipe_arena/__init__.py sets the same wait policy
for the CLI); the CLI subprocesses the tests start inherit both."""

import os

import pytest

pytest_plugins = ("tests.hostile_tally",)  # counts of hostile attempts per boundary

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
"""pytest-xdist's worker count (set in each worker before this file loads); 0 without
xdist."""
if _WORKERS:
    # The workers share the cores, as `recipe-arena compare` does its parallel arms:
    # each worker, and each recipe run it starts, gets cores / workers OpenMP threads (at
    # least 1), where each would otherwise start a team as wide as the machine. On 2
    # cores with 2 workers the suite took 191 s and 317 s of CPU against 212 s and 358 s
    # (docs/results.md, "Time of `make test`"). A value set by the user is kept.
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // _WORKERS)))

FIRST = ("tests/test_recipe_smoke.py",)
"""Test files that run first: the recipe smoke runs take 30-80 s each on 2 cores, ten
times most tests. Under ``pytest -n N`` (``make test``) the workers take tests in this
order, so the long ones start at once and the short ones fill in beside them, rather
than one long run starting last and keeping the suite open alone."""

SMOKE_ORDER = ("olmo3_rl_zero", "olmo3_think")
"""Among the smoke runs, these two first: the first to start trains the smoke base model
every recipe shares (recipes/budget/smoke.yaml), the others find it in the cache."""


def _rank(item: pytest.Item) -> tuple[int, int]:
    """(0, order among the smoke runs) for a ``FIRST`` file's test, else (1, 0)."""
    if not item.nodeid.startswith(FIRST):
        return (1, 0)
    recipe = item.callspec.params.get("recipe") if hasattr(item, "callspec") else None
    return (0, SMOKE_ORDER.index(recipe) if recipe in SMOKE_ORDER else len(SMOKE_ORDER))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run ``FIRST`` files first (stable: the rest keep their order)."""
    items.sort(key=_rank)
