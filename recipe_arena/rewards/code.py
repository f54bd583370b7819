"""Code verifier: run the response's last fenced Python block against the row's tests.

Ground truth is a list of ``assert`` statements (the OLMo 3 code-data form) or a
list of ``{"stdin": ..., "stdout": ...}`` pairs.

How an assert test is judged without trusting the program: each assert is split,
outside the sandbox, into *probes* (the smallest sub-expressions that touch a name
the program defines, e.g. ``f(3)``) and a *check* (the rest, e.g.
``__p0 == [1, 2]``). Only the probes run in the sandbox; their values come back
as plain builtin data and the checks are evaluated here, with a restricted set of
builtins. So the expected values never enter the sandbox, and the program cannot
pass by exiting early, patching ``assert``/builtins/``__eq__`` or printing a fake
summary. Statements that are not asserts run in the sandbox as setup.

For stdin/stdout pairs every pair runs in a fresh sandbox; stdout is compared
after stripping trailing whitespace on each line and trailing blank lines.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recipe_arena.rewards.sandbox import Limits, run_python
from recipe_arena.rewards.text import answer_text

_FENCE_RE = re.compile(
    r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE
)
_HARNESS = (Path(__file__).parent / "sandbox_harness.py").read_text()

# Names a check may use outside the sandbox (pure functions of plain data).
SAFE_BUILTINS: dict[str, Any] = {
    name: __builtins__[name] if isinstance(__builtins__, dict) else getattr(__builtins__, name)
    for name in [
        "abs",
        "all",
        "any",
        "bool",
        "dict",
        "divmod",
        "enumerate",
        "float",
        "frozenset",
        "int",
        "isinstance",
        "len",
        "list",
        "max",
        "min",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "sorted",
        "str",
        "sum",
        "tuple",
        "zip",
        "True",
        "False",
        "None",
    ]
}
SAFE_NAMES = {**SAFE_BUILTINS, "math": math}


def extract_code(response: str) -> str | None:
    """The last fenced Python block after ``</think>`` (None if there is none)."""
    blocks = _FENCE_RE.findall(answer_text(response))
    return blocks[-1] if blocks else None


@dataclass(frozen=True)
class CompiledAssert:
    check: str  # expression over __p0.. and SAFE_NAMES
    probes: tuple[str, ...]


class _Splitter(ast.NodeTransformer):
    """Replace every maximal candidate-dependent sub-expression by a probe name."""

    def __init__(self, first_index: int) -> None:
        self.probes: list[str] = []
        self.first = first_index

    def _pure(self, node: ast.AST) -> bool:
        return all(
            not isinstance(n, ast.Name) or n.id in SAFE_NAMES for n in ast.walk(node)
        ) and not any(isinstance(n, (ast.Lambda, ast.NamedExpr)) for n in ast.walk(node))

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and not self._pure(node):
            keep_outside = (
                ast.Compare, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List,
                ast.Set, ast.Dict, ast.IfExp,
            )  # fmt: skip
            safe_call = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in SAFE_BUILTINS
            )
            if not (isinstance(node, keep_outside) or safe_call):
                name = f"__p{self.first + len(self.probes)}"
                self.probes.append(ast.unparse(node))
                return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        return super().generic_visit(node)


def compile_tests(tests: Sequence[str]) -> tuple[list[str], list[CompiledAssert]]:
    """(setup statements, compiled asserts). Raises ValueError on unparsable tests."""
    setup: list[str] = []
    asserts: list[CompiledAssert] = []
    n_probes = 0
    for t in tests:
        try:
            mod = ast.parse(t)
        except SyntaxError as e:
            raise ValueError(f"test is not valid Python: {t[:80]!r} ({e.msg})") from None
        for stmt in mod.body:
            if isinstance(stmt, ast.Assert):
                sp = _Splitter(n_probes)
                check = sp.visit(stmt.test)
                n_probes += len(sp.probes)
                asserts.append(CompiledAssert(ast.unparse(check), tuple(sp.probes)))
            else:
                setup.append(ast.unparse(stmt))
    return setup, asserts


def _decode(enc: dict[str, Any]) -> Any:
    if "a" in enc:
        return enc["a"]
    if "r" in enc:
        r = enc["r"]
        specials = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
        return specials[r] if r in specials else ast.literal_eval(r)
    if "dict" in enc:
        return {_decode(k): _decode(v) for k, v in enc["dict"]}
    for kind, ctor in (("list", list), ("tuple", tuple), ("set", set)):
        if kind in enc:
            return ctor(_decode(x) for x in enc[kind])
    raise ValueError("bad probe encoding")


def _parse_probe_lines(stdout: bytes) -> tuple[dict[int, Any], str]:
    """Probe index -> value (first answer per index wins; errors recorded as absent)."""
    values: dict[int, Any] = {}
    note = ""
    for line in stdout.decode("utf-8", "replace").splitlines():
        try:
            msg = json.loads(line)
            if "load_error" in msg:
                note = "program failed: " + str(msg["load_error"])
            elif "v" in msg and isinstance(msg["i"], int) and msg["i"] not in values:
                values[msg["i"]] = _decode(msg["v"])
            elif "err" in msg and not note:
                note = "test raised " + str(msg["err"])
        except (ValueError, KeyError, TypeError, SyntaxError, RecursionError):
            continue
    return values, note


def run_asserts(code: str, tests: Sequence[str], lim: Limits) -> tuple[int, int, str]:
    """(passed, total, note) for assert-style tests."""
    setup, asserts = compile_tests(tests)
    probes = [p for a in asserts for p in a.probes]
    req = json.dumps({"code": code, "setup": setup, "probes": probes}).encode()
    run = run_python(["-c", _HARNESS], req, lim)
    values, note = _parse_probe_lines(run.stdout)
    if run.timed_out:
        note = f"timed out after {lim.wall_s:g}s"
    passed = 0
    for a in asserts:
        names = [n.id for n in ast.walk(ast.parse(a.check, mode="eval")) if isinstance(n, ast.Name)]
        idx = [int(n[3:]) for n in names if n.startswith("__p")]
        if any(i not in values for i in idx):
            continue
        scope = {"__builtins__": {}, **SAFE_NAMES, **{f"__p{i}": values[i] for i in idx}}
        try:
            if eval(a.check, scope):  # noqa: S307 - test data, plain values, no builtins
                passed += 1
        except Exception:
            continue
    return passed, len(asserts), note


def _norm_out(s: str) -> str:
    return "\n".join(line.rstrip() for line in s.strip("\n").splitlines()).rstrip()


def run_io(code: str, pairs: Sequence[dict[str, str]], lim: Limits) -> tuple[int, int, str]:
    """(passed, total, note) for stdin/stdout pairs, one fresh sandbox per pair."""
    passed, note = 0, ""
    for p in pairs:
        run = run_python(["-c", code], str(p["stdin"]).encode(), lim)
        if run.timed_out:
            note = f"timed out after {lim.wall_s:g}s"
        elif run.returncode != 0:
            note = f"exit code {run.returncode}"
        elif _norm_out(run.stdout.decode("utf-8", "replace")) == _norm_out(str(p["stdout"])):
            passed += 1
    return passed, len(pairs), note


def check_code(
    tests: Any, response: str, all_pass: bool = True, limits: Limits | None = None
) -> tuple[float, str]:
    """Worker entry point: (score, reason). Score is pass fraction or all-or-nothing."""
    lim = limits or Limits()
    if not isinstance(tests, list) or not tests:
        return 0.0, "error: code ground_truth must be a non-empty list of tests"
    code = extract_code(response)
    if code is None:
        return 0.0, "no fenced python block"
    try:
        if all(isinstance(t, str) for t in tests):
            passed, total, note = run_asserts(code, tests, lim)
        elif all(isinstance(t, dict) and {"stdin", "stdout"} <= t.keys() for t in tests):
            passed, total, note = run_io(code, tests, lim)
        else:
            return 0.0, "error: code tests must all be assert strings or all {stdin, stdout}"
    except ValueError as e:
        return 0.0, f"error: {e}"
    if total == 0:
        return 0.0, "error: no assert statements in the tests"
    score = float(passed == total) if all_pass else passed / total
    tail = f"; {note}" if note and passed < total else ""
    return score, f"passed {passed}/{total}{tail}"
