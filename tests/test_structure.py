"""Structure: the package's modules import each other without cycles, the core is a
lower layer, and each piece of shared code has one home (no copies between engines,
actors and the evaluation).

The import graph counts every import of a package module: ``import`` and ``from ...
import`` statements at top level or inside functions (a lazy import is still a
dependency) and string imports, ``importlib.import_module("recipe_arena.x")`` and
``__import__("recipe_arena.x")``. Imports under ``if TYPE_CHECKING:`` are left out:
they are never executed and only name types for the type checker (the core names the
config sections it is handed that way).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "recipe_arena"

CORE = "recipe_arena.core"
AXES = ("advantages", "staleness", "length_control", "policy_loss")
"""The strategy axes: packages of strategies the core must not know."""
ABOVE_CORE = (*AXES, "config", "engines", "rewards", "distill", "stages", "wiring", "strategy")
"""What the core must not import: the axes, the configuration, the engines, the
rewards, the distillation and training stages, the composition root, the registry
machinery. It may import data types (data, models) and its own modules."""


def _modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _string_import(node: ast.Call) -> str | None:
    """The module a call ``importlib.import_module("x")`` / ``import_module("x")`` /
    ``__import__("x")`` names, when it is a constant string."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    if name not in ("import_module", "__import__") or not node.args:
        return None
    arg = node.args[0]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def imported(tree: ast.AST, module: str, modules: set[str]) -> set[str]:
    """The package modules ``tree`` (the source of ``module``) imports, outside
    ``if TYPE_CHECKING:`` blocks (module docstring)."""
    found: set[str] = set()

    def resolve(name: str) -> None:
        while name and name not in modules:  # a name inside a module: the module
            name = name.rpartition(".")[0]
        if name.startswith("recipe_arena"):
            found.add(name)

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importing module's package
                pkg = module.split(".")[: -node.level] if node.level else []
                base = ".".join([*pkg, base] if base else pkg)
            for alias in node.names:
                resolve(f"{base}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                resolve(alias.name)
        elif isinstance(node, ast.Call) and (target := _string_import(node)):
            resolve(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(module)
    return found


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (module docstring)."""
    modules = _modules()
    names = set(modules)
    return {m: imported(ast.parse(p.read_text()), m, names) for m, p in modules.items()}


def _unit(module: str) -> str:
    """The top-level package (or module) of ``recipe_arena`` that holds ``module``."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _package_graph() -> dict[str, set[str]]:
    """Top-level package -> the top-level packages its modules import."""
    graph: dict[str, set[str]] = {}
    for m, deps in _import_graph().items():
        graph.setdefault(_unit(m), set()).update(_unit(d) for d in deps)
    for unit, deps in graph.items():
        deps.discard(unit)
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


def test_no_package_cycles() -> None:
    """Between the top-level packages too (rewards -> stages -> eval -> rewards was one,
    through a string import)."""
    assert _cycles(_package_graph()) == []


def test_the_core_imports_no_strategy_and_nothing_above_it() -> None:
    """No module of ``recipe_arena.core`` imports a strategy axis, the config, an engine,
    the rewards, the distillation or training stages, the composition root or the
    registry machinery: strategies reach the core through its hooks (``core.hooks``)."""
    above = {f"recipe_arena.{name}" for name in ABOVE_CORE}
    bad = {
        (m, d)
        for m, deps in _import_graph().items()
        if m == CORE or m.startswith(CORE + ".")
        for d in deps
        if _unit(d) in above
    }
    assert bad == set()


def test_the_axes_sit_above_the_core() -> None:
    """Each axis imports core types (its hooks' types, the lazy torch), never the
    reverse (the test above), and no axis imports another."""
    graph = _package_graph()
    axes = {f"recipe_arena.{axis}" for axis in AXES}
    for axis in axes:
        assert CORE in graph[axis]
        assert graph[axis] & axes == set(), axis


def test_the_graph_sees_string_and_lazy_imports_and_skips_type_checking() -> None:
    """The import finder on a made-up module: a lazy import, importlib's and
    ``__import__``'s string imports count; an import under ``if TYPE_CHECKING:`` does
    not (but its ``else`` branch does)."""
    source = """
import importlib
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from recipe_arena.config import RunConfig
else:
    from recipe_arena.core.lazy import torch
def f():
    from recipe_arena.stages import rlvr
    importlib.import_module("recipe_arena.rewards.judge")
    return __import__("recipe_arena.eval.final")
"""
    modules = {
        "recipe_arena.config",
        "recipe_arena.core.lazy",
        "recipe_arena.stages",
        "recipe_arena.stages.rlvr",
        "recipe_arena.rewards.judge",
        "recipe_arena.eval.final",
        "recipe_arena.x",
    }
    assert imported(ast.parse(source), "recipe_arena.x", modules) == {
        "recipe_arena.core.lazy",
        "recipe_arena.stages.rlvr",
        "recipe_arena.rewards.judge",
        "recipe_arena.eval.final",
    }


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


MAX_FILE_LINES = 520
"""Most lines a Python file of the project may hold: CONTRIBUTING's ~500, with room for a
few lines before a split is due (a reader holds one module at a time)."""
MAX_FUNCTION_LINES = 100
"""Most lines of one function, decorators and docstring included: CONTRIBUTING's ~80,
with room for a function whose docstring says why it is longer."""


def _project_sources() -> list[Path]:
    root = PACKAGE.parent
    return sorted(
        p
        for d in ("recipe_arena", "tests", "benchmarks", "scripts")
        for p in (root / d).rglob("*.py")
    )


def _oversized(paths: list[Path]) -> list[str]:
    """``path: N lines`` for each file past MAX_FILE_LINES and ``path:line name: N
    lines`` for each function past MAX_FUNCTION_LINES."""
    out = []
    for path in paths:
        src = path.read_text()
        if (n := len(src.splitlines())) > MAX_FILE_LINES:
            out.append(f"{path.name}: {n} lines")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if (n := (node.end_lineno or node.lineno) - first + 1) > MAX_FUNCTION_LINES:
                    out.append(f"{path.name}:{node.lineno} {node.name}: {n} lines")
    return out


def test_oversized_finds_a_long_file_and_a_long_function(tmp_path: Path) -> None:
    """A file of MAX_FILE_LINES + 1 one-line statements is reported, one of
    MAX_FILE_LINES is not; a function of its ``def`` and MAX_FUNCTION_LINES body lines
    (MAX_FUNCTION_LINES + 1 in all) is, one a line shorter is not."""
    long_file, short_file = tmp_path / "long.py", tmp_path / "short.py"
    long_file.write_text("x = 1\n" * (MAX_FILE_LINES + 1))
    short_file.write_text("x = 1\n" * MAX_FILE_LINES)
    long_fn, short_fn = tmp_path / "f.py", tmp_path / "g.py"
    long_fn.write_text("def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES)
    short_fn.write_text("def g():\n" + "    x = 1\n" * (MAX_FUNCTION_LINES - 1))
    assert _oversized([long_file, short_file, long_fn, short_fn]) == [
        f"long.py: {MAX_FILE_LINES + 1} lines",
        f"f.py:1 f: {MAX_FUNCTION_LINES + 1} lines",
    ]


def test_files_and_functions_stay_readable() -> None:
    """CONTRIBUTING: a file past ~500 lines or a function past ~80 splits or says why;
    past MAX_FILE_LINES and MAX_FUNCTION_LINES, it splits."""
    assert _oversized(_project_sources()) == []
