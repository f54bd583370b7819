"""Every name the benchmarks and scripts import from the package exists.

Benchmarks import most of what they use inside their functions, so a renamed or moved
function only shows when a long benchmark reaches it (``rl_signal.py`` once stopped
after its SFT stage this way). This reads each file's syntax tree and resolves every
``from recipe_arena... import name`` it contains, at any depth, without running it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
FILES = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("scripts/*.py")])


def _imports(path: Path) -> list[tuple[str, str]]:
    tree = ast.parse(path.read_text())
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("recipe_arena")
        for alias in node.names
        if node.module is not None
    ]


def _resolves(module: str, name: str) -> bool:
    mod = importlib.import_module(module)
    if hasattr(mod, name):
        return True
    try:  # a submodule imported by name
        importlib.import_module(f"{module}.{name}")
    except ModuleNotFoundError:
        return False
    return True


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_package_name_a_benchmark_imports_exists(path: Path) -> None:
    missing = [f"{m}.{n}" for m, n in _imports(path) if not _resolves(m, n)]
    assert not missing, f"{path.name} imports names that do not exist: {missing}"


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    """A made-up name imported inside a function is reported missing."""
    f = tmp_path / "b.py"
    f.write_text("def main():\n    from recipe_arena.cache import no_such_name\n")
    assert _imports(f) == [("recipe_arena.cache", "no_such_name")]
    assert not _resolves("recipe_arena.cache", "no_such_name")
