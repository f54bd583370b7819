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
"""Test files that run first in one process (``-n 0``): the recipe smoke runs are ten
times most tests, so an interrupted run has shown the most of them."""

SMOKE_ORDER = ("olmo3_rl_zero", "olmo3_think")
"""Among the smoke runs, these two first: the first to start trains the smoke base model
every recipe shares (recipes/budget/smoke.yaml), the others find it in the cache."""

HEAVY: tuple[tuple[str, bool], ...] = (
    ("tests/test_recipe_smoke.py::test_recipe_smoke_run[olmo3_rl_zero]", True),
    ("tests/test_recipe_smoke.py::test_recipe_smoke_run[kimi_k3]", True),
    ("tests/test_recipe_smoke.py::test_recipe_smoke_run[deepseek_v4_flash]", True),
    ("tests/test_recipe_smoke.py::test_recipe_smoke_run[olmo3_think]", True),
    ("tests/test_loss_variant_arms.py::test_new_options_run_as_arms[seq_mask_tis", True),
    ("tests/test_compare.py::test_report_of_a_comparison_directory", False),
    ("tests/test_log.py::test_checkpoint_bars_only_with_verbose", False),
    ("tests/test_sft.py::test_run_sft_lowers_loss_and_writes_a_checkpoint", False),
    ("tests/test_loss_variant_arms.py::test_new_options_run_as_arms[m2po", True),
    ("tests/test_loss_variant_arms.py::test_new_options_run_as_arms[icepop", True),
    ("tests/test_compare.py::test_report_of_loose_run_directories", False),
    ("tests/test_base_stage.py::test_micro_judge_trains_in_the_background", False),
    ("tests/test_eval_dtype.py::test_evaluate_model_in_float32_under_a_bfloat16_engine", True),
    ("tests/test_study_files.py::test_a_committed_study_report_renders_again", False),
)
"""The default suite's longest tests (test id prefixes), longest first (each 5-50 s on
2 cores, quiet; most tests take under a second: docs/results.md, "Time of `make test`"),
and whether each needs the smoke base model (recipes/budget/smoke.yaml), which the first
entry trains on an empty cache. Under ``pytest -n N`` they are dealt out in turn, one to
each worker and back (``_deal``), so the workers start with equal shares of them."""


def _heavy(item: pytest.Item) -> int | None:
    """The position of ``item`` in ``HEAVY``, or None."""
    for i, (prefix, _) in enumerate(HEAVY):
        if item.nodeid.startswith(prefix):
            return i
    return None


def _rank(item: pytest.Item) -> tuple[int, int]:
    """(0, order among the smoke runs) for a ``FIRST`` file's test, else (1, 0)."""
    if not item.nodeid.startswith(FIRST):
        return (1, 0)
    recipe = item.callspec.params.get("recipe") if hasattr(item, "callspec") else None
    return (0, SMOKE_ORDER.index(recipe) if recipe in SMOKE_ORDER else len(SMOKE_ORDER))


def _deal(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """The order for ``workers`` work-stealing processes (``pytest_xdist_make_scheduler``):
    that scheduler gives the first worker the first len // workers tests, the next the
    next share, and so on, and a worker that runs out takes half of the longest queue
    left. So each share starts with its ``HEAVY`` tests, dealt in turn (worker 0, 1, ..,
    N-1, N-1, .., 0: the longest first, the shares' totals close), and is filled up with
    the other tests in their collected order. In every share but the one that trains the
    smoke base model, the tests that do not need it come first: they run while it is
    trained instead of waiting for it."""
    heavy = sorted((i for i in items if _heavy(i) is not None), key=lambda i: _heavy(i) or 0)
    light = [i for i in items if _heavy(i) is None]
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for n, item in enumerate(heavy):
        turn, k = divmod(n, workers)
        shares[k if turn % 2 == 0 else workers - 1 - k].append(item)
    for share in shares[1:]:
        share.sort(key=lambda i: HEAVY[_heavy(i) or 0][1])  # stable: base-free first
    left = len(items)
    for w, share in enumerate(shares):
        size = left // (workers - w)  # the scheduler's first split
        left -= size
        fill = max(0, size - len(share))
        share.extend(light[:fill])
        light = light[fill:]
    shares[-1].extend(light)
    return [i for share in shares for i in share]


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected: shares of what runs
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``pytest -n N`` the order ``_deal`` makes; in one process, ``FIRST`` files
    first (stable: the rest keep their order)."""
    if _WORKERS > 1:
        items[:] = _deal(items, _WORKERS)
    else:
        items.sort(key=_rank)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown without the plugin
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Work stealing for ``pytest -n N`` (N > 1) unless ``--dist`` names another mode:
    the default scheduler (``load``) hands the first quarter of the suite to the workers
    in blocks, so one worker took every smoke run in turn and the other finished
    early; with ``_deal``'s order each worker starts with its share of the long tests and
    an idle one takes tests from the other's queue."""
    if config.getoption("dist") != "load" or config.getoption("numprocesses", 0) in (0, 1):
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)
