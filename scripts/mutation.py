"""Mutation check: make small wrong changes to the strategy, loss, advantage, sampling
and statistics code, run the tests that cover each module, and list the changes no test
noticed (survivors).

    python scripts/mutation.py                       # every module in TARGETS
    python scripts/mutation.py --modules recipe_arena/staleness/deepseek_mask.py
    python scripts/mutation.py --sample 40 --seed 1  # a seeded random subset of mutants
    python scripts/mutation.py --list                # the mutants, nothing run

A mutant is one edit of one AST node, spliced into the source at that node's place:

    compare     <  <=  >  >=  ==  !=   one relation swapped for its neighbour
                                       (< -> <=, <= -> <, > -> >=, >= -> >, == <-> !=)
    binop       + <-> -,  * <-> /,  ** -> *
    boolop      and <-> or
    unary       not x -> x,  -x -> x (not a literal -c),  ~x -> x
    constant    a number c -> c + 1 (int) or 2c / 1.0 (float; 0.0 -> 1.0)
    minmax      min <-> max;  torch.minimum <-> torch.maximum
    call        x.detach() / x.clamp(...) / x.float() dropped (x kept)
    attribute   one tensor field read in place of another of the same input
                (logprobs_BL, old_logprobs_BL, behavior_logprobs_BL, mask_BL, ...)

Left alone: docstrings and other strings, class bodies (parameter defaults are
configuration, not logic), ``if TYPE_CHECKING`` blocks, and the arguments of
``Field(...)`` and ``raise``. Each mutant runs in a scratch copy of the package (the
working tree is never edited), in a process forked from one that has already imported
torch, SciPy, pydantic and transformers (seconds saved per mutant), with
``pytest -x -q`` over the module's tests and a time limit; a mutant whose tests fail or
time out is killed. The results go to ``--out`` (JSON) and survivors are printed as
``path:line  operator  before -> after``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TARGETS: dict[str, list[str]] = {
    "recipe_arena/staleness/deepseek_mask.py": [
        "tests/test_staleness.py",
        "tests/test_wiring_learner.py",
        "tests/test_routing_replay.py",
    ],
    "recipe_arena/staleness/tis.py": [
        "tests/test_staleness.py",
        "tests/test_strategy_gradients.py",
        "tests/test_wiring_learner.py",
        "tests/test_wiring_strategies.py",
    ],
    "recipe_arena/staleness/kimi_regularizer.py": [
        "tests/test_staleness.py",
        "tests/test_strategy_gradients.py",
        "tests/test_wiring_strategies.py",
    ],
    "recipe_arena/staleness/shared_quant.py": [
        "tests/test_staleness.py",
        "tests/test_shared_quant.py",
        "tests/test_wiring_actor.py::test_engine_runs_the_quantised_new_weights_after_an_update",
    ],
    "recipe_arena/staleness/none.py": [
        "tests/test_staleness.py",
        "tests/test_wiring_strategies.py",
    ],
    "recipe_arena/length_control/token_budget.py": [
        "tests/test_length_control.py",
        "tests/test_wiring_actor.py::test_over_budget_rewards_reach_the_learner_batch",
    ],
    "recipe_arena/length_control/discard_early_short.py": [
        "tests/test_length_control.py",
        "tests/test_wiring_strategies.py",
    ],
    "recipe_arena/length_control/none.py": ["tests/test_length_control.py"],
    "recipe_arena/policy_loss/olmo.py": [
        "tests/test_loss.py",
        "tests/test_strategy_gradients.py",
        "tests/test_core_learner.py",
        "tests/test_wiring_loss.py",
    ],
    "recipe_arena/policy_loss/gspo.py": ["tests/test_policy_loss_gspo.py"],
    "recipe_arena/policy_loss/cispo.py": ["tests/test_policy_loss_cispo.py"],
    "recipe_arena/policy_loss/gmpo.py": ["tests/test_policy_loss_gmpo.py"],
    "recipe_arena/staleness/icepop.py": ["tests/test_staleness_icepop.py"],
    "recipe_arena/staleness/seq_mask_tis.py": ["tests/test_staleness_seq_mask_tis.py"],
    "recipe_arena/staleness/m2po.py": ["tests/test_staleness_m2po.py"],
    "recipe_arena/staleness/mismatch.py": ["tests/test_mismatch_metrics.py"],
    "recipe_arena/advantages/base.py": ["tests/test_core_advantages.py"],
    "recipe_arena/advantages/centered.py": ["tests/test_core_advantages.py"],
    "recipe_arena/advantages/standard.py": ["tests/test_core_advantages.py"],
    "recipe_arena/advantages/distill.py": [
        "tests/test_core_advantages.py",
        "tests/test_distill_advantage.py",
    ],
    "recipe_arena/core/sampling.py": ["tests/test_core_sampling.py"],
    "recipe_arena/eval/stats.py": ["tests/test_stats.py", "tests/test_stats_curves.py"],
    "recipe_arena/eval/curve_fit.py": ["tests/test_stats_curves.py"],
}
"""Module -> the tests that cover it (pytest node ids), run for each of its mutants."""

SWAPPABLE_FIELDS = (
    "logprobs_BL",
    "old_logprobs_BL",
    "behavior_logprobs_BL",
    "ref_logprobs_BL",
    "teacher_logprobs_BL",
)
"""Per-token logprob fields of one input: reading one for another is the wrong-argument
mistake (a bound computed from pi_old instead of pi_theta)."""
SWAPPABLE_MASKS = ("mask_BL", "advantages_BL")
DROPPABLE_CALLS = ("detach", "clamp", "float", "abs", "clone")
SCAFFOLD = ("recipe_arena", "tests", "pyproject.toml")
"""What the scratch copy holds: the package, the tests (conftest included), pytest's
settings."""
PRELOAD = ("torch", "scipy.stats", "scipy.optimize", "pydantic", "numpy", "transformers")
"""Imported once by the parent before it forks a child per mutant (never recipe_arena,
which each child imports from its mutated copy)."""


@dataclass(frozen=True)
class Mutant:
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    operator: str
    before: str
    after: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


# ----------------------------------------------------------------------------- generation
COMPARE_SWAP: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}
BINOP_SWAP: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.Pow: ast.Mult,
}


def _skipped_ranges(tree: ast.Module) -> list[tuple[int, int]]:
    """Line ranges not mutated: class bodies, TYPE_CHECKING blocks, docstrings."""
    out = []
    for node in ast.walk(tree):
        type_checking = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        docstring = (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        if isinstance(node, ast.ClassDef) or type_checking or docstring:
            out.append((node.lineno, node.end_lineno or node.lineno))
    return out


def _protected(tree: ast.Module) -> set[int]:
    """ids of nodes inside Field(...) calls and raise statements."""
    out: set[int] = set()
    for node in ast.walk(tree):
        guarded = isinstance(node, ast.Raise) or (
            isinstance(node, ast.Call) and ast.unparse(node.func) in ("Field", "pydantic.Field")
        )
        if guarded:
            out.update(id(n) for n in ast.walk(node))
    return out


def _variants(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(operator name, replacement node) for each mutation of ``node``."""
    import copy

    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        swap = COMPARE_SWAP.get(type(node.ops[0]))
        if swap is not None:
            new = copy.deepcopy(node)
            new.ops = [swap()]
            yield "compare", new
    elif isinstance(node, ast.BinOp) and type(node.op) in BINOP_SWAP:
        new = copy.deepcopy(node)
        new.op = BINOP_SWAP[type(node.op)]()
        yield "binop", new
    elif isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "boolop", new
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub | ast.Invert):
        if not (isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)):
            yield "unary", copy.deepcopy(node.operand)  # a literal -c: see "constant"
    elif (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        v = node.value
        if isinstance(v, int):
            new_v: float | int = v + 1
        else:
            new_v = 1.0 if v == 0.0 else 2.0 * v
        yield "constant", ast.Constant(new_v)
    elif isinstance(node, ast.Call):
        name = ast.unparse(node.func)
        flip = {
            "min": "max",
            "max": "min",
            "torch.minimum": "torch.maximum",
            "torch.maximum": "torch.minimum",
        }
        if name in flip:
            new = copy.deepcopy(node)
            new.func = ast.parse(flip[name], mode="eval").body
            yield "minmax", new
        if isinstance(node.func, ast.Attribute) and node.func.attr in DROPPABLE_CALLS:
            yield "call", copy.deepcopy(node.func.value)
    elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        for group in (SWAPPABLE_FIELDS, SWAPPABLE_MASKS):
            if node.attr in group:
                for other in group:
                    if other != node.attr:
                        new = copy.deepcopy(node)
                        new.attr = other
                        yield "attribute", new


def mutants_of(path: str) -> list[Mutant]:
    """Every mutant of the module at ``path`` (relative to the repository root)."""
    source = (ROOT / path).read_text()
    tree = ast.parse(source)
    skipped = _skipped_ranges(tree)
    protected = _protected(tree)
    out: list[Mutant] = []
    for node in ast.walk(tree):
        if id(node) in protected or not hasattr(node, "lineno"):
            continue
        if any(a <= node.lineno <= b for a, b in skipped):
            continue
        if isinstance(node, ast.Constant) and node.col_offset < 0:  # f-string parts
            continue
        before = ast.get_source_segment(source, node)
        if before is None:
            continue
        for op, new in _variants(node):
            after = ast.unparse(new)
            if "\n" in before or isinstance(node, ast.BinOp | ast.BoolOp | ast.Compare):
                after = f"({after})"  # binds as the node did, spans its lines
            out.append(
                Mutant(
                    path,
                    node.lineno,
                    node.col_offset,
                    node.end_lineno or node.lineno,
                    node.end_col_offset or node.col_offset,
                    op,
                    before,
                    after,
                )
            )
    out.sort(key=lambda m: (m.line, m.col, m.operator, m.after))
    return out


def apply(source: str, m: Mutant) -> str:
    """``source`` with the mutant's node text replaced (offsets are UTF-8 byte columns)."""
    lines = source.encode().splitlines(keepends=True)
    head = b"".join(lines[: m.line - 1]) + lines[m.line - 1][: m.col]
    tail = lines[m.end_line - 1][m.end_col :] + b"".join(lines[m.end_line :])
    return (head + m.after.encode() + tail).decode()


# ----------------------------------------------------------------------------- running
def scratch_copy() -> Path:
    """A copy of the package and the tests to mutate (removed at exit)."""
    tmp = Path(tempfile.mkdtemp(prefix="recipe-arena-mutation-"))
    for name in SCAFFOLD:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tmp / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, tmp / name)
    return tmp


def run_tests(scratch: Path, tests: list[str], timeout_s: float, fork: bool) -> str:
    """'killed', 'survived' or 'timeout' for the tests in ``scratch`` as they stand."""
    args = ["-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-p", "no:randomly", *tests]
    if not fork:
        import subprocess

        try:
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", *args],
                cwd=scratch,
                env={**os.environ, "PYTHONPATH": str(scratch)},
                capture_output=True,
                timeout=timeout_s,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            return "timeout"
        return "survived" if proc.returncode == 0 else "killed"
    pid = os.fork()
    if pid == 0:  # child: its own session, so a time-out kills what it started too
        os.setsid()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.chdir(scratch)
        sys.path.insert(0, str(scratch))
        os.environ["PYTHONPATH"] = str(scratch)
        import pytest

        code = pytest.main(args)
        os._exit(int(code))
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return "survived" if os.waitstatus_to_exitcode(status) == 0 else "killed"
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", nargs="*", default=None, help="paths from TARGETS (default all)")
    ap.add_argument("--sample", type=int, default=None, help="run a seeded random N mutants")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant")
    ap.add_argument("--out", default="runs/mutation.json")
    ap.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    ap.add_argument("--no-fork", action="store_true", help="one fresh interpreter per mutant")
    args = ap.parse_args(argv)
    modules = args.modules or list(TARGETS)
    unknown = [m for m in modules if m not in TARGETS]
    if unknown:
        print(f"not a mutation target: {unknown}; targets: {list(TARGETS)}", file=sys.stderr)
        return 2
    mutants = [m for path in modules for m in mutants_of(path)]
    if args.sample is not None and args.sample < len(mutants):
        mutants = sorted(
            random.Random(args.seed).sample(mutants, args.sample), key=lambda m: (m.path, m.line)
        )
    if args.list:
        for m in mutants:
            print(f"{m.where}  {m.operator:<9} {m.before} -> {m.after}")
        print(f"{len(mutants)} mutants")
        return 0
    fork = not args.no_fork and hasattr(os, "fork")
    if fork:
        import importlib

        for name in PRELOAD:
            importlib.import_module(name)
    scratch = scratch_copy()
    results: list[dict[str, object]] = []
    try:
        for i, m in enumerate(mutants, 1):
            target = scratch / m.path
            original = target.read_text()
            target.write_text(apply(original, m))
            t0 = time.monotonic()
            try:
                outcome = run_tests(scratch, TARGETS[m.path], args.timeout, fork)
            finally:
                target.write_text(original)
            secs = time.monotonic() - t0
            results.append({**asdict(m), "outcome": outcome, "seconds": round(secs, 1)})
            print(
                f"[{i}/{len(mutants)}] {outcome:<8} {secs:5.1f}s  {m.where}  {m.operator}  "
                f"{m.before} -> {m.after}",
                flush=True,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    survivors = [r for r in results if r["outcome"] == "survived"]
    killed = len(results) - len(survivors)
    print(f"\n{killed} of {len(results)} mutants killed; {len(survivors)} survived ({out})")
    for r in survivors:
        print(f"  {r['path']}:{r['line']}  {r['operator']}  {r['before']} -> {r['after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
