"""Runs inside the sandbox (standard library only, between sandbox_report.py's source
and sandbox_harness.py's): whether an exception that ended a top-level statement of
the tests is a check the tests wrote with ``raise`` instead of ``assert`` (``if
srt([2, 3, 1]) != [1, 2, 3]: raise AssertionError``). Such a check counts as one
failed check (report line ``X``, ``code.parse_report``), as ``assert not cond`` would.

An exception the sandbox raises where it cannot do what honest tests ask (``except``
of the program's class, ``next()`` on its generator, ``isinstance`` on its object, an
import it lacks, the program's own ``ValueError`` subclass, ``pytest.raises``) is no
such check: only a ``raise <expr>`` written in the tests' own source counts, at the
innermost frame, outside any ``except`` (no context), and only where the sandbox's
ways cannot have made its condition true for a right program: the program handed back
no object of its own in the run (``type``, ``isinstance``, ``is`` on one differ here),
the condition reads no value the tests handed the program (an in-place change is not
seen) and compares no two values with ``is`` (answers are copies), and the tests
neither test what a call did rather than what it answered (``sort_ip(lst)`` standing
alone, ``get().append(1)``: ``_effect``) nor name anything whose state the two sides
do not share (``DENIED``: files, output, ``random``, the clock, introspection).

Not counted, so still passed by a wrong program: a raise check on a call where the
program raises or hands back an object of its own (the exception is the sandbox's or
the program's, which the sandbox cannot tell from its own limits)."""

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
     "__dict__", "__name__", "__module__", "__qualname__", "SkipTest", "skip")
)  # fmt: skip
"""Names whose reading in the tests turns the count off: state the check side and the
program side do not share (files, standard streams, ``random``, the clock), or the
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
    an object of its own (``handles``), for ``counted``."""

    def __init__(self, sources: list[str]) -> None:
        self.codes: dict[Any, str] = {}
        self.handles = 0
        self.off = True  # no raise in the tests, or one that cannot count
        try:
            if any("raise" in src for src in sources):
                self.off = _off([ast.parse(src) for src in sources])
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
    ``DENIED``, or test what a call did (``_effect``)."""
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
    answers = {  # names bound to what the program answered: r of r = get()
        t.id
        for n in nodes
        if isinstance(n, ast.Assign) and _program_call(n.value)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    return any(_effect(n, own, answers, loaded) for n in nodes)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _program_call(n: ast.AST) -> bool:
    """``n`` is a call of a name of the program's (rewritten ``_ra_g('f')(...)``)."""
    return (
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Call)
        and isinstance(n.func.func, ast.Name)
        and n.func.func.id == "_ra_g"
    )


def _effect(n: ast.AST, own: set[str], answers: set[str], loaded: set[str]) -> bool:
    """``n`` tests what a call did rather than what it answered: a call standing alone
    of the program's (``sort_ip(lst)``), of a name that may hold one of its functions
    (a helper's ``candidate(lst)``) or of a method of what it answered
    (``get().append(1)``, ``r.append(1)`` after ``r = get()``), a store into what it
    answered (``get()[0] = 1``), an answer asked to be None (``sort_ip(lst) is None``)
    or bound to a name never read (``_ = sort_ip(lst)``). The program works on copies
    here, so a raise after such a statement may be true for a right program."""
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
    if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target]
        stores = [c for t in targets if not isinstance(t, ast.Name) for c in ast.walk(t)]
        return any(_answered(c, answers) for c in stores)
    return False


def _answered(n: ast.AST, answers: set[str]) -> bool:
    """``n`` is a call of the program's or a name bound to what one answered."""
    return _program_call(n) or (isinstance(n, ast.Name) and n.id in answers)


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
