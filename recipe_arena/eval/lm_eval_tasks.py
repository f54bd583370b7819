"""Prompt rows as local lm-eval tasks, scored by the project's verifiers.

``write_tasks({"math500": rows, ...}, out_dir)`` writes, per set, the rows as JSONL and
a task YAML (``dataset_path: json``, so lm-eval reads the local file and never a hub),
plus one ``recipe_arena_scoring.py`` whose ``process_results`` scores a generation
with the verifier of the row's domain (math: SymPy equivalence; code: the sandboxed
tests; ifeval: lm-eval's own instruction checkers). The metric is ``pass@1`` (mean
score), the same number the run's held-out evaluation reports for those rows.

    lm_eval --model hf --model_args pretrained=CHECKPOINT --include_path OUT_DIR \\
        --tasks recipe_arena_math500 --apply_chat_template

Verifiers run in the lm-eval process without the run's worker pool, so a hung check is
not cut off; chat rows (LM judge) are not supported here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recipe_arena.data.schema import PromptRow

TASK_PREFIX = "recipe_arena_"
SCORING_MODULE = "recipe_arena_scoring"

_SCORING_SRC = '''"""Written by recipe_arena.eval.lm_eval_tasks: lm-eval calls process_results."""

from recipe_arena.eval.lm_eval_tasks import process_results  # noqa: F401
'''

_YAML = """task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{prompt}}}}"
doc_to_target: ""
generation_kwargs:
  until: []
  max_gen_toks: {max_tokens}
  do_sample: false
process_results: !function {module}.process_results
metric_list:
  - metric: pass@1
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def write_tasks(
    sets: Mapping[str, Sequence[PromptRow]], out_dir: str | Path, max_tokens: int = 1024
) -> list[str]:
    """Write one lm-eval task per entry of ``sets`` (name -> rows) under ``out_dir``;
    return the task names (``recipe_arena_<name>``). Chat rows are refused."""
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{SCORING_MODULE}.py").write_text(_SCORING_SRC)
    names = []
    for name, rows in sets.items():
        if not name.isidentifier():
            raise ValueError(f"task set name {name!r} must be a Python identifier")
        if any(r.domain == "chat" for r in rows):
            raise ValueError(
                f"set {name!r}: chat rows need the LM judge; lm-eval tasks score math, code, ifeval"
            )
        data = out / f"{name}.jsonl"
        with open(data, "w", encoding="utf-8") as f:
            for r in rows:
                doc = {"prompt": r.prompt_text, "row": r.model_dump(mode="json")}
                f.write(json.dumps(doc) + "\n")
        task = TASK_PREFIX + name
        (out / f"{name}.yaml").write_text(
            _YAML.format(task=task, data=data, max_tokens=max_tokens, module=SCORING_MODULE)
        )
        names.append(task)
    return names


def score(row: PromptRow, response: str) -> float:
    """The row's verifier on ``response``, in this process (no pool, no timeout)."""
    if row.domain == "math":
        from recipe_arena.rewards.math_answer import check_math

        return check_math(row.ground_truth, response)[0]
    if row.domain == "code":
        from recipe_arena.rewards.code import check_code

        return check_code(row.ground_truth, response)[0]
    if row.domain == "ifeval":
        from recipe_arena.rewards.ifeval import check_ifeval

        return check_ifeval(row.ground_truth, response, False, row.prompt_text)[0]
    raise ValueError(f"row {row.id}: domain {row.domain!r} has no lm-eval scoring")


def process_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, float]:
    """lm-eval hook: ``{"pass@1": score}`` of the first generation for the doc's row."""
    return {"pass@1": score(PromptRow.model_validate(doc["row"]), results[0])}
