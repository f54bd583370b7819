"""lm-evaluation-harness on our checkpoints and our held-out sets, offline.

The micro checkpoint here is a freshly initialised micro model (the cached base model
may not exist on a fresh clone); what is checked does not depend on its skill: lm-eval
must generate exactly what our own evaluation generates for the same prompts (greedy),
and score it with our verifiers to the same per-question scores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from recipe_arena.compose import load_config
from recipe_arena.data.micro import build_world
from recipe_arena.data.schema import Message, PromptRow
from recipe_arena.eval import harness
from recipe_arena.models.factory import build_micro, save_checkpoint
from recipe_arena.rewards import build_scorer


def test_samples_are_scored_by_our_verifiers_into_pass_at_1_and_k() -> None:
    """Question 'What is 2+3?' with reference 5 and two samples, one answering
    \\boxed{5} (the math verifier accepts it) and one \\boxed{6}: c = 1 of n = 2, so
    pass@1 = c/n = 0.5 and pass@2 = 1 - C(1,2)/C(2,2) = 1; two wrong samples: 0 and 0."""
    row = PromptRow(
        id="q",
        messages=[Message(role="user", content="What is 2+3?")],
        ground_truth="5",
        domain="math",
    )
    with build_scorer(shared=False) as scorer:
        right_wrong = harness.score_samples(
            row, ["<think>2+3=5</think>\n\\boxed{5}", "<think>no</think>\n\\boxed{6}"], scorer
        )
        both_wrong = harness.score_samples(row, ["\\boxed{6}", "\\boxed{7}"], scorer)
    assert right_wrong == {"pass@1": 0.5, "pass@2": 1.0}
    assert both_wrong == {"pass@1": 0.0, "pass@2": 0.0}


def test_lm_eval_runs_a_micro_checkpoint_on_a_local_task_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three held-out math rows of the smoke world through lm-eval (greedy, k = 1) and
    through our own evaluation (torch engine, same rows, same token cap): the generated
    texts are identical, and lm-eval's pass@1 is the mean of our per-question scores.
    No network: the HF offline switches are on and the task reads a local JSONL file."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(var, "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    from recipe_arena.engines import build_engine
    from recipe_arena.eval.evaluate import evaluate_rows, generate_responses

    cfg = load_config(["budget=smoke", "eval.max_new_tokens=12", "rewards.workers=1"])
    model, tok = build_micro(seed=3)
    ckpt = save_checkpoint(model, tok, tmp_path / "ckpt")
    rows = build_world(cfg.world)["heldout"]["math"][:3]
    names = harness.write_tasks(cfg, tok, tmp_path / "tasks", k=1, rows=rows)
    assert names == ["micro_math"]
    out = harness.run_harness(ckpt, tmp_path / "tasks", names)
    samples = sorted(out["samples"]["micro_math"], key=lambda s: s["doc_id"])
    lm_eval_texts = [s["filtered_resps"][0][0] for s in samples]

    engine = build_engine("torch", model, tok, cfg.engine)
    try:
        ours, _ = generate_responses(engine, tok, rows, cfg.eval)
        with build_scorer(cfg.rewards, shared=False) as scorer:
            own = evaluate_rows(engine, tok, rows, scorer, cfg.eval)
    finally:
        engine.close()
    assert lm_eval_texts == ours
    assert all(len(t) > 0 for t in ours)
    assert out["results"]["micro_math"]["pass@1,all"] == pytest.approx(
        sum(own.scores) / len(own.scores)
    )
