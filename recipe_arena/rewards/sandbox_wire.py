"""Runs inside the sandbox (standard library only, between sandbox_split.py's source and
sandbox_remote.py's): the wire format of the two sides' messages. A message is one
line of JSON; a value crosses as a tree of plain builtin values (``enc``, ``dec``), any
other object as a handle the side that holds it hands out."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # not `typing`: its import is ~10% of a sandbox start
if TYPE_CHECKING:
    from typing import IO, Any

_type, _repr = type, repr
"""Builtins bound before any test runs, so a test that rebinds ``type`` changes nothing."""
_ATOMS = (int, float, bool, str, type(None))
_CONTAINERS = {list: "list", tuple: "tuple", set: "set", frozenset: "fset", dict: "dict"}
"""A frozenset stays one: a set of them, or a dict keyed by them, is a value too."""
MAX_LINE = 8 << 20
"""Longest probe request or answer (bytes); a longer one fails the probe."""


# ----------------------------------------------------------------------------- values
def enc(v: Any, depth: int = 0, ref: Any = None) -> dict[str, Any]:
    """Plain value -> JSON-able tree. Anything but exact builtin types goes to ``ref``
    (which gives a handle or raises); without ``ref`` it raises TypeError. Nesting
    deeper than 100 raises ValueError."""
    t = _type(v)
    if depth > 100:
        raise ValueError("value nested too deeply")
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
    if t is range:
        return {"range": [enc(v.start), enc(v.stop), enc(v.step)]}
    kind = _CONTAINERS.get(t)  # type: ignore[call-overload]
    if kind == "dict":
        return {"dict": [[enc(k, depth + 1, ref), enc(x, depth + 1, ref)] for k, x in v.items()]}
    if kind:
        return {kind: [enc(x, depth + 1, ref) for x in v]}
    if ref is not None:
        return ref(v)  # type: ignore[no-any-return]
    raise TypeError(f"value of type {t.__name__} is not a plain builtin value")


def dec(e: dict[str, Any], ref: Any = None) -> Any:
    """Inverse of ``enc``; ``{"ref": ...}`` nodes go to ``ref`` (refused without it)."""
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
    if "range" in e:
        return range(*(dec(x) for x in e["range"]))
    if "dict" in e:
        return {dec(k, ref): dec(x, ref) for k, x in e["dict"]}
    for kind, ctor in (("list", list), ("tuple", tuple), ("set", set), ("fset", frozenset)):
        if kind in e:
            return ctor(dec(x, ref) for x in e[kind])
    if "ref" in e and ref is not None:
        return ref(e)
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
