"""`recipe-arena verify` on chat answers the judge cannot read: an answer longer than
the judge's context is a judged 0, counted in the chat average, while a row whose own
prompt overflows the context stays an error (no verdict) as before.

The judge is a real, untrained micro model with the micro judge's 1,024-token context
(its tokens are about characters: the reference template with a short answer is about
330), saved as a checkpoint and named by ``rewards.judge_model``."""

from __future__ import annotations

import json
from pathlib import Path

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.models.factory import TinyModelSpec, build_micro, save_checkpoint
from recipe_arena.rewards.verify import verify_jsonl


def test_an_answer_too_long_for_the_judge_is_a_judged_0(tmp_path: Path) -> None:
    """Three chat rows: a short answer, an answer of 4,000 characters (the most the
    judge is shown, about 4,300 tokens with the template) to the same prompt, and a short answer to a
    prompt of 2,000 characters. Before, the long answer got "judge failed", which
    ``verify`` leaves out of the averages: a file whose bad answers were made long
    enough had them drop out of its mean. Now it scores 0.0 with its reason and counts
    (count/chat 2), and only the overflowing prompt is an error (errors 1)."""
    model, tok = build_micro(TinyModelSpec(max_position_embeddings=1024), seed=0)
    judge = save_checkpoint(model, tok, tmp_path / "judge")
    long_answer = " ".join(f"w{k}" for k in range(1000))[:4000]
    rows = [
        {"domain": "chat", "prompt": "Plural of road?", "response": "roads"},
        {"domain": "chat", "prompt": "Plural of road?", "response": long_answer},
        {"domain": "chat", "prompt": "why? " * 400, "response": "roads"},
    ]
    inp, out = tmp_path / "rows.jsonl", tmp_path / "scored.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = RewardsConfig(judge_model=str(judge), workers=1, allow_weak_sandbox=True)
    summary = verify_jsonl(inp, out, cfg)
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert got[1]["score"] == 0.0
    assert got[1]["reason"] == "answer too long for the judge's context"
    assert got[2]["score"] is None and got[2]["reason"].startswith("error:")
    assert summary["count/chat"] == 2.0 and summary["errors"] == 1.0
