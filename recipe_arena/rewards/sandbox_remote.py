"""Runs inside the sandbox (standard library only, between sandbox_wire.py's source and
sandbox_harness.py's): the check side's handles to the program's objects (``Remote``)
and its end of the pipes to the program side (``_Channel``)."""

from __future__ import annotations

import ast
import builtins
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # defined by sandbox_wire.py's source, which runs first
    from typing import IO, Any

    from recipe_arena.rewards.sandbox_wire import _line, _send, _type, dec, enc


class ProbeError(Exception):
    """A request to the program side failed (it exited, could not load, or answered
    with something that is not an answer)."""


class Unsupported(ProbeError):
    """The test hands the program a value that is not plain: the row is refused."""


_REQUEST: list[Any] = []  # the check side's request function (set by _check_side)
_REFUSED: list[str] = []  # why a value was not sent (the row's verdict: an error)


def _op(op: str, target: Remote | None, **fields: Any) -> Any:
    if target is not None:
        fields["r"] = object.__getattribute__(target, "_ra_k")
    fields["op"] = op
    return _REQUEST[0](fields)


def _plain_type(o: Any) -> str:
    return str(object.__getattribute__(o, "_ra_t"))


def _arg(v: Any) -> dict[str, Any]:
    """A value the test hands the program: plain, or a handle it got from the program."""

    def handle(o: Any) -> dict[str, Any]:
        if _type(o) is Remote:
            return {"ref": object.__getattribute__(o, "_ra_k")}
        why = (
            f"unsupported test form: the test hands the program a {_type(o).__name__}; only "
            "plain builtin values and the program's own objects cross into the sandbox"
        )
        _REFUSED.append(why)  # even if the test catches the exception
        raise Unsupported(why)

    try:
        return enc(v, 0, handle)
    except ValueError as e:
        raise ProbeError(f"test value not sent: {e}") from None


class Remote:
    """The check side's handle to one object of the program side. What it can do is
    forwarded (call, attribute, item, iteration, len, truth, str, repr) with the
    evaluated arguments only. ``==`` and ``!=`` on it raise, itself included: a program
    object with its own ``__eq__`` never decides a comparison, and a test that builds
    its expected value from the program's class (``expected = ListNode(3, ...)``)
    cannot be passed by returning that very object (``is`` still compares identity)."""

    __slots__ = ("_ra_k", "_ra_t", "_ra_v")

    def __call__(self, *args: Any, **kw: Any) -> Any:
        got = _op("call", self, a=[_arg(x) for x in args], kw={k: _arg(x) for k, x in kw.items()})
        fn = object.__getattribute__(self, "_ra_v")
        if fn is not None:  # a name of the tests' ``from math import *`` (``standard``)
            _standard_call(fn, got, args, kw)
        return got

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _op("attr", self, n=name)

    def __setattr__(self, name: str, value: Any) -> None:
        _op("setattr", self, n=name, v=_arg(value))

    def __getitem__(self, key: Any) -> Any:
        return _op("item", self, k=_arg(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        _op("setitem", self, k=_arg(key), v=_arg(value))

    def __delitem__(self, key: Any) -> None:
        _op("delitem", self, k=_arg(key))

    def __len__(self) -> int:
        return _op("len", self)  # type: ignore[no-any-return]

    def __bool__(self) -> bool:
        return _op("bool", self)  # type: ignore[no-any-return]

    def __iter__(self) -> Any:
        it = _op("iter", self)
        while True:
            try:
                yield _op("next", it)
            except StopIteration:
                return

    def __str__(self) -> str:
        return _op("str", self)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return _op("repr", self)  # type: ignore[no-any-return]

    def __eq__(self, other: object) -> bool:
        raise ProbeError(
            f"the program returned a {_plain_type(self)}, not a plain value, where the test "
            "compares it"
        )

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__


def _agrees(got: Any, want: Any) -> bool:
    """``got`` (the program's answer) equals the plain value ``want`` (nan equals nan;
    a float within 1e-9 of it: a right program's own ``sqrt`` may differ in the last
    digit)."""
    if _type(got) is Remote:
        return False
    try:
        if _type(got) is float and _type(want) is float and abs(got - want) <= 1e-9 * abs(want):
            return True
        return bool(got == want) or enc(got) == enc(want)
    except Exception:  # a handle inside got, or values that do not compare
        return False


def _standard_call(fn: Any, got: Any, args: Any, kw: Any) -> None:
    """Fail (ProbeError) when the standard ``fn`` answers a plain value for these plain
    arguments and the program's function answered ``got``, another one. Arguments
    holding the program's objects, a standard function that raises on them or answers
    with an object that is not plain: ``got`` stands (no more than before)."""
    try:
        enc([list(args), kw])
        want = fn(*args, **kw)
        enc(want)
    except Exception:
        return
    if not _agrees(got, want):
        name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__name__', '?')}"[:80]
        raise ProbeError(
            f"the program's {name.split('.')[-1]} is not {name}, which the tests import with *"
        )


def standard(mine: Any, theirs: Any, name: str, module: str) -> Any:
    """The program's value ``mine`` of a name the tests' ``from <module> import *``
    binds to ``theirs`` (sandbox_split.STAR_MODULES): a function comes back as a handle
    whose calls must agree with ``theirs`` (``_standard_call``); a plain constant must
    equal it. The program's own value is what the tests then use, as before."""
    if _type(mine) is Remote and callable(theirs):
        r = object.__new__(Remote)
        for slot in ("_ra_k", "_ra_t"):
            object.__setattr__(r, slot, object.__getattribute__(mine, slot))
        object.__setattr__(r, "_ra_v", theirs)
        return r
    if not callable(theirs):
        try:
            enc(theirs)
        except (TypeError, ValueError):
            return mine
        if not _agrees(mine, theirs):
            raise ProbeError(
                f"the program's {name} is not {module}.{name}, which the tests import with *"
            )
    return mine


def same(a: Any, b: Any) -> bool:
    """``a is b`` in the tests: two handles are the same when they name one object of
    the program (each answer brings a new handle, ``_Channel.handle``)."""
    if a is b:
        return True
    return (
        _type(a) is Remote
        and _type(b) is Remote
        and object.__getattribute__(a, "_ra_k") == object.__getattribute__(b, "_ra_k")
    )


def _raised(rep: dict[str, Any]) -> BaseException:
    """What the program raised, as the same builtin exception when there is one (so a
    test's ``except ValueError`` works), else ProbeError."""
    cls = getattr(builtins, str(rep.get("x")), None)
    if (
        isinstance(cls, type)
        and issubclass(cls, Exception)
        and not issubclass(cls, (StopIteration, StopAsyncIteration, Warning))
    ):
        try:
            return cls(str(rep.get("m", "")))
        except Exception:
            pass
    return ProbeError("test raised " + str(rep.get("err")))


class _Channel:
    """The check side's end of the pipes to the program side: sends requests, decodes
    answers (the program's objects become ``Remote`` handles, one per object), and
    remembers why the program can no longer answer (``dead``), after which every
    request fails with that reason."""

    def __init__(self, to_p: IO[bytes], from_p: IO[bytes]) -> None:
        self.to_p, self.from_p = to_p, from_p
        self.dead: str | None = None

    def start(self, code: str) -> None:
        """Hand the program side the candidate program and read whether it loaded."""
        try:
            _send(self.to_p, {"code": code})
            first = self.answer()
            if "load_error" in first:
                self.dead = "program failed: " + str(first["load_error"])
            elif "ok" not in first:
                self.dead = "program did not start"
        except (OSError, ProbeError):
            self.dead = self.dead or "program did not start"

    def handle(self, e: dict[str, Any]) -> Remote:
        """A new handle for each answer, even to an object handed out before: Python
        compares container items by identity before ``==`` (``[x] == [y]``, ``x in
        [y]``, ``.count``, dict values), so one handle per object let a program pass
        ``[reverse_list(head)] == [expected]`` by handing back the test's own
        ``expected``. Identity is asked with ``is`` (``same``)."""
        k = e["ref"]
        if not isinstance(k, int):
            raise ValueError("bad handle")
        r = object.__new__(Remote)
        object.__setattr__(r, "_ra_k", k)
        object.__setattr__(r, "_ra_t", str(e.get("t"))[:60])
        object.__setattr__(r, "_ra_v", None)
        return r

    def answer(self) -> Any:
        try:
            rep = _line(self.from_p)
            if not isinstance(rep, dict):
                raise ValueError("not an answer")
        except (EOFError, OSError, ValueError, RecursionError):
            self.dead = self.dead or "program exited"
            raise ProbeError(self.dead) from None
        return rep

    def request(self, msg: dict[str, Any]) -> Any:
        if self.dead:
            raise ProbeError(self.dead)
        try:  # noqa: SIM105 - the sandbox imports no more modules than it needs
            _send(self.to_p, msg)
        except OSError:  # exited: its last words may still be in the pipe
            pass
        rep = self.answer()
        if "err" in rep:
            raise _raised(rep)
        if "stop" in rep and msg["op"] == "next":  # never from a call: it would end a map()
            raise StopIteration
        try:
            return dec(rep["v"], self.handle)
        except Exception:
            self.dead = "program answered with something that is not a value"
            raise ProbeError(self.dead) from None


SAFE_MODULES = frozenset(
    ("math", "cmath", "re", "datetime", "decimal", "fractions", "collections",
     "itertools", "statistics", "random", "json", "heapq", "bisect")
)  # fmt: skip
UNSAFE_NAMES = frozenset(
    ("eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "globals",
     "locals", "vars", "breakpoint", "input", "help", "memoryview", "exit", "quit")
)  # fmt: skip
UNSAFE_ATTRS = ("_", "f_", "gi_", "cr_", "ag_", "tb_", "co_")
"""What a string the tests evaluate may not read (``eval(repr(p))``, ``exec(f())``): it
may be the program's, and it runs on the check side, which holds the expected values
and writes the report. Refused: the names of UNSAFE_NAMES, names starting with ``_``,
attributes starting with UNSAFE_ATTRS (dunders, frames, code), imports, a name bound to
a module outside SAFE_MODULES (``os``, which the tests imported), one bound to a safe
module but to read an attribute of it (``re.sub``; not ``[y.enum for y in [re]]`` nor
``math.isclose = ...``), an attribute named like a module a safe module holds
(``re.enum``, ``m.enum`` whatever ``m`` is) or ``obj`` (``_refused_attr``), such an
attribute read by a class pattern (``case object(__globals__=g)``) or any positional
item of one (it reads the names its class lists, ``__match_args__``, which a class made
with ``type`` chooses), and a binding of a name that the scope it runs in or the
builtins already bind (``(isclose := ...)``, ``all = ...``: the tests' later asserts
would call the program's function), ``_binds_here``."""


def _bound(name: str, scopes: tuple[Any, ...]) -> Any:
    """What ``name`` is bound to in the first of ``scopes`` that binds it, or None."""
    return next((sc[name] for sc in scopes if name in sc), None)


def _unsafe(n: ast.AST, scopes: tuple[Any, ...], reads: set[int]) -> str | None:
    """What node ``n`` of a string the tests evaluate reads that it may not, or None;
    ``reads``: the ids of the names whose attribute the string reads (``re`` in
    ``re.sub``), the one use of a module it may make."""
    module_type = _type(builtins)
    if isinstance(n, (ast.Import, ast.ImportFrom)):
        return "an import"
    if isinstance(n, ast.Name):
        if n.id[:1] == "_" or n.id in UNSAFE_NAMES:
            return n.id
        bound = _bound(n.id, scopes)
        if _type(bound) is module_type and (
            bound.__name__ not in SAFE_MODULES or id(n) not in reads
        ):  # under another name (``[y.enum for y in [re]]``) or assigned to: not checked
            return n.id
    if isinstance(n, ast.MatchClass):  # ``case C(g)`` reads ``C.__match_args__[0]``
        if n.patterns:
            return "a class pattern's positional item"
        return next((a for a in n.kwd_attrs if _refused_attr(a)), None)
    if isinstance(n, ast.Attribute) and _refused_attr(n.attr):
        return n.attr
    return None


def _refused_attr(name: str) -> bool:
    """Whether a string the tests evaluate may not read attribute ``name`` of anything:
    UNSAFE_ATTRS, ``obj`` (an AttributeError's object: ``math`` from ``math.zzz``,
    held under a name the vetting does not know is a module), and the name of a
    module that a safe module the check side imported holds (``re.enum``,
    ``json.decoder``, ``statistics.sys``), whatever object it is read from."""
    if name.startswith(UNSAFE_ATTRS) or name == "obj":
        return True
    module_type = _type(builtins)
    return any(
        _type(getattr(sys.modules[m], name, None)) is module_type
        for m in SAFE_MODULES
        if m in sys.modules
    )


_INNER = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_NAMED = (*_INNER[:3], ast.ExceptHandler, ast.MatchAs, ast.MatchStar)
"""Nodes whose ``name`` a string binds where they stand (a def, ``except ... as``)."""
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _binds_here(tree: ast.AST) -> set[str]:
    """Names a string binds in the scope it runs in: its own targets, defs and classes
    (not those of its functions, lambdas or comprehensions), walrus targets outside its
    functions and lambdas, and every ``global`` or ``nonlocal`` name."""
    out: set[str] = set()
    todo: list[tuple[ast.AST, bool, bool]] = [(tree, True, False)]  # node, own scope, comp
    while todo:
        n, own, comp = todo.pop()
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
        elif own and isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
        elif own and not comp:
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                out.add(n.id)
            elif isinstance(n, _NAMED) and n.name:  # def, class, except ... as, match
                out.add(n.name)
            elif isinstance(n, ast.MatchMapping) and n.rest:
                out.add(n.rest)
        if isinstance(n, _INNER):  # decorators, defaults and bases run in this scope
            outer: list[Any] = list(getattr(n, "decorator_list", []))
            args = getattr(n, "args", None)
            if isinstance(args, ast.arguments):
                outer += [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
            outer += [*getattr(n, "bases", []), *getattr(n, "keywords", [])]
            todo.extend((c, own, comp) for c in outer)
            todo.extend((c, False, comp) for c in ast.iter_child_nodes(n) if c not in outer)
        else:
            inside = comp or isinstance(n, _COMPS)
            todo.extend((c, own, inside) for c in ast.iter_child_nodes(n))
    return out


def _vet(source: Any, mode: str, scopes: tuple[Any, ...]) -> None:
    """Raise ProbeError when ``source`` (a string, bytes or a tree the tests hand to
    ``eval``, ``exec`` or ``compile``) reads what UNSAFE_NAMES keeps out; a code
    object was vetted by ``compile``. A string or bytes that do not parse here, read as
    the real call reads them (eval strips leading blanks; bytes keep their coding
    cookie), raise the parse's own error and are not run."""
    if _type(source) is _type(_vet.__code__):
        if not any(source is c for c in _COMPILED):  # marshal.loads of the program's bytes
            raise ProbeError("the test evaluates code that its compile() did not make: not run")
        return
    if isinstance(source, (bytes, bytearray)):  # its text, as the real call reads it:
        source = bytes(memoryview(source))  # bytes keep their coding cookie
    elif isinstance(source, str):
        source = str.__str__(source)  # not a subclass's own __str__
    if mode == "eval" and _type(source) in (str, bytes):
        source = source.lstrip(" \t" if _type(source) is str else b" \t")  # as eval does
    # Parsed here or not run: one this parse refused ran unvetted when the real call
    # read it otherwise (`` __import__(...)``, which eval strips; latin-1 bytes).
    tree = ast.parse(source, "<string>", mode) if _type(source) in (str, bytes) else source
    if not isinstance(tree, ast.AST):
        return
    reads = {
        id(a.value)
        for a in ast.walk(tree)
        if isinstance(a, ast.Attribute) and _type(a.ctx) is ast.Load
    }
    for n in ast.walk(tree):
        bad = _unsafe(n, scopes, reads)
        if bad is not None:
            raise ProbeError(f"the test evaluates a string that reads {bad[:40]}: not run")
    for name in _binds_here(tree):  # ``(all := ...)`` would decide the tests' later asserts
        if any(name in sc for sc in scopes):
            raise ProbeError(f"the test evaluates a string that rebinds {name[:40]}: not run")


def guarded(fn: Any, mode: str) -> Any:
    """``eval`` or ``exec`` for the tests' scope: vets the source (``_vet``) against the
    caller's names, then runs it there, as the builtin would."""

    def run(source: Any, globals: Any = None, locals: Any = None, /) -> Any:  # noqa: A002
        if globals is None:
            frame = sys._getframe(1)
            globals, locals = frame.f_globals, frame.f_locals if locals is None else locals
        _vet(source, mode, (locals if locals is not None else globals, globals, vars(builtins)))
        return fn(source, globals, globals if locals is None else locals)

    return run


def guarded_compile(source: Any, filename: Any, mode: str, *a: Any, **kw: Any) -> Any:
    """``compile`` for the tests' scope: the source is vetted (``_vet``) first."""
    frame = sys._getframe(1)
    scopes = (frame.f_locals, frame.f_globals, vars(builtins))
    _vet(source, "eval" if mode == "eval" else "exec", scopes)
    code = compile(source, filename, mode, *a, **kw)
    _COMPILED.append(code)
    return code


_COMPILED: list[Any] = []  # what the tests' compile() made (kept alive: identity)
SAFE_PICKLED = {
    "builtins": {"int", "float", "complex", "str", "bytes", "bytearray", "list", "tuple",
                 "dict", "set", "frozenset", "bool", "range", "slice"},
    "collections": {"OrderedDict", "defaultdict", "Counter", "deque"},
    "datetime": {"date", "datetime", "time", "timedelta", "timezone"},
    "decimal": {"Decimal"},
    "fractions": {"Fraction"},
}  # fmt: skip
"""What ``pickle`` may look up on the check side (``restrict_pickle``)."""


def restrict_pickle() -> None:
    """Make the check side's ``pickle.loads``, ``load`` and ``Unpickler`` look up only
    SAFE_PICKLED: bytes of the program's that the tests unpickle would otherwise run
    any function of the check side (``os.system``, ``builtins.exec``)."""
    import io
    import pickle

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if name in SAFE_PICKLED.get(module, ()):
                return super().find_class(module, name)
            raise pickle.UnpicklingError(f"{module}.{name} is not unpickled here"[:200])

    def loads(data: Any, /, **kw: Any) -> Any:
        return Unpickler(io.BytesIO(data), **kw).load()

    def load(file: Any, **kw: Any) -> Any:
        return Unpickler(file, **kw).load()

    pickle.Unpickler, pickle.loads, pickle.load = Unpickler, loads, load  # type: ignore[misc]
