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


PROSE_SHARE_MAX = 0.35
"""Most a module of settings may be prose: docstring and comment lines over non-blank lines."""


def _prose_share(path: Path) -> float:
    """(docstring lines + comment lines) / non-blank lines of ``path``. A docstring line is
    one of a string statement (module, class, function or attribute docstring); a comment
    line starts with ``#``."""
    src = path.read_text()
    lines = src.splitlines()
    prose = {i + 1 for i, line in enumerate(lines) if line.strip().startswith("#")}
    for node in ast.walk(ast.parse(src)):
        doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if doc and isinstance(node.value.value, str) and node.end_lineno is not None:
            prose |= set(range(node.lineno, node.end_lineno + 1))
    return len(prose) / sum(1 for line in lines if line.strip())


def test_prose_share_counts_docstrings_and_comments(tmp_path: Path) -> None:
    """A module docstring of 2 lines, a comment, 2 code lines and an attribute docstring of
    1 line, with 2 blank lines: prose (2 + 1 + 1) / non-blank 6 = 2/3."""
    path = tmp_path / "m.py"
    path.write_text('"""One.\nTwo."""\n\n# why\nx = 1\n\ny = 2\n"""y is two."""\n')
    assert _prose_share(path) == 4 / 6


def test_config_prose_share() -> None:
    """config.py's docstrings say what each value is (unit, range, source, at most a line
    of why), not how it was found: its prose share is at most ``PROSE_SHARE_MAX``."""
    share = _prose_share(PACKAGE / "config.py")
    assert share <= PROSE_SHARE_MAX, f"config.py is {share:.0%} prose"


def _strings_of(node: ast.AST) -> set[str] | None:
    """The names of a tuple, list or set made of string constants only (a
    ``Literal[...]`` subscript's is a tuple); None for any other node."""
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or not node.elts:
        return None
    if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return None
    return {e.value for e in node.elts if isinstance(e, ast.Constant)}


def _string_sequences() -> list[tuple[str, set[str]]]:
    """(file, its names) for every sequence of string constants in the package."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = _strings_of(node)
            if names is not None:
                found.append((str(path.relative_to(PACKAGE)), names))
    return found


def test_each_extension_point_is_listed_once() -> None:
    """The domains, stages, engines and worlds are each listed in their registry alone:
    no tuple, list or set of names elsewhere holds all of a registry's keys (the domains
    were listed in five modules, the stages and engines in the config's Literals)."""
    from recipe_arena.config_world import WORLDS
    from recipe_arena.domains import VERIFIERS
    from recipe_arena.engine_registry import ENGINES
    from recipe_arena.stage_registry import STAGES

    sequences = _string_sequences()
    for registry in (VERIFIERS, STAGES, ENGINES, WORLDS):
        assert [f for f, names in sequences if set(registry) <= names] == []


def test_listing_finder_sees_a_repeated_list() -> None:
    """The finder itself: ``Literal["a", "b"]`` and ``["a", "b", "c"]`` hold {a, b}; a
    dict's keys and a mixed tuple do not count."""
    src = 'x: Literal["a", "b"]\ny = ["a", "b", "c"]\nz = {"a": 1, "b": 2}\nw = ("a", 1)\n'
    found = [_strings_of(node) for node in ast.walk(ast.parse(src))]
    assert sorted(sorted(names) for names in found if names is not None) == [
        ["a", "b"],
        ["a", "b", "c"],
    ]
