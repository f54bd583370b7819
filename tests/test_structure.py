"""Structure: the package's modules import each other without cycles, and each piece of
shared code has one home (no copies between engines, actors and the evaluation)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "recipe_arena"


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports, at top level or inside functions
    (a lazy import is still a dependency)."""
    modules: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("recipe_arena"):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    graph[name].add(sub if sub in modules else str(node.module))
            elif isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name in modules}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    """A module that imports another which imports it back (even lazily, inside a
    function) is a cycle: eval.final and stages.common did, over the cache helpers."""
    assert _cycles(_import_graph()) == []


def test_cycle_finder_finds_a_cycle() -> None:
    """The finder itself: a -> b -> a is one cycle, c -> a is not part of it."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def _function_bodies() -> dict[str, list[str]]:
    """AST dump of each function body (docstring dropped) of 12 nodes or more -> where it
    is defined."""
    bodies: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            if sum(1 for stmt in body for _ in ast.walk(stmt)) < 12:
                continue
            key = ast.dump(ast.Module(body=body, type_ignores=[]))
            bodies.setdefault(key, []).append(f"{path.relative_to(PACKAGE)}:{node.name}")
    return bodies


def test_no_function_is_defined_twice() -> None:
    """Shared code has one home: no two functions have the same body (the actor and the
    evaluation each decoded responses; the torch and hf engines each resumed their
    worker)."""
    assert [where for where in _function_bodies().values() if len(where) > 1] == []


def test_engines_compose_instead_of_inheriting() -> None:
    """No engine class derives from another class (they hold their shared parts)."""
    for path in (PACKAGE / "engines").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and "Engine" in node.name:
                bases = [ast.unparse(b) for b in node.bases]
                assert bases in ([], ["Protocol"], ["ValueError"]), (path.name, node.name, bases)
