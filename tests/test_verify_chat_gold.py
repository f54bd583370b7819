"""``recipe-arena verify`` on chat rows whose reference is not written as text. The judge
reads a reference only from a string; a chat row without one is judged open-ended, with
no answer to compare against. Scored through ``verify_jsonl`` and a real
OpenAI-compatible endpoint judge."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.rewards.verify import verify_jsonl
from tests.judge_endpoint import JudgeEndpoint, reply


def _judge(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Given a reference, 10 for an answer equal to it and 0 otherwise; asked open-ended
    (no reference to hold the answer to), 10 for any answer, as a judge grades a fluent
    reply to an open question."""
    prompt = body["messages"][0]["content"]
    ref = re.search(r"Reference answer:\n(.*?)\n", prompt, re.S)
    answer = re.search(r"(?:Answer to grade|Response):\n(.*?)\n\n", prompt, re.S)
    said = answer.group(1).strip() if answer else ""
    right = ref is None or said == ref.group(1).strip()
    return reply(f"Score: {10 if right else 0}")


def test_a_chat_reference_written_as_a_number_is_the_reference(tmp_path: Path) -> None:
    """Attack: a file whose chat reference is the JSON number ``7`` for "What is 3 + 4?",
    and the wrong answer ``8``. By hand: the reference is ``7``, so the judge compares
    and gives 0 (0.0); the right answer ``7`` gets 10 (1.0), and ``2.5`` as a float
    reference holds ``2.5`` the same way. A list reference names no one answer: the row
    is an error (score null). Before, a number or list reference was no reference, the
    row was judged open-ended and ``8`` scored 1.0."""
    rows = [
        {"domain": "chat", "prompt": "What is 3 + 4?", "ground_truth": 7, "response": "8"},
        {"domain": "chat", "prompt": "What is 3 + 4?", "ground_truth": 7, "response": "7"},
        {"domain": "chat", "prompt": "Half of 5?", "ground_truth": 2.5, "response": "2.5"},
        {"domain": "chat", "prompt": "Half of 5?", "ground_truth": 2.5, "response": "3"},
        {"domain": "chat", "prompt": "What is 3 + 4?", "ground_truth": ["7"], "response": "8"},
    ]
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    srv = JudgeEndpoint(_judge)
    try:
        verify_jsonl(src, dst, RewardsConfig(judge_model=srv.url, workers=1))
    finally:
        srv.close()
    out = [json.loads(line) for line in dst.read_text().splitlines()]
    assert [o["score"] for o in out] == [0.0, 1.0, 1.0, 0.0, None], [o["reason"] for o in out]
    assert out[0]["ground_truth"] == 7  # written back as given
