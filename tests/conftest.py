"""Shared test setup. The OpenMP wait policy must be in the environment before any test
module imports torch (recipe_arena/__init__.py sets the same default for the CLI); the
CLI subprocesses the tests start inherit it."""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
