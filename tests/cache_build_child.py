"""The child process of ``test_base_stage``'s test of a second process waiting for a
build. In a module of its own that imports only ``recipe_arena.cache``: a spawned child
imports the module of its target, and the test module's imports (torch, transformers)
would cost the child seconds of start-up the test does not need."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from recipe_arena.cache import build_cached


def build_slowly(entry: str, started: Any) -> None:
    """Builds ``entry`` and, holding the build lock, signals ``started`` and takes a
    second to finish."""

    def build(tmp: Path) -> None:
        started.set()
        time.sleep(1.0)
        (tmp / "by").write_text("child")

    build_cached(Path(entry), build)
