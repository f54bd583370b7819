"""Runs inside the sandbox (standard library only, after sandbox_split.py's source).

``argv[1]`` is a JSON spec: ``mode`` ("asserts" or "io"), the uids of the two sides
(null: stay as started), and the limits. The launcher starts as root of the sandbox
(it may change uid, nothing else) and, for assert tests, forks:

- the *program side* (uid ``uid_p``, one process, RLIMIT_AS): runs the candidate
  program, then answers probe requests from the check side with plain values
  (exact builtin types, encoded as JSON). Its stdin/stdout are /dev/null.
- the *check side* (uid ``uid_c``, one process, its own RLIMIT_AS): reads the row's
  tests from stdin, splits them (sandbox_split), hands the program side its part,
  runs the check statements, and reports to the verifier on a private copy of
  stdout: ``T n`` (asserts), ``R i 0|1`` per assert when its top-level statement
  ends, ``N text`` (first error note).

The fork happens before the tests are read, so the program side never holds them; the
two sides run as different uids, so the program can neither signal nor read the check
side. Every value the checks compare crossed a pipe as data. For stdin/stdout tests
("io") the launcher becomes the program itself with the verifier's pipes.
"""

from __future__ import annotations

import json
import os
import resource
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

_type, _repr = type, repr
_ATOMS = (int, float, bool, str, type(None))
_CONTAINERS = {list: "list", tuple: "tuple", set: "set", frozenset: "set", dict: "dict"}
MAX_LINE = 8 << 20
"""Longest probe request or answer (bytes); a longer one fails the probe."""


# ----------------------------------------------------------------------------- values
def enc(v: Any, depth: int = 0) -> dict[str, Any]:
    """Plain value -> JSON-able tree; anything but exact builtin types raises TypeError."""
    t = _type(v)
    if depth > 100:
        raise TypeError("value nested too deeply")
    if t is int and not -(10**300) < v < 10**300:
        return {"h": format(v, "x")}  # no digit limit, no float overflow
    if t is float and (v != v or v in (float("inf"), float("-inf"))):
        return {"r": _repr(v)}
    if t in _ATOMS:
        return {"a": v}
    if t is complex:
        return {"c": [enc(v.real), enc(v.imag)]}
    if t is bytes:
        return {"b": v.hex()}
    kind = _CONTAINERS.get(t)  # type: ignore[call-overload]
    if kind == "dict":
        return {"dict": [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in v.items()]}
    if kind:
        return {kind: [enc(x, depth + 1) for x in v]}
    raise TypeError(f"value of type {t.__name__} is not a plain builtin value")


def dec(e: dict[str, Any]) -> Any:
    if "a" in e:
        return e["a"]
    if "h" in e:
        return int(e["h"], 16)
    if "r" in e:
        return float(e["r"])
    if "c" in e:
        return complex(dec(e["c"][0]), dec(e["c"][1]))
    if "b" in e:
        return bytes.fromhex(e["b"])
    if "dict" in e:
        return {dec(k): dec(x) for k, x in e["dict"]}
    for kind, ctor in (("list", list), ("tuple", tuple), ("set", set)):
        if kind in e:
            return ctor(dec(x) for x in e[kind])
    raise ValueError("bad value encoding")


def _line(f: IO[bytes]) -> Any:
    data = f.readline(MAX_LINE + 1)
    if not data:
        raise EOFError
    if len(data) > MAX_LINE or not data.endswith(b"\n"):
        raise ValueError(f"message longer than {MAX_LINE} bytes")
    return json.loads(data)


def _send(f: IO[bytes], obj: Any) -> None:
    f.write(json.dumps(obj).encode() + b"\n")
    f.flush()


# ----------------------------------------------------------------------------- launcher
def _become(uid: int | None, lim: dict[str, Any], nproc: int | None) -> None:
    """Limits, then the side's own uid (dropping every capability with root)."""
    mb = 1 << 20
    for res, val in (
        (resource.RLIMIT_AS, lim["memory_mb"] * mb),
        (resource.RLIMIT_FSIZE, lim["fsize_mb"] * mb),
        (resource.RLIMIT_NOFILE, lim["nofile"]),
        (resource.RLIMIT_CORE, 0),
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
        os.chdir("/tmp" if spec["uid_p"] is not None else os.getcwd())
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
    import builtins

    try:
        req = _line(inp)
    except Exception:
        return
    scope = {"__name__": "__main__", "__builtins__": builtins}
    stmts, probes = req["p"], req["probes"]
    write, dumps, flush = out.write, json.dumps, out.flush
    try:
        exec(compile(req["code"], "solution.py", "exec"), scope)
    except BaseException as e:  # SystemExit included: an exit here fails every probe
        write(dumps({"load_error": f"{_type(e).__name__}: {e}"[:300]}).encode() + b"\n")
        flush()
        return
    done = 0
    compiled: dict[int, Any] = {}
    while True:
        try:
            msg = _line(inp)
        except EOFError:
            return
        k = msg["k"]
        pos, src, names = probes[k]
        try:
            while done < len(stmts) and stmts[done][0] < pos:
                done += 1
                exec(compile(stmts[done - 1][1], "test_setup", "exec"), scope)
            if k not in compiled:
                compiled[k] = eval(f"lambda {', '.join(names)}: ({src})", scope)
            env = msg["env"]
            value = compiled[k](**{n: dec(env[n]) for n in names})
            line = dumps({"v": enc(value)})
            if len(line) > MAX_LINE:
                raise ValueError(f"value longer than {MAX_LINE} bytes")
        except BaseException as e:
            line = dumps({"err": f"{_type(e).__name__}: {e}"[:300]})
        write(line.encode() + b"\n")
        flush()


# ----------------------------------------------------------------------------- check side
class ProbeError(Exception):
    pass


def _check_side(to_p: IO[bytes], from_p: IO[bytes]) -> None:
    import builtins

    req = json.loads(sys.stdin.buffer.read())
    report = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process

    def say(text: str) -> None:
        report.write(text + "\n")
        report.flush()

    try:
        plan = split_tests(req["tests"])  # type: ignore[name-defined]  # noqa: F821 - from sandbox_split.py's source
    except (ValueError, RecursionError, MemoryError, SyntaxError) as e:
        say("E " + f"{_type(e).__name__}: {e}"[:300].replace("\n", " "))
        return
    say(f"T {plan['n_asserts']}")
    notes: list[str] = []
    state: dict[str, str | None] = {"dead": None}
    try:
        _send(to_p, {"code": req["code"], "p": plan["p"], "probes": plan["probes"]})
    except OSError:
        state["dead"] = "program side did not start"

    def probe(k: int, env: dict[str, Any]) -> Any:
        if state["dead"]:
            raise ProbeError(state["dead"])
        data = {n: enc(v) for n, v in env.items()}
        try:
            _send(to_p, {"k": k, "env": data})
        except OSError:  # exited: its last words (a load error) may still be in the pipe
            state["dead"] = None
        try:
            msg = _line(from_p)
        except (EOFError, OSError):
            state["dead"] = "program exited"
            raise ProbeError(state["dead"]) from None
        if "load_error" in msg:
            state["dead"] = "program failed: " + str(msg["load_error"])
            raise ProbeError(state["dead"])
        if "err" in msg:
            raise ProbeError("test raised " + str(msg["err"]))
        return dec(msg["v"])

    outcome: dict[int, bool] = {}

    def check(i: int, value: Any) -> None:
        ok = bool(value)
        outcome[i] = outcome.get(i, True) and ok
        if not ok:
            raise AssertionError

    scope = {
        "__name__": "__test__",
        "__builtins__": builtins,
        "_ra_probe": probe,
        "_ra_assert": check,
    }
    for _pos, _kind, src, ids in plan["c"]:
        try:
            exec(compile(src, "test", "exec"), scope)
        except BaseException as e:
            for i in ids:
                outcome[i] = False
            if not notes and not isinstance(e, AssertionError):
                notes.append(
                    str(e) if isinstance(e, ProbeError) else f"test raised {_type(e).__name__}: {e}"
                )
        for i in ids:
            say(f"R {i} {int(outcome.get(i, False))}")
    if notes:
        say("N " + notes[0][:300].replace("\n", " "))


if __name__ == "__main__":
    main()
