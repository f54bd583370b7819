"""The package sets the OpenMP wait policy before torch can load the OpenMP runtime.

The runtime reads OMP_WAIT_POLICY once, when torch is first imported, so the default must
be in the environment by then: importing ``recipe_arena`` (the first import of the CLI
and of every module of the package) sets it and imports no torch. A user's own value is
kept."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys

import pytest

from recipe_arena import hidden_modules

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


def test_hidden_modules_hide_only_within_the_block(tmp_path, monkeypatch) -> None:
    """A module that is not imported yet cannot be imported inside the block (and
    ``find_spec`` reports it absent, which is how libraries test for optional
    packages); after the block it imports as usual, and one imported before is left
    alone."""
    for name in ("ra_hidden_probe_a", "ra_hidden_probe_b"):
        (tmp_path / f"{name}.py").write_text(f"NAME = {name!r}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = importlib.import_module("ra_hidden_probe_b")
    with hidden_modules(("ra_hidden_probe_a", "ra_hidden_probe_b")):
        assert importlib.util.find_spec("ra_hidden_probe_a") is None
        with pytest.raises(ImportError):
            importlib.import_module("ra_hidden_probe_a")
        assert importlib.import_module("ra_hidden_probe_b") is before
    assert importlib.import_module("ra_hidden_probe_a").NAME == "ra_hidden_probe_a"
    assert sys.modules["ra_hidden_probe_b"] is before
    for name in ("ra_hidden_probe_a", "ra_hidden_probe_b"):
        del sys.modules[name]
