"""Runs inside the sandbox (standard library only): execute the candidate, then probes.

Protocol: one JSON object on stdin, ``{"code": str, "setup": [str], "probes": [str]}``.
The harness reads all of it *before* the candidate runs and then points stdin at
/dev/null, so the candidate never sees the request. Each probe is an expression
(the candidate-dependent part of a test, e.g. ``f(3)``); its value is encoded with
a strict encoder (exact builtin types only) and written as one JSON line to a
private copy of stdout. The candidate's own stdout goes to /dev/null.

What the candidate can do here cannot raise its score: the expected values and
the comparisons never enter this process (the verifier evaluates them outside),
an early exit leaves probes unanswered (= failed), and a forged result line must
already contain the right value. A custom object (patched ``__eq__``) does not
encode and fails.
"""

import json
import os
import sys

_type, _repr, _isinstance, _len = type, repr, isinstance, len
_ATOMS = (int, float, bool, str, type(None), complex, bytes)
_CONTAINERS = {list: "list", tuple: "tuple", set: "set", frozenset: "set", dict: "dict"}


def _enc(v: object, depth: int = 0) -> dict:  # type: ignore[type-arg]
    t = _type(v)
    if depth > 50:
        raise TypeError("value nested too deeply")
    if t in _ATOMS:
        if (
            t is complex
            or t is bytes
            or (t is float and v != v)
            or t is float
            and v
            in (
                float("inf"),
                float("-inf"),
            )
        ):
            return {"r": _repr(v)}
        return {"a": v}
    if t in _CONTAINERS:
        kind = _CONTAINERS[t]  # type: ignore[index]
        if kind == "dict":
            return {"dict": [[_enc(k, depth + 1), _enc(x, depth + 1)] for k, x in v.items()]}  # type: ignore[attr-defined]
        return {kind: [_enc(x, depth + 1) for x in v]}  # type: ignore[attr-defined]
    raise TypeError(f"value of type {t.__name__} is not a plain builtin value")


def main() -> None:
    req = json.loads(sys.stdin.read())
    out = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - lives as long as the process
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    scope = {"__name__": "__main__", "__builtins__": __builtins__}
    code = req["code"]
    del req["code"]
    write, dumps, flush = out.write, json.dumps, out.flush
    try:
        exec(compile(code, "solution.py", "exec"), scope)
        for stmt in req["setup"]:
            exec(compile(stmt, "test_setup", "exec"), scope)
    except BaseException as e:  # SystemExit included: an exit here fails every probe
        write(dumps({"load_error": f"{_type(e).__name__}: {e}"[:300]}) + "\n")
        flush()
        return
    for i, src in enumerate(req["probes"]):
        try:
            line = dumps({"i": i, "v": _enc(eval(src, scope))})
        except BaseException as e:
            line = dumps({"i": i, "err": f"{_type(e).__name__}: {e}"[:300]})
        write(line + "\n")
        flush()


if __name__ == "__main__":
    main()
