"""Runs inside the sandbox (standard library only): prepare a row's tests for the check
side, which runs them whole (sandbox_harness.py).

The tests never reach the program. Every name the tests read but never bind, and that
is not a builtin or a standard-library module they only read attributes of (``math``,
imported by the check side), is the program's (``add``, ``Solution``): each read of it
becomes ``_ra_g('add')``, which the check side answers with a *handle* to the program's object
(or its value, when that is a plain builtin value). Calling a handle, reading an
attribute or an item of it, iterating it, taking its ``len``, ``str`` or truth value
sends one request to the program side holding only what that operation needs: the
handle, an attribute name from the tests' source, and the *evaluated* arguments
(plain values or handles). Setup statements, loop variables, comprehensions,
dict-driven, index-loop and generator forms, test helper functions (HumanEval's
``check(candidate)``) and every comparison run on the check side, so in
``for c in cases: assert add(*c[0]) == c[1]`` the program receives the two numbers of
``c[0]`` and nothing else.

Supported test forms: any Python whose values handed to the program are plain builtin
values (int, float, complex, bool, str, bytes, None, range, and lists, tuples, sets,
frozensets, dicts of them) or the program's own objects. Refused with an ``error:`` verdict
(never sent): a test that hands the program anything else (a lambda, a test-defined
class instance, a generator, a ``deque``). Not seen: in-place changes the program
makes to a list it was given (the check side keeps its own copy).

Each ``assert`` becomes ``_ra_assert(i, test)``, which records the outcome and raises
``AssertionError`` like ``assert`` would.
"""

from __future__ import annotations

import ast
import builtins
import sys

TYPE_CHECKING = False  # not `typing`: its import is ~10% of a sandbox start
if TYPE_CHECKING:
    from typing import Any

BUILTIN_NAMES = frozenset(dir(builtins))
CHECK_NAMES = {"isclose": "math", "pi": "math", "e": "math", "tau": "math", "inf": "math",
               "nan": "math"}  # fmt: skip
"""Names a test reads bare, never binding them, to compare or to write an expected value
(``isclose(area(2), 4 * pi)``, left to the program's ``from math import isclose, pi``):
the check side binds them to the standard library's (module named here) whenever the
tests read another name of the program, so the program's ``isclose`` or ``pi`` never
decides a comparison nor receives an expected value. A row whose only program name is
one of these (``implement isclose``) keeps it the program's."""
STAR_MODULES = ("math", "cmath", "string")
"""Standard modules whose ``from m import *`` in the tests makes the names it binds
*standard* (``star_names``): the program must still define such a name, but wherever
the module's function (or constant) answers a plain value for the test's plain
arguments, the program's must equal it, or the statement fails. Otherwise a program
whose ``sqrt`` returned what its ``dist`` did passed ``assert dist(3, 4) ==
sqrt(25)``. Only modules whose functions have no side effects on their arguments. As
with CHECK_NAMES, a row whose every program name is one keeps them the program's."""


def bound_names(node: ast.AST) -> set[str]:
    """Names a statement or expression binds (assignment targets, defs, imports, loop
    variables, parameters, ``except ... as``, ``global``/``nonlocal``)."""
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
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            out.add(n.rest)
    return out


def used_names(node: ast.AST) -> set[str]:
    """Names read anywhere in ``node`` that it does not bind itself."""
    loads = {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return loads - bound_names(node)


def stdlib_modules_read(node: ast.AST) -> set[str]:
    """Names of standard-library modules whose every read in ``node`` is an attribute
    (``math.isclose``): tests that rely on an import left to the program. The check
    side imports them itself, so they never go to the program (which could hand back a
    patched ``math``, or a class of that name, and would receive ``expected`` in
    ``math.isclose(f(x), expected)``)."""
    reads: dict[str, int] = {}
    bases: dict[str, int] = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            reads[n.id] = reads.get(n.id, 0) + 1
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            bases[n.value.id] = bases.get(n.value.id, 0) + 1
    return {
        name
        for name, k in reads.items()
        if bases.get(name) == k and name in sys.stdlib_module_names
    }


def loaded_names(node: ast.AST) -> set[str]:
    """The names ``node`` reads (``ast.Load``)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def star_names(node: ast.AST, program: set[str]) -> list[list[str]]:
    """[name, module] for each name of ``program`` that a ``from m import *`` in
    ``node`` binds, ``m`` one of STAR_MODULES (importable in the sandbox: standard);
    none when every name of the program is one (a row testing its ``gcd``)."""
    out: dict[str, str] = {}
    for n in ast.walk(node):
        if (
            isinstance(n, ast.ImportFrom)
            and n.module in STAR_MODULES
            and not n.level
            and any(a.name == "*" for a in n.names)
        ):
            mod = __import__(n.module)
            public = getattr(mod, "__all__", None) or [k for k in dir(mod) if k[:1] != "_"]
            out.update((k, n.module) for k in public if k in program)
    if not program - out.keys():  # every name is one: the row tests them (``gcd``)
        return []
    return [[k, out[k]] for k in sorted(out)]


class _Rewriter(ast.NodeTransformer):
    """Program names -> ``_ra_g(name)``; ``assert t`` -> ``_ra_assert(i, t)``; a test
    function holding asserts ``a..b-1`` starts with ``_ra_enter(a, b)``, so a top-level
    statement that calls it and does not finish fails those asserts too (a helper called
    once per case, ``t(1, 2)`` then ``t(2, 4)``, passed when the program was right on the
    first case and raised on the next: that statement ran no assert to fail), and is
    marked ``@_ra_mark(a, b)``, so a statement that reaches it through a variable
    (``u = t``, an instance of a test class, a dict of checks) names them too."""

    def __init__(self, program: set[str], plan: dict[str, Any]) -> None:
        self.program = program
        self.plan = plan

    def visit_Assert(self, node: ast.Assert) -> ast.stmt:
        i = self.plan["n_asserts"]
        self.plan["n_asserts"] += 1
        self.plan["ids"].append(i)
        test = self.visit(node.test)
        call = ast.Call(ast.Name("_ra_assert", ast.Load()), [ast.Constant(i), test], [])
        return ast.copy_location(ast.Expr(call), node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt:
        first = self.plan["n_asserts"]
        self.generic_visit(node)
        last = self.plan["n_asserts"]
        self.plan["inner"].update(range(first, last))
        if last > first:
            args: list[ast.expr] = [ast.Constant(first), ast.Constant(last)]
            enter = ast.Expr(ast.Call(ast.Name("_ra_enter", ast.Load()), args, []))
            first_stmt = node.body[0]
            doc = isinstance(first_stmt, ast.Expr) and isinstance(first_stmt.value, ast.Constant)
            at = int(doc and isinstance(first_stmt.value.value, str))  # type: ignore[attr-defined]
            node.body.insert(at, ast.copy_location(enter, node))  # after a docstring
            mark = ast.Call(ast.Name("_ra_mark", ast.Load()), list(args), [])
            node.decorator_list.append(mark)  # applied first: the function itself
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        """``a is b`` -> ``_ra_is(a, b)`` (``a is not b`` -> ``not _ra_is(a, b)``): the
        check side holds a new handle for each answer of the program, so identity of
        the program's objects is asked of their handles' names. A chain (``a is b is
        c``) stays as written."""
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            return node
        call: ast.expr = ast.Call(
            ast.Name("_ra_is", ast.Load()), [node.left, node.comparators[0]], []
        )
        if isinstance(node.ops[0], ast.IsNot):
            call = ast.UnaryOp(ast.Not(), call)
        return ast.copy_location(call, node)

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if isinstance(node.ctx, ast.Load) and node.id in self.program:
            call = ast.Call(ast.Name("_ra_g", ast.Load()), [ast.Constant(node.id)], [])
            return ast.copy_location(call, node)
        return node


def test_defs(stmts: list[Any], body: list[ast.stmt]) -> dict[str, tuple[set[int], set[str]]]:
    """Each top-level test function or class of ``body`` (``stmts``: its statements with
    their assert ids): name -> (ids of the asserts inside it, names it reads)."""
    defs: dict[str, tuple[set[int], set[str]]] = {}
    for (_, ids), node in zip(stmts, body, strict=True):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            defs[node.name] = (set(ids), reads)
    return defs


def named_defs(st: ast.stmt, defs: dict[str, tuple[set[int], set[str]]]) -> set[str]:
    """The test functions and classes (``test_defs``) ``st`` names, and those they name
    in turn."""
    todo = [n.id for n in ast.walk(st) if isinstance(n, ast.Name) and n.id in defs]
    seen: set[str] = set()
    while todo:
        if (name := todo.pop()) not in seen:
            seen.add(name)
            todo.extend(r for r in defs[name][1] if r in defs)
    return seen


def helper_asserts(st: ast.stmt, defs: dict[str, tuple[set[int], set[str]]]) -> set[int]:
    """Ids of the asserts of the test functions and classes ``st`` names (``named_defs``):
    ``t(dbl(2), 4)`` fails ``t``'s assert when ``dbl`` raises before ``t`` is entered."""
    return set().union(*(defs[name][0] for name in named_defs(st, defs)))


BY_NAME = frozenset(("globals", "locals", "vars", "eval", "exec", "compile", "getattr"))
"""Builtins that reach a test function by a name computed at run time
(``globals()['t'](f(2), 4)``): a statement reading one may call any of them, so the
check side looks for them in every name of the tests (``reads``) and a run cut short
before it keeps none pending (``settled``)."""


def settled(
    stmts: list[Any], body: list[ast.stmt], defs: dict[str, tuple[set[int], set[str]]],
    inner: set[int],
) -> list[list[int]]:  # fmt: skip
    """Per top-level statement (``stmts``: with their assert ids, ``body``: the parsed
    ones), the asserts of ``inner`` (those inside test functions) that no statement
    from it on can run, those not listed before: a run cut short there keeps their
    verdicts (``K``). A statement keeps pending the asserts it names (its ids, with
    ``helper_asserts``), and all of them when it reads a variable of the tests, itself
    or through a test function it names (one may hold a test function: ``u = t``), or
    one of BY_NAME."""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    free = {n.name: used_names(n) for n in body if isinstance(n, kinds) and n.name in defs}
    variables = bound_names(ast.Module(body=body, type_ignores=[])) - defs.keys()
    pending: set[int] = set()
    out: list[list[int]] = []
    for (_, ids), node in zip(reversed(stmts), reversed(body), strict=True):
        named = named_defs(node, defs)
        reads = used_names(node).union(*(free.get(d, set()) for d in named))
        pending |= inner if reads & (variables | BY_NAME) else inner & set(ids)
        out.append(sorted(inner - pending))
    out.reverse()
    return [
        sorted(set(now) - set(before)) for before, now in zip([[], *out[:-1]], out, strict=True)
    ]


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _under(node: ast.AST) -> ast.AST:
    """The node under a chain of attributes and items (``d`` of ``d['k'].x``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def _handed(node: ast.AST) -> set[int]:
    """The ids of the nodes under ``node`` through which a statement can change the
    object they name: the object of an attribute (``out`` of ``out.extend(...)``) and
    the arguments of a call (``out`` of ``fill(out)``). Iterating, indexing or comparing
    a variable changes nothing, so its name is not among them; the variable under an
    item or attribute handed on is (``cases`` of ``cases[0].pop()``)."""
    through: list[ast.AST] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute):
            through.append(n.value)
        elif isinstance(n, ast.Call):
            args = [a.value if isinstance(a, ast.Starred) else a for a in n.args]
            through += [*args, *(k.value for k in n.keywords)]
    return {id(_under(n)) for n in through}


def _variables(node: ast.AST, loads: bool) -> set[str]:
    """The names statement ``node`` stores in its own scope (its functions, lambdas
    and classes not looked into), with the name under an attribute or item it stores
    (``d`` of ``d['k'] = ...``), and with ``loads`` the names it reads where it could
    change their object (``_handed``)."""
    out: set[str] = set()
    handed = _handed(node) if loads else set()
    todo = [node] if not isinstance(node, _SCOPES) else []
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and (id(n) in handed or not isinstance(n.ctx, ast.Load)):
            out.add(n.id)
        elif (
            isinstance(n, (ast.Attribute, ast.Subscript))
            and not isinstance(n.ctx, ast.Load)
            and isinstance(root := _under(n), ast.Name)
        ):
            out.add(root.id)
        todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, _SCOPES))
    return out


def stale_names(body: list[ast.stmt]) -> list[list[str]]:
    """Per top-level statement, the tests' variables it may leave half made when it does
    not finish: those it assigns (an assignment, a loop variable, ``+=``, an item or
    attribute of one) and, but for an assert, those it reads where it could change them
    (``out.append(f(2))``, ``fill(out)``; not ``for x in cases`` nor ``cases[0]``).
    The check side unbinds them after such a statement (``sandbox_harness``): plain
    Python would stop there, and a later assert must not judge the value an earlier
    statement left (``r = f(1)``, ``assert r == 3``, ``r = f(2)`` raising, ``assert r
    == 3`` passed a program right once). Names of imports, defs and classes are no
    variables."""
    variables = set().union(*(_variables(st, False) for st in body))
    return [sorted(_variables(st, not isinstance(st, ast.Assert)) & variables) for st in body]


def split_tests(tests: list[str]) -> dict[str, Any]:
    """The check side's plan: ``stmts`` ([source, assert ids] per top-level statement,
    rewritten; the ids are those it holds and those of the test functions it names,
    ``helper_asserts``: all fail when it does not finish), ``n_asserts``,
    ``program_names`` (the names read from the program), ``modules`` (standard-library
    modules the check side imports for the tests, ``stdlib_modules_read``),
    ``check_names`` ([name, module] pairs the check side binds itself, ``CHECK_NAMES``)
    and ``star`` ([name, module] pairs of program names the tests' ``from m import *``
    binds, ``star_names``) and ``reads`` (per statement, the names of the tests it
    reads, all of them when it reads one of BY_NAME: where the check side looks for the
    test functions it may call, ``sandbox_harness.reached``) and ``inner`` (the ids of
    the asserts inside test functions: a later statement may run them again, so a run
    cut short before its last statement fails them, ``code.parse_report``) and
    ``settled`` (per statement, those of ``inner`` no statement from it on can run,
    ``settled``) and ``stale`` (per statement, the variables unbound when it does not
    finish, ``stale_names``). Raises ValueError on tests that do not parse, and on
    asserts that read no name of the program: they would pass any program (a function
    named like a builtin, ``max``, is the builtin here), so the row cannot judge one."""
    mods: list[ast.Module] = []
    for t in tests:
        try:
            mods.append(ast.parse(t))
        except SyntaxError as e:
            raise ValueError(f"test is not valid Python: {t[:60]!r} ({e.msg})") from None
    every = ast.Module(body=[s for m in mods for s in m.body], type_ignores=[])
    bound = bound_names(every)
    modules = stdlib_modules_read(every)
    program = loaded_names(every) - bound - BUILTIN_NAMES - modules
    checker = program & CHECK_NAMES.keys()
    if program - checker:
        program -= checker
    else:
        checker = set()
    plan: dict[str, Any] = {
        "stmts": [],
        "n_asserts": 0,
        "program_names": sorted(program),
        "modules": sorted(modules - bound),
        "check_names": [[n, CHECK_NAMES[n]] for n in sorted(checker)],
        "star": star_names(every, program),
        "reads": [],
        "inner": set(),
    }
    rw = _Rewriter(program, plan)
    for st in every.body:
        reads = loaded_names(st)  # every name of the tests, for one computing a name:
        plan["reads"].append(sorted(bound if reads & BY_NAME else reads & bound))
        plan["ids"] = []
        new = ast.fix_missing_locations(rw.visit(st))
        assert isinstance(new, ast.AST)
        plan["stmts"].append([ast.unparse(new), plan["ids"]])
    plan.pop("ids", None)
    defs = test_defs(plan["stmts"], every.body)
    for entry, st in zip(plan["stmts"], every.body, strict=True):
        entry[1] = sorted(set(entry[1]) | helper_asserts(st, defs))
    plan["settled"] = settled(plan["stmts"], every.body, defs, plan["inner"])
    plan["stale"] = stale_names(every.body)
    plan["inner"] = sorted(plan["inner"])
    if plan["n_asserts"] and not program:
        raise ValueError(
            "the tests read no name of the program, so any program would pass them "
            "(a function named like a builtin is the builtin: rename it in the row)"
        )
    return plan
