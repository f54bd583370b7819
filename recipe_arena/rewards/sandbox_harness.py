"""Runs inside the sandbox (standard library only, after the source of sandbox_split.py,
sandbox_wire.py, sandbox_remote.py and sandbox_report.py).

``argv[1]`` is a JSON spec: ``mode`` ("asserts" or "io"), the uids of the two sides
(null: stay as started), and the limits. The launcher starts as root of the sandbox
(it may change uid, nothing else) and, for assert tests, forks:

- the *program side* (uid ``uid_p``, one process, RLIMIT_AS): gets the candidate
  program (nothing else) and runs it, then answers the check side's requests (a
  global name; a call, attribute, item, iteration, len, truth, str or repr of one of
  its objects, with the evaluated arguments) with plain values (exact builtin types,
  encoded as JSON) or handles to its objects. Its stdin/stdout are /dev/null.
- the *check side* (uid ``uid_c``, one process, its own RLIMIT_AS): reads the row's
  tests from stdin, rewrites them (sandbox_split), runs them whole, holding the
  program's objects as ``Remote`` handles, and reports to the verifier on a private
  copy of stdout: ``T n`` (asserts), ``H i j ...`` (those inside test functions), ``K i
  j ...`` (those of them no later statement can run), ``S i j ...`` (asserts the
  top-level statement now starting may run), ``R i 0|1`` per assert when the statement
  that ran it ends, then ``F`` (it finished: an ``S`` without ``F`` fails its asserts,
  ``_Report``), ``N text`` (first error note), ``D`` (every statement ran: without it
  the ``H`` asserts fail), ``E text`` (the row cannot be judged: tests that do not
  parse, or an unsupported test form).

The fork happens before the tests are read, so the program side never holds them; the
two sides run as different uids, so the program can neither signal nor read the check
side. Every value the checks compare crossed a pipe as data, and only the arguments
of the program's own calls ever cross the other way. For stdin/stdout tests
("io") the launcher becomes the program itself with the verifier's pipes.
"""

from __future__ import annotations

import builtins
import json
import os
import resource
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # defined by the sources that run first
    from typing import IO, Any

    from recipe_arena.rewards.sandbox_remote import (
        _REFUSED,
        _REQUEST,
        ProbeError,
        Remote,
        _Channel,
        guarded,
        guarded_compile,
        restrict_pickle,
        same,
        standard,
    )
    from recipe_arena.rewards.sandbox_report import _clean, _Report
    from recipe_arena.rewards.sandbox_wire import MAX_LINE, _line, _repr, _type, dec, enc

SIGPENDING = 64
"""Signals a side may have queued, POSIX timers included (each holds a queue entry):
kernel memory that RLIMIT_AS does not count, 96,367 timers (38 MB) at the host's limit."""
_UNARY: dict[str, Any] = {"iter": iter, "len": len, "bool": bool, "str": str, "repr": _repr}
"""The one-argument operations a proxy may ask of a value, bound before any test runs."""


# ----------------------------------------------------------------------------- launcher
def _become(uid: int | None, lim: dict[str, Any], nproc: int | None) -> None:
    """Limits, then the side's own uid (dropping every capability with root)."""
    mb = 1 << 20
    for res, val in (
        (resource.RLIMIT_AS, lim["memory_mb"] * mb),
        (resource.RLIMIT_FSIZE, lim["fsize_mb"] * mb),
        (resource.RLIMIT_NOFILE, lim["nofile"]),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_SIGPENDING, SIGPENDING),
    ):
        resource.setrlimit(res, (val, val))
    resource.setrlimit(resource.RLIMIT_CPU, (lim["cpu_s"], lim["cpu_s"] + 1))
    if nproc is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)


def _no_dump() -> None:
    """Keep a same-uid program from reading this process (weaker modes only: with
    its own uid the check side is already out of the program's reach)."""
    import ctypes

    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4


def _parent_death_kill() -> None:
    import ctypes

    ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG = 1, SIGKILL


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec.get("pdeathsig"):
        _parent_death_kill()
    lim = spec["limits"]
    if spec["mode"] == "io":
        _become(spec["uid_p"], lim, spec["nproc"])
        os.chdir(spec.get("cwd_p") or os.getcwd())
        _run_io()
        return
    to_p_r, to_p_w = os.pipe()
    from_p_r, from_p_w = os.pipe()
    sys.stdout.flush()
    if os.fork() == 0:
        try:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            lo, hi = sorted((to_p_r, from_p_w))
            os.closerange(3, lo)
            os.closerange(lo + 1, hi)
            os.closerange(hi + 1, 1 << 20)
            _become(spec["uid_p"], lim, spec["nproc"])
            os.chdir(spec.get("cwd_p") or os.getcwd())  # its own folder (sandbox.py)
            _program_side(os.fdopen(to_p_r, "rb"), os.fdopen(from_p_w, "wb"))
        finally:
            os._exit(0)
    os.close(to_p_r)
    os.close(from_p_w)
    check_lim = dict(lim, memory_mb=spec["check_memory_mb"])
    _become(spec["uid_c"], check_lim, 1 if spec["uid_c"] is not None else None)
    if spec["uid_c"] is None:
        _no_dump()
    os.chdir("/")
    _check_side(os.fdopen(to_p_w, "wb"), os.fdopen(from_p_r, "rb"))


def _read_exact(fd: int, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return out


def _run_io() -> None:
    """Stdin starts with the program (8-byte length, then UTF-8); the rest is its input,
    read exactly so that ``open(0)`` in the program sees all of it."""
    import builtins

    size = int.from_bytes(_read_exact(0, 8), "big")
    code = compile(_read_exact(0, size).decode("utf-8", "surrogatepass"), "solution.py", "exec")
    sys.argv = [""]
    exec(code, {"__name__": "__main__", "__builtins__": builtins})


# ----------------------------------------------------------------------------- program side
def _program_side(inp: IO[bytes], out: IO[bytes]) -> None:
    """Load the program, then answer one request per line: ``g`` (a global name), and
    ``call``, ``attr``, ``setattr``, ``item``, ``setitem``, ``delitem``, ``iter``,
    ``next``, ``len``, ``bool``, ``str``, ``repr`` on a handle. A reply is a plain value
    (objects that are not plain become handles: an index into ``objs``), ``stop`` (end of
    an iterator) or ``err`` (what the operation raised)."""
    import builtins

    try:
        req = _line(inp)
    except Exception:
        return
    scope = {"__name__": "__main__", "__builtins__": builtins}
    write, dumps, flush = out.write, json.dumps, out.flush
    try:
        exec(compile(req["code"], "solution.py", "exec"), scope)
    except BaseException as e:  # SystemExit included: an exit here fails every request
        write(dumps({"load_error": f"{_type(e).__name__}: {e}"[:300]}).encode() + b"\n")
        flush()
        return
    del req
    write(b'{"ok": 1}\n')
    flush()
    objs: list[Any] = []
    index: dict[int, int] = {}  # id(obj) -> handle; objs keeps every id alive

    def ref(o: Any) -> dict[str, Any]:
        k = index.get(id(o))
        if k is None:
            k = index[id(o)] = len(objs)
            objs.append(o)
        return {"ref": k, "t": _type(o).__name__[:60]}

    def val(e: dict[str, Any]) -> Any:
        return dec(e, lambda r: objs[r["ref"]])

    while True:
        try:
            msg = _line(inp)
        except (EOFError, ValueError):
            return
        try:
            op = msg["op"]
            if op == "g":
                if msg["n"] not in scope:
                    raise NameError(f"name {msg['n']!r} is not defined")
                v = scope[msg["n"]]
            else:
                o = objs[msg["r"]]
                if op == "call":
                    v = o(*[val(a) for a in msg["a"]], **{k: val(x) for k, x in msg["kw"].items()})
                elif op == "attr":
                    v = getattr(o, msg["n"])
                elif op == "setattr":
                    setattr(o, msg["n"], val(msg["v"]))
                    v = None
                elif op == "item":
                    v = o[val(msg["k"])]
                elif op == "setitem":
                    o[val(msg["k"])] = val(msg["v"])
                    v = None
                elif op == "delitem":
                    del o[val(msg["k"])]
                    v = None
                elif op == "next":
                    try:
                        v = next(o)
                    except StopIteration:  # the end of an iterator, only from `next`:
                        line = '{"stop": 1}'  # elsewhere it would end a test's map()
                        write(line.encode() + b"\n")
                        flush()
                        continue
                else:
                    v = _UNARY[op](o)
            line = dumps({"v": enc(v, 0, ref)})
            if len(line) > MAX_LINE:
                raise ValueError(f"value longer than {MAX_LINE} bytes")
        except BaseException as e:
            t = _type(e).__name__
            line = dumps({"err": f"{t}: {e}"[:300], "x": t, "m": str(e)[:300]})
        write(line.encode() + b"\n")
        flush()


def _check_side(to_p: IO[bytes], from_p: IO[bytes]) -> None:
    req = json.loads(sys.stdin.buffer.read())
    report = _Report(os.fdopen(os.dup(1), "w"))
    say = report.say
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process

    try:
        plan = split_tests(req["tests"])  # type: ignore[name-defined]  # noqa: F821 - from sandbox_split.py's source
    except (ValueError, RecursionError, MemoryError, SyntaxError) as e:
        say("E " + _clean(f"{_type(e).__name__}: {e}"))
        return
    report.start(plan["n_asserts"], plan["inner"])
    channel = _Channel(to_p, from_p)
    _REQUEST[:] = [channel.request]
    channel.start(req["code"])
    del req
    cache: dict[str, Any] = {}
    star = {name: module for name, module in plan["star"]}  # from math import *

    def program_name(name: str) -> Any:
        if name in cache:
            return cache[name]
        v = channel.request({"op": "g", "n": name})
        if name in star:
            v = standard(v, getattr(__import__(star[name]), name), name, star[name])
        if _type(v) is Remote:  # functions and classes: one request per name
            cache[name] = v
        return v

    outcome: dict[int, bool] = {}
    touched: set[int] = set()  # asserts run by the current top-level statement
    entered: set[int] = set()  # asserts of the test functions it called
    notes: list[str] = []

    def check(i: int, value: Any) -> None:
        touched.add(i)
        was, outcome[i] = outcome.get(i, True), False  # failed if bool() raises (__bool__)
        ok = bool(value)
        outcome[i] = was and ok
        if not ok:
            raise AssertionError

    scope = {
        "__name__": "__test__",
        "__builtins__": builtins,
        "_ra_g": program_name,
        "_ra_assert": check,
        "_ra_is": same,
        "_ra_enter": lambda first, last: entered.update(report.open_range(first, last)),
        "_ra_mark": _mark,
        "eval": guarded(eval, "eval"),  # a string of the program's runs here
        "exec": guarded(exec, "exec"),
        "compile": guarded_compile,
    }
    _standard_names(scope, plan)
    # An assert is reported when the statement that ran it ends (an assert in a test
    # helper, ``def check(candidate)``, runs in the statement that calls the helper);
    # one never reported counts as failed. A statement that does not finish fails every
    # assert it holds or ran, and every assert of the test functions it called: a loop's
    # assert (or a helper's, called once per case) that passed its first cases would
    # otherwise pass when the program raises or exits on a later one.
    steps = zip(plan["stmts"], plan["reads"], plan["settled"], plan["stale"], strict=True)
    for (src, ids), reads, keep, stale in steps:
        # and those of the test functions it reaches that passed so far (one cut short
        # ends the run, so only an earlier R i 1 could stand; fewer S lines)
        report.keep(keep)  # no later statement runs them: a cut here keeps their R
        report.open(ids)  # first: reached() may run code of an object a string made
        may = {i for i in reached(reads, scope) if outcome.get(i)} | set(ids)
        report.open(may)
        try:
            exec(compile(src, "test", "exec"), scope)
        except BaseException as e:
            touched.update(may, entered, reached(reads, scope))
            for name in stale:  # left half made: a later assert reading one fails
                scope.pop(name, None)
            for i in touched:
                outcome[i] = False
            if not notes and not isinstance(e, AssertionError):
                notes.append(
                    str(e) if isinstance(e, ProbeError) else f"test raised {_type(e).__name__}: {e}"
                )
        if _REFUSED:
            say("E " + _clean(_REFUSED[0]))
            return
        for i in sorted(touched):
            say(f"R {i} {int(outcome[i])}")
        report.close()
        touched.clear()
        entered.clear()
    report.finish(notes)


def _standard_names(scope: dict[str, Any], plan: dict[str, Any]) -> None:
    """Bind in the tests' ``scope`` the standard library's modules and names the plan
    gives the check side, and restrict ``pickle`` where the tests mention it."""
    for name in plan["modules"]:  # imports the tests left out (sandbox_split)
        try:  # noqa: SIM105 - the sandbox imports no more modules than it needs
            scope[name] = __import__(name)
        except Exception:  # not in this sandbox: the program could not import it either
            pass
    for name, module in plan["check_names"]:  # isclose, pi: the standard library's
        scope[name] = getattr(__import__(module), name)
    if any("pickle" in src or "shelve" in src for src, _ in plan["stmts"]):
        restrict_pickle()


def _mark(first: int, last: int) -> Any:
    """``@_ra_mark(first, last)`` on a test function holding asserts ``first..last-1``."""

    def mark(fn: Any) -> Any:
        fn._ra_range = (first, last)
        _MADE_BY[fn.__code__] = fn
        return fn

    return mark


_FUNCTION, _METHOD = _type(_mark), _type(_mark.__get__(0))  # no ``types`` import
_GENERATOR = _type((lambda: (yield))())
_LAZY = (map, filter, zip, enumerate, reversed)
"""Builtin iterators that call a function (or run a generator) of the tests when a later
statement resumes them; their ``__reduce__`` names what they hold."""
_CALLS = ("builtins", "callable_iterator")
"""``iter(f, sentinel)``'s type, lazy like those of _LAZY."""
_HOLDERS = (list, tuple, set, frozenset, dict)
"""Containers whose items ``reached`` looks into, subclasses too (a namedtuple, an
``OrderedDict``, a ``defaultdict``), as well as a ``deque``."""
_MADE_BY: dict[Any, Any] = {}
"""A marked test function by its code: what a generator of it (``g = gen()``) runs."""


def _named(t: Any, module: str, name: str) -> bool:
    """Type ``t`` is ``module.name`` (``functools.partial``), read without importing it."""
    return bool(t.__name__ == name and t.__module__ == module)


def _code_names(code: Any) -> set[str]:
    """The global names ``code`` reads, and those of the functions, lambdas and
    comprehensions inside it (``lambda: (lambda x: t(x))(1)`` reads ``t``)."""
    out, todo = set(), [code]
    while todo:
        c = todo.pop()
        out.update(c.co_names)
        todo.extend(k for k in c.co_consts if _type(k) is _type(code))
    return out


def reached(names: list[str], scope: dict[str, Any]) -> set[int]:
    """Ids of the asserts of the test functions that the tests' variables ``names``
    hold (``u = t``), directly or as a method, a class, an instance of a test class, a
    generator (``g = gen()``, ``(t(f(x), y) for ...)``) or a lazy ``map``, ``filter``,
    ``zip``, ``iter(f, sentinel)`` or itertools object, an item of a small container (a ``deque``, a
    namedtuple, an ``OrderedDict`` too), a ``partial``, or through the names, closure
    and defaults of a test function or lambda (``u = lambda r, b: t(r, b)``, ``u =
    lambda r, b, f=t: f(r, b)``): a statement that reads them and does not finish
    fails those asserts, as it fails those of a test function it names."""
    out: set[int] = set()
    seen: set[int] = set()
    todo = [(scope[n], 0) for n in names if n in scope]
    while todo:
        v, depth = todo.pop()
        t = _type(v)
        if t is Remote or depth > 3 or id(v) in seen:
            continue
        seen.add(id(v))
        try:
            if t is _FUNCTION and v.__globals__ is scope:  # a test's (a lambda too)
                first, last = v.__dict__.get("_ra_range", (0, 0))
                out.update(range(first, last))
                cells = [c.cell_contents for c in v.__closure__ or ()]
                names_read = [scope[n] for n in _code_names(v.__code__) if n in scope]
                defaults = [*(v.__defaults__ or ()), *(v.__kwdefaults__ or {}).values()]
                todo.extend((x, depth + 1) for x in cells + names_read + defaults)
            elif _named(t, "functools", "partial"):
                todo.extend((x, depth + 1) for x in (v.func, *v.args, *v.keywords.values()))
            elif t in (_METHOD, staticmethod, classmethod):
                todo.append((v.__func__, depth + 1))
            elif t is _GENERATOR:  # ``next(g)`` resumes it: what it runs and holds
                made, frame = _MADE_BY.get(v.gi_code), v.gi_frame
                runs = [scope[n] for n in _code_names(v.gi_code) if n in scope]
                held = list(frame.f_locals.values()) if frame is not None else []
                todo.extend((x, depth + 1) for x in [made, *runs, *held] if x is not None)
            elif t in _LAZY or t.__module__ == "itertools" or _named(t, *_CALLS):  # f, xs
                todo.extend((x, depth + 1) for x in v.__reduce__()[1])
            elif (isinstance(v, _HOLDERS) or _named(t, "collections", "deque")) and len(v) <= 64:
                todo.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
                if t.__module__ == "__test__":  # a test class's own container: its methods
                    todo.append((t, depth + 1))
            elif isinstance(v, type) and v.__module__ == "__test__":  # a test class
                todo.extend((x, depth + 1) for c in v.__mro__ for x in vars(c).values())
            elif t is not _type(builtins) and not isinstance(v, type):  # an instance
                if getattr(t, "__module__", None) == "__test__":  # of a test class
                    todo.append((t, depth + 1))
                attrs = vars(v)  # a SimpleNamespace's too; raises for one without
                if len(attrs) <= 64:
                    todo.extend((x, depth + 1) for x in attrs.values())
        except BaseException:  # an object of the tests' that will not be looked into
            continue
    return out


if __name__ == "__main__":
    main()
