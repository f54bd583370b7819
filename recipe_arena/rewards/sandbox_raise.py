"""Runs inside the sandbox (standard library only, between sandbox_report.py's source
and sandbox_harness.py's): whether an exception that ended a top-level statement of
the tests is a check the tests wrote with ``raise`` instead of ``assert`` (``if
srt([2, 3, 1]) != [1, 2, 3]: raise AssertionError``). Such a check counts as one
failed check (report line ``X``, ``code.parse_report``), as ``assert not cond`` would.

An exception the sandbox raises where it cannot do what honest tests ask (``except``
of the program's class, ``next()`` on its generator, ``isinstance`` on its object, an
import it lacks, the program's own ``ValueError`` subclass, ``pytest.raises``) is no
such check: only a ``raise <expr>`` written in the tests' own source counts, at the
innermost frame, outside any ``except`` (no context). Where the sandbox differs from
plain Python, a raise may be true for a right program; the count is turned off for
the known forms of that, a list, not a proof:

- the program handed back an object of its own in the run (``type``, ``isinstance``,
  ``is`` on one differ here);
- the condition reads a value the tests handed the program (an in-place change is not
  seen), or compares two values with ``is`` (answers are copies);
- the tests test what a call did rather than what it answered (``sort_ip(lst)``
  standing alone, ``get().append(1)``), or change the program's module state without
  a call (``CONFIG['mode'] = 'upper'``, ``settings.update(sep='-')``, ``del
  inventory['pear']``, ``queue.append(1)`` where ``queue`` is also a standard module:
  ``_effect``);
- the tests keep a value of the program's under a name of their own (``log = LOG``),
  hand one name to the program twice (``b = add(a, 2)`` then ``add(a, 3)``), bind a
  name they never read (``MAX_SIZE = 2``), or bind at top level a name the program
  binds at top level (``items += [2]``), other than to an answer (``_off``,
  ``_shadowed``);
- the tests name anything whose state the two sides do not share (``DENIED``: files,
  output, ``random``, the clock, warnings, logging, introspection).

Not counted, so still passed by a wrong program: a raise check on a call where the
program raises or hands back an object of its own (the exception is the sandbox's or
the program's, which the sandbox cannot tell from its own limits), and any raise check
in tests of the forms above; a program that binds at top level a name the tests bind
(``xs = None`` beside tests that write ``xs = [2, 1]``) turns the count off too."""

from __future__ import annotations

import ast
import builtins
import opcode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from recipe_arena.rewards.sandbox_remote import Remote
    from recipe_arena.rewards.sandbox_wire import _type

_RAISE = opcode.opmap["RAISE_VARARGS"]
DENIED = frozenset(
    ("open", "os", "sys", "io", "pathlib", "Path", "shutil", "tempfile", "random",
     "seed", "time", "datetime", "sleep", "perf_counter", "monotonic", "contextlib",
     "redirect_stdout", "redirect_stderr", "StringIO", "BytesIO", "stdout", "stderr",
     "stdin", "input", "capsys", "pytest", "unittest", "mock", "patch", "environ",
     "isinstance", "issubclass", "type", "id", "hash", "hasattr", "getattr", "vars",
     "dir", "callable", "globals", "locals", "gc", "inspect", "builtins", "threading",
     "subprocess", "signal", "uuid", "secrets", "eval", "exec", "compile", "__class__",
     "__dict__", "__name__", "__module__", "__qualname__", "SkipTest", "skip",
     "warnings", "catch_warnings", "logging", "Handler", "addHandler")
)  # fmt: skip
"""Names whose reading in the tests turns the count off: state the check side and the
program side do not share (files, standard streams, ``random``, the clock, warnings
and log records), or the
type and identity of objects, which differ for the program's answers here."""
_MUTABLE = (list, dict, set, bytearray, tuple)
MAX_SENT = 100_000
"""How many values handed to the program are remembered; past it no raise counts."""
MAX_HELD = 100_000
"""How many items the values of ``SENT`` held alive may hold in all (a few MB)."""
SENT: dict[int, Any] = {}
"""By ``id``, each list, dict, set, bytearray or tuple the tests handed the program (and
such items of a tuple or list handed): a condition that reads one may be testing a
change the program made in place, which the check side never sees (it works on a
copy). The value is the object itself, held so that its ``id`` is not reused by a
later one (a list of the tests' built after a literal was handed and freed), or None
past ``MAX_HELD``: an ``id`` reused then only turns a count off."""
_HELD = [0]


def note_sent(v: Any) -> None:
    """Remember ``v`` (a value the tests hand the program) for ``SENT``."""
    if type(v) not in _MUTABLE or len(SENT) > MAX_SENT:  # plain values only (enc)
        return
    new = [v]
    if type(v) in (list, tuple):  # a list inside a tuple of arguments
        new += [x for x in v[:64] if type(x) in _MUTABLE]
    for x in new:
        _HELD[0] += len(x)
        SENT[id(x)] = x if _HELD[0] <= MAX_HELD else SENT.get(id(x))


def _sent(v: Any) -> bool:
    """``v`` itself was handed to the program (or may have been, past ``MAX_HELD``)."""
    if id(v) not in SENT:
        return False
    held = SENT[id(v)]
    return held is None or held is v


def _touches(v: Any) -> bool:
    """``v`` was handed to the program, or holds (one level down) a value that was."""
    if len(SENT) > MAX_SENT or _sent(v):
        return True
    if isinstance(v, (list, tuple, dict)):
        items = v.values() if isinstance(v, dict) else v
        return any(_sent(x) for x, _ in zip(items, range(64), strict=False))
    return False


class TestRaises:
    """The tests' own code objects (``compiled``) and whether the program handed back
    an object of its own (``handles``), for ``counted``; ``sources``: the tests'
    top-level statements (rewritten), ``program``: the program's source."""

    def __init__(self, sources: list[str], program: str = "") -> None:
        self.codes: dict[Any, str] = {}
        self.handles = 0
        self.off = True  # no raise in the tests, or one that cannot count
        try:
            if any("raise" in src for src in sources):
                trees = [ast.parse(src) for src in sources]
                self.off = _off(trees) or _shadowed(trees, ast.parse(program))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass

    def compiled(self, code: Any, src: str) -> Any:
        """Remember ``code`` (a top-level statement of the tests) and the code objects
        it holds (its test functions) as the tests' own, made from ``src``; give
        ``code`` back."""
        self.codes[code] = src
        for c in code.co_consts:
            if type(c) is type(code):
                self.compiled(c, src)
        return code

    def watch(self, channel: Any) -> None:
        """Count in ``handles`` each object of its own the program hands back through
        ``channel`` (a ``_Channel``), but for the names of the program the tests read
        (request ``g``: its functions and classes are no answer)."""
        handle, request = channel.handle, channel.request

        def counted(e: Any) -> Any:
            self.handles += 1
            return handle(e)

        def asked(msg: dict[str, Any]) -> Any:
            before = self.handles
            try:
                return request(msg)
            finally:
                if msg.get("op") == "g":
                    self.handles = before

        channel.handle, channel.request = counted, asked

    def counted(self, e: BaseException) -> bool:
        """``e`` ended a statement at a ``raise <expr>`` of the tests' own whose
        condition the sandbox cannot have made true for a right program."""
        if self.handles or self.off or not isinstance(e, Exception):
            return False
        try:
            return self._counted(e)
        except Exception:  # never ends the check side: such a raise counts nothing
            return False

    def _counted(self, e: Exception) -> bool:
        """``counted``, for tests that may count and a program that handed back no
        object of its own."""
        if e.__context__ is not None or e.__traceback__ is None:
            return False
        tb = e.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        code, at = tb.tb_frame.f_code, tb.tb_lasti
        src = self.codes.get(code)
        raw = code.co_code
        if src is None or at + 1 >= len(raw) or raw[at] != _RAISE or raw[at + 1] == 0:
            return False
        line, _, col, _ = list(code.co_positions())[at // 2]
        found = None if line is None or col is None else _condition(ast.parse(src), line, col)
        if found is None:
            return False
        cond, whole = found
        frame = tb.tb_frame
        scope = {**frame.f_globals, **frame.f_locals}
        if cond is None:  # not under an if or while: anything bound may be read
            return not any(_touches(v) for v in scope.values())
        if whole:  # a comparison of two values with `is`: answers are copies here
            return False
        return not any(_touches(scope[n]) for n in _observed(cond, scope) if n in scope)


def _off(trees: list[ast.Module]) -> bool:
    """No raise of these tests (``trees``, rewritten) may count: they read a name of
    ``DENIED``, test what a call did (``_effect``), keep a program's value under a name
    of their own (``log = LOG``: a copy, which the program's later calls do not
    change), hand one name to the program more than once (``b = add(a, 2)`` then
    ``add(a, 3)``: ``b`` is ``a`` for a right program, a copy here) or bind a name
    they never read (``MAX_SIZE = 2``: in plain Python it rebinds the program's)."""
    nodes = [n for t in trees for n in ast.walk(t)]
    names = {n.id for n in nodes if isinstance(n, ast.Name)}
    names |= {n.attr for n in nodes if isinstance(n, ast.Attribute)}
    for n in nodes:
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update(a.name.split(".")[0] for a in n.names)
            names.add(getattr(n, "module", None) or "")
    if names & DENIED:
        return True
    own = set(dir(builtins)) | {  # what a bare call of theirs may name
        n.name for t in trees for n in t.body if isinstance(n, _DEFS)
    }
    loaded = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    bound = _bound(nodes)
    stored = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    unread = {n for n in stored - loaded if not n.startswith("_")}  # `for _ in`: no name
    if unread or any(_aliased(n) for n in nodes) or _resent(nodes):
        return True
    answers = {  # names bound to what the program answered: r of r = get()
        t.id
        for n in nodes
        if isinstance(n, ast.Assign) and _program_call(n.value)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    answers |= loaded - bound - own  # a module the program's name may be (queue)
    return any(_effect(n, own, answers, loaded) for n in nodes)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _bound(nodes: list[ast.AST]) -> set[str]:
    """The names ``nodes`` (the tests' or the program's) bind: stored, deleted,
    defined, imported, parameters, ``except ... as``, ``global``."""
    out = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    for n in nodes:
        if isinstance(n, _DEFS):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
    return out


def _shadowed(trees: list[ast.Module], program: ast.Module) -> bool:
    """The tests bind at top level a name the program binds at top level (``items +=
    [2]``, ``CONFIG = {...}``): in plain Python that is the program's global, here a
    name of the tests' own. A binding to what a call of the program answered (``r =
    srt(xs)``) is left out: a program cannot turn the count off by naming its globals
    after the tests' usual names for an answer."""
    mine = {n.name for n in program.body if isinstance(n, _DEFS)}
    for st in program.body:
        if not isinstance(st, _DEFS):
            mine |= _bound(list(ast.walk(st)))
    mine |= {g for n in ast.walk(program) if isinstance(n, ast.Global) for g in n.names}
    theirs: set[str] = set()
    for st in (st for t in trees for st in t.body):
        kinds = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)
        if isinstance(st, kinds) and not _program_call(getattr(st, "value", None) or ast.Pass()):
            theirs |= _bound(list(ast.walk(st)))
    return bool(mine & theirs)


def _aliased(n: ast.AST) -> bool:
    """``n`` binds a name to a value of the program's read without a call (``log =
    LOG``, ``row = GRID[0]``), a copy here that the program's calls leave as it was."""
    if not isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) or n.value is None:
        return False
    v = n.value
    while isinstance(v, (ast.Attribute, ast.Subscript)):
        v = v.value
    return _read(v)


def _read(n: ast.AST) -> bool:
    """``n`` is a read of a name of the program's (rewritten ``_ra_g('f')``)."""
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "_ra_g"


def _resent(nodes: list[ast.AST]) -> bool:
    """One name of the tests is handed to the program in two calls or more (``add(a,
    2)``, ``add(a, 3)``): the program may hand back the object it was given and
    change it later, which a copy does not follow."""
    seen: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Call) and _program_call(n):
            args = [*n.args, *(k.value for k in n.keywords)]
            here = {c.id for a in args for c in ast.walk(a) if isinstance(c, ast.Name)}
            if here & seen:
                return True
            seen |= here
    return False


def _program_call(n: ast.AST) -> bool:
    """``n`` is a call of a name of the program's (rewritten ``_ra_g('f')(...)``)."""
    return isinstance(n, ast.Call) and _read(n.func)


def _effect(n: ast.AST, own: set[str], answers: set[str], loaded: set[str]) -> bool:
    """``n`` tests what a call did rather than what it answered, or changes the
    program's state without a call: a call standing alone of the program's
    (``sort_ip(lst)``), of a name that may hold one of its functions (a helper's
    ``candidate(lst)``) or of a method of a value of the program's or of what it
    answered (``CONFIG.update(x=1)``, ``get().append(1)``, ``r.append(1)`` after ``r =
    get()``), a store into or ``del`` of one (``CONFIG['mode'] = 'upper'``, ``get()[0]
    = 1``), an answer asked to be None (``sort_ip(lst) is None``) or bound to a name
    never read (``_ = sort_ip(lst)``). The program works on copies here, so a raise
    after such a statement may be true for a right program."""
    if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call):
        f = n.value.func
        mine = isinstance(f, ast.Name) and (f.id in own or f.id.startswith("_ra_"))
        if _program_call(n.value) or (isinstance(f, ast.Name) and not mine):
            return True
        if isinstance(f, ast.Attribute):
            return any(_answered(c, answers) for c in ast.walk(f.value))
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "_ra_is":
        none = any(isinstance(a, ast.Constant) and a.value is None for a in n.args)
        return none and any(map(_program_call, n.args))
    if isinstance(n, ast.Assign) and _program_call(n.value):
        unread = [t for t in n.targets if isinstance(t, ast.Name) and t.id not in loaded]
        if unread:
            return True
    if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]
        stores = [c for t in targets if not isinstance(t, ast.Name) for c in ast.walk(t)]
        return any(_answered(c, answers) for c in stores)
    return False


def _answered(n: ast.AST, answers: set[str]) -> bool:
    """``n`` is a call of the program's, a read of one of its names, or a name bound
    to what one answered (or a module's name the tests never bind)."""
    return _read(n) or _program_call(n) or (isinstance(n, ast.Name) and n.id in answers)


def _condition(tree: ast.AST, line: int, col: int) -> tuple[Any, bool] | None:
    """(the test of the nearest ``if`` or ``while`` around the ``raise`` at ``line``,
    ``col``, or None; whether that test compares two values with ``is``), or None
    where there is no such ``raise``."""
    parents: dict[ast.AST, ast.AST] = {}
    hit = None
    for n in ast.walk(tree):
        for c in ast.iter_child_nodes(n):
            parents[c] = n
        if isinstance(n, ast.Raise) and (n.lineno, n.col_offset) == (line, col):
            hit = n if n.exc is not None else None
    if hit is None:
        return None
    up: ast.AST = hit
    while up in parents:
        up = parents[up]
        if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        if isinstance(up, (ast.If, ast.While)):
            return up.test, any(_is_pair(c) for c in ast.walk(up.test))
    return None, False


def _is_pair(n: ast.AST) -> bool:
    """``_ra_is(a, b)`` (the rewritten ``a is b``) with neither side a constant."""
    return (
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id == "_ra_is"
        and not any(isinstance(a, ast.Constant) for a in n.args)
    )


def _observed(cond: ast.AST, scope: dict[str, Any]) -> set[str]:
    """The names ``cond`` reads but for those only handed to the program (the
    arguments of ``_ra_g('srt')(xs)``, or of ``c(xs)`` where ``c`` holds a function
    of the program's): an in-place change is seen through the rest."""
    out: set[str] = set()
    todo = [cond]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Call):
            f = n.func.func
            if isinstance(f, ast.Name) and f.id == "_ra_g":
                continue  # a call of the program's: its arguments are handed over
        held = isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        if held and _type(scope.get(n.func.id)) is Remote:  # type: ignore[attr-defined]
            continue  # c(xs) in a helper called with the program's function
        if isinstance(n, ast.Name):
            out.add(n.id)
        todo.extend(ast.iter_child_nodes(n))
    return out
