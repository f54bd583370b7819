"""The package sets the OpenMP wait policy before torch can load the OpenMP runtime.

The runtime reads OMP_WAIT_POLICY once, when torch is first imported, so the default must
be in the environment by then: importing ``recipe_arena`` (the first import of the CLI
and of every module of the package) sets it and imports no torch. A user's own value is
kept."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = (
    "import os, sys; import recipe_arena; "
    "print(os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules)"
)


def _probe(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if env_value is not None:
        env["OMP_WAIT_POLICY"] = env_value
    return subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()


def test_import_sets_passive_wait_policy_before_torch_loads() -> None:
    assert _probe(None) == "PASSIVE False"


def test_a_users_wait_policy_is_kept() -> None:
    assert _probe("ACTIVE") == "ACTIVE False"
