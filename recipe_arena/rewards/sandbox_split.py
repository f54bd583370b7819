"""Runs inside the sandbox (standard library only): split a row's tests into what the
program side evaluates and what the check side evaluates.

Every top-level statement of the tests is one of:

- ``P`` (no ``assert`` inside, uses a name the tests do not define: the program's
  ``s = Solution()``): runs on the program side; the names it binds belong to it.
- ``C`` (no ``assert`` inside, uses only builtins and names of earlier ``C``
  statements: ``import math``, ``expected = [1, 4, 9]``): runs on the check side. It
  also runs on the program side only when a probe or a ``P`` statement needs a name it
  binds (``data = [3, 1, 2]`` for ``assert f(data) == ...``).
- ``A`` (contains an ``assert``): runs on the check side, rewritten so that every
  maximal sub-expression that touches a program-side name becomes a *probe*: a call
  ``_ra_probe(k, {names: values})`` that the program side answers with a plain value.
  Names the check side binds while it runs (comprehension and loop variables, lambda
  parameters) travel with the probe as data; names of ``C`` statements reach the
  program side by running those statements there.

So an expected value reaches the program only when the test itself hands it to a
program-side expression; ``expected = ...`` compared with ``f(...)`` never does.
Each ``assert`` is rewritten to ``_ra_assert(i, test)``, which records the outcome
and raises ``AssertionError`` like ``assert`` would.
"""

from __future__ import annotations

import ast
import builtins

TYPE_CHECKING = False  # not `typing`: its import is ~10% of a sandbox start
if TYPE_CHECKING:
    from typing import Any

BUILTIN_NAMES = frozenset(dir(builtins))
_SCOPED = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp, ast.Lambda)


def bound_names(node: ast.AST) -> set[str]:
    """Names a statement or expression binds (assignment targets, defs, imports, loop
    variables, parameters, ``except ... as``)."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
    return out


def used_names(node: ast.AST) -> set[str]:
    """Names read anywhere in ``node`` that it does not bind itself."""
    loads = {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return loads - bound_names(node)


class _Rewriter(ast.NodeTransformer):
    """Replace program-side sub-expressions by probe calls; asserts by _ra_assert."""

    def __init__(
        self,
        plan: dict[str, Any],
        pos: int,
        c_names: set[str],
        env_names: set[str],
        binds: set[str],
    ) -> None:
        self.plan, self.pos = plan, pos
        self.c_names = c_names  # names the check side defines (module level)
        self.env_names = env_names  # check-side names whose values travel as data
        self.local = [set(binds)]  # names this statement binds (loop variables, ...)

    def _program_side(self, name: str) -> bool:
        local = any(name in s for s in self.local)
        return not local and name not in self.c_names and name not in BUILTIN_NAMES

    def _dirty(self, node: ast.AST) -> bool:
        scopes: list[set[str]] = [set()]
        for n in ast.walk(node):
            if isinstance(n, _SCOPED):
                scopes.append(bound_names(n))
        inner = set().union(*scopes)
        return any(
            isinstance(n, ast.Name) and n.id not in inner and self._program_side(n.id)
            for n in ast.walk(node)
        )

    def _probe(self, node: ast.expr) -> ast.expr:
        inner: set[str] = set()
        for n in ast.walk(node):
            if isinstance(n, _SCOPED):
                inner |= bound_names(n)
        names = sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - inner)
        env = [n for n in names if any(n in s for s in self.local) or n in self.env_names]
        k = len(self.plan["probes"])
        self.plan["probes"].append([self.pos, ast.unparse(node), env])
        self.plan["needs"].update(n for n in names if n not in env)
        call = ast.Call(
            func=ast.Name("_ra_probe", ast.Load()),
            args=[
                ast.Constant(k),
                ast.Dict([ast.Constant(n) for n in env], [ast.Name(n, ast.Load()) for n in env]),
            ],
            keywords=[],
        )
        return ast.copy_location(call, node)

    def visit_Assert(self, node: ast.Assert) -> ast.stmt:
        i = self.plan["n_asserts"]
        self.plan["n_asserts"] += 1
        self.plan["ids"].append(i)
        test = self.visit(node.test)
        call = ast.Call(ast.Name("_ra_assert", ast.Load()), [ast.Constant(i), test], [])
        return ast.copy_location(ast.Expr(call), node)

    def _scoped(self, node: ast.AST) -> ast.AST:
        self.local.append(bound_names(node))
        try:
            return self.generic_visit(node)
        finally:
            self.local.pop()

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _scoped
    visit_Lambda = _scoped

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if isinstance(node.ctx, ast.Load) and self._program_side(node.id):
            return self._probe(node)
        return node

    def _call_like(self, node: ast.expr, head: ast.expr) -> ast.AST:
        if self._dirty(head):
            return self._probe(node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        return self._call_like(node, node.func)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        return self._loaded(node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        return self._loaded(node)

    def _loaded(self, node: ast.Attribute | ast.Subscript) -> ast.AST:
        """x.a and x[i] alike: a load goes through ``_call_like``."""
        if isinstance(node.ctx, ast.Load):
            return self._call_like(node, node.value)
        return self.generic_visit(node)


def split_tests(tests: list[str]) -> dict[str, Any]:
    """The plan both sides follow: check-side statements (``c``: [pos, kind, source,
    assert ids]), program-side statements (``p``: [pos, source]), probes ([pos, source,
    env names]) and the number of asserts. Raises ValueError on tests that do not parse."""
    stmts: list[ast.stmt] = []
    for t in tests:
        try:
            mod = ast.parse(t)
        except SyntaxError as e:
            raise ValueError(f"test is not valid Python: {t[:60]!r} ({e.msg})") from None
        stmts.extend(mod.body)
    plan: dict[str, Any] = {"c": [], "p": [], "probes": [], "n_asserts": 0, "needs": set()}
    c_names: set[str] = set()
    env_names: set[str] = set()
    c_defs: list[tuple[int, ast.stmt, set[str]]] = []  # C statements and what they bind
    p_stmts: list[tuple[int, ast.stmt]] = []
    for pos, st in enumerate(stmts):
        has_assert = any(isinstance(n, ast.Assert) for n in ast.walk(st))
        binds = bound_names(st)
        if not has_assert:
            free = used_names(st) - BUILTIN_NAMES
            if free - c_names:  # touches the program: runs there
                p_stmts.append((pos, st))
                plan["needs"].update(free)
                c_names -= binds
                continue
            plan["c"].append([pos, "C", ast.unparse(st), []])
            c_defs.append((pos, st, binds))
            c_names |= binds
            continue
        plan["ids"] = []
        rw = _Rewriter(plan, pos, c_names, env_names, binds)
        new = ast.fix_missing_locations(rw.visit(st))
        assert isinstance(new, ast.AST)
        plan["c"].append([pos, "A", ast.unparse(new), plan.pop("ids")])
        # Names an assert statement binds (loop variables) live on the check side and
        # travel to probes as data.
        env_names |= binds
        c_names |= binds
    plan["p"] = _program_statements(p_stmts, c_defs, plan.pop("needs"))
    return plan


def _program_statements(
    p_stmts: list[tuple[int, ast.stmt]],
    c_defs: list[tuple[int, ast.stmt, set[str]]],
    needs: set[str],
) -> list[list[Any]]:
    """P statements plus the C statements whose names they or the probes need (closure)."""
    chosen = {pos: st for pos, st in p_stmts}
    needs = set(needs)
    changed = True
    while changed:
        changed = False
        for pos, st, binds in c_defs:
            if pos not in chosen and binds & needs:
                chosen[pos] = st
                needs |= used_names(st)
                changed = True
    return [[pos, ast.unparse(chosen[pos])] for pos in sorted(chosen)]
