"""Code verifier: run the response's last fenced Python block against the row's tests.

Ground truth is a list of ``assert`` statements (the OLMo 3 code-data form, with any
setup statements among them) or a list of ``{"stdin": ..., "stdout": ...}`` pairs.

Assert tests: nothing of the row is evaluated in the verifier. The program and the
tests go into one sandbox (sandbox.py) whose launcher forks a program side and a check
side, two processes under two unused uids (sandbox_harness.py): the check side runs
the tests whole, and holds the program's functions and objects as handles; calling one
sends only the evaluated arguments to the program side, whose value comes back as
plain data (sandbox_split.py says which test forms are supported; a test that would
hand the program anything but plain values is refused with an ``error:`` reason).
Expected values stay on the check side, so exiting early, patching ``assert``,
builtins or ``__eq__``, reading the caller's frames or globals, walking ``gc`` or
printing a fake summary earns nothing. The verifier only counts the check side's
per-assert verdicts.

For stdin/stdout pairs every pair runs in a fresh sandbox; its stdout is compared with
the expected one (a string comparison of data) after stripping trailing whitespace on
each line and trailing blank lines. All the pairs of one row share one time budget
(``Limits.row_wall_s``); pairs not run when it is spent count as failed.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from recipe_arena.rewards.sandbox import Limits, SandboxRefused, run_harness
from recipe_arena.rewards.text import answer_text

_FENCE_RE = re.compile(
    r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE
)
MAX_TESTS_CHARS = 1 << 20
"""Longest ground truth (all tests together) that is run at all."""
MAX_REPORT_BYTES = 4 << 20
"""Most of the check side's report kept: a few lines per top-level statement (``S``,
``R``, ``F``), so tests of ``MAX_TESTS_CHARS`` in short statements fit. A report cut
here fails every assert: an ``R i 0`` past the cut would leave an earlier ``R i 1``
of the same helper's assert standing."""
_REPORT_RE = re.compile(r"^(T|H|K|R|S|F|N|D|E) ?(.*)$")


def extract_code(response: str) -> str | None:
    """The last fenced Python block after ``</think>`` (None if there is none)."""
    blocks = _FENCE_RE.findall(answer_text(response))
    return blocks[-1] if blocks else None


def parse_report(stdout: bytes) -> tuple[int | None, set[int], str]:
    """(number of asserts or None, indices that passed, note) from the check side's
    report lines; an assert passes only on an ``R i 1``, no ``R i 0``, no ``S``
    naming it that no ``F`` followed (a statement cut short by the time limit or the
    check side's end, which may have run it again: ``sandbox_report._Report``), and,
    for one inside a test function (``H``), a ``D`` or a ``K`` naming it: a run cut
    short between two statements never ran the later ones, which may call that
    function again, unless none of them could (``sandbox_split.settled``)."""
    total: int | None = None
    passed: set[int] = set()
    failed: set[int] = set()
    running: set[int] = set()  # named by the statement that has not finished
    inner: set[int] = set()  # inside test functions: fail unless every statement ran
    kept: set[int] = set()  # ... or no statement left could run them
    done = False
    note = ""
    for raw in stdout.decode("utf-8", "replace").splitlines():
        m = _REPORT_RE.match(raw)
        if not m:
            continue
        kind, rest = m.groups()
        if kind == "T" and total is None and rest.isdigit() and len(rest) < 9:
            total = int(rest)
        elif kind == "R":
            parts = rest.split()
            if len(parts) == 2 and parts[0].isdigit() and len(parts[0]) < 9:
                (passed if parts[1] == "1" else failed).add(int(parts[0]))
        elif kind in "SHK":
            ids = (int(p) for p in rest.split() if p.isdigit() and len(p) < 9)
            {"S": running, "H": inner, "K": kept}[kind].update(ids)
        elif kind == "F":
            running.clear()
        elif kind == "D":
            done = True
        elif kind == "E" and not note.startswith("error:"):
            note = "error: " + rest[:300]  # the row could not be judged: wins over a note
        elif kind == "N" and not note:
            note = rest[:300]
    return total, passed - failed - running - (set() if done else inner - kept), note


def run_asserts(code: str, tests: Sequence[str], lim: Limits) -> tuple[int, int, str]:
    """(passed, total, note) for assert-style tests; total 0 with an ``error:`` note
    when the tests do not parse."""
    req = json.dumps({"code": code, "tests": list(tests)})  # ASCII: lone surrogates escaped
    run = run_harness("asserts", req.encode(), lim, MAX_REPORT_BYTES)
    total, passed, note = parse_report(run.stdout)
    if note.startswith("error:"):  # refused test form: a verdict on the row, not a score
        return 0, 0, note
    if total is None:
        if note.startswith("error:"):
            return 0, 0, note
        why = f"timed out after {lim.wall_s:g}s" if run.timed_out else "sandbox failed"
        tail = run.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        return 0, 0, f"error: {why}" + (f" ({tail[0][:200]})" if tail else "")
    if len(run.stdout) >= MAX_REPORT_BYTES:  # an R i 0 past the cut would be lost
        return 0, total, f"report longer than {MAX_REPORT_BYTES} bytes"
    if run.timed_out:
        note = f"timed out after {lim.wall_s:g}s"
    return len({i for i in passed if 0 <= i < total}), total, note


def _norm_out(s: str) -> str:
    return "\n".join(line.rstrip() for line in s.strip("\n").splitlines()).rstrip()


def run_io(code: str, pairs: Sequence[dict[str, str]], lim: Limits) -> tuple[int, int, str]:
    """(passed, total, note) for stdin/stdout pairs, one fresh sandbox per pair, all of
    them within ``row_io_s(lim)`` seconds: pairs not run by then count as failed."""
    passed, note = 0, ""
    deadline = time.monotonic() + row_io_s(lim)
    program = code.encode("utf-8", "surrogatepass")
    for k, p in enumerate(pairs):
        left = deadline - time.monotonic()
        if left <= 0.5:
            note = f"row time limit ({row_io_s(lim):g}s) reached after {k} of {len(pairs)} tests"
            break
        stdin = str(p["stdin"]).encode("utf-8", "surrogatepass")
        wall = min(lim.wall_s, left)
        run = run_harness(
            "io", len(program).to_bytes(8, "big") + program + stdin, replace(lim, wall_s=wall)
        )
        if run.timed_out:
            note = f"timed out after {wall:g}s"
        elif run.returncode != 0:
            note = f"exit code {run.returncode}"
        elif _norm_out(run.stdout.decode("utf-8", "replace")) == _norm_out(str(p["stdout"])):
            passed += 1
    return passed, len(pairs), note


def row_io_s(lim: Limits) -> float:
    """Seconds all the stdin/stdout runs of one row may take together."""
    return max(lim.wall_s, lim.row_wall_s)


def check_code(
    tests: Any, response: str, all_pass: bool = True, limits: Limits | None = None
) -> tuple[float, str]:
    """Worker entry point: (score, reason). Score is pass fraction or all-or-nothing."""
    lim = limits or Limits()
    if not isinstance(tests, list) or not tests:
        return 0.0, "error: code ground_truth must be a non-empty list of tests"
    if sum(len(str(t)) for t in tests) > MAX_TESTS_CHARS:
        return 0.0, f"error: code tests longer than {MAX_TESTS_CHARS} characters"
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
    except SandboxRefused as e:
        return 0.0, f"error: {e}"
    if total == 0:
        return 0.0, note if note.startswith(
            "error:"
        ) else "error: no assert statements in the tests"
    score = float(passed == total) if all_pass else passed / total
    tail = f"; {note}" if note and passed < total else ""
    return score, f"passed {passed}/{total}{tail}"


def code_task(row: Any, response: str, cfg: Any) -> tuple[tuple[Any, ...], float]:
    """``check_code``'s arguments for ``response`` to ``row`` (a PromptRow) under ``cfg``
    (RewardsConfig), and its deadline, seconds: ``rewards.code_wall_s`` per test (a
    stdin/stdout row runs one program per pair, within one budget for the row,
    ``row_io_s``) plus 5 s for the harness."""
    limits = Limits(
        wall_s=cfg.code_wall_s,
        cpu_s=cfg.code_cpu_s,
        memory_mb=cfg.code_memory_mb,
        allow_weak=cfg.allow_weak_sandbox,
    )
    tests = row.ground_truth
    runs = max(1, len(tests) if isinstance(tests, list) else 1)
    timeout_s = min(cfg.code_wall_s * runs, row_io_s(Limits(wall_s=cfg.code_wall_s))) + 5.0
    return (tests, response, cfg.code_reward == "all_pass", limits), timeout_s


def verdict_key(tests: Any, response: str, all_pass: bool, limits: Limits) -> str | None:
    """What ``check_code``'s verdict on these arguments depends on, hashed (SHA-256 of
    the tests, the extracted program, the scoring rule and the limits), or None where
    no program is run (no fenced block). A scorer that meets the key again reuses the
    verdict (``verdict_repeats``) instead of starting a sandbox: held-out evaluations
    check the same greedy programs every few RL steps, and a check is two interpreters
    in bubblewrap while a math or IFEval check is a function call."""
    code = extract_code(response)
    if code is None:
        return None
    what = [tests, code, all_pass, asdict(limits)]
    text = json.dumps(what, sort_keys=True, ensure_ascii=True, default=repr)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def verdict_repeats(reason: str) -> bool:
    """Whether a verdict with this reason is one the same program and tests always get:
    a count of passed asserts with no time limit reached (a program near its limit may
    pass on a quieter machine) and no sandbox or row error."""
    return reason.startswith("passed ") and "timed out" not in reason and "time limit" not in reason
