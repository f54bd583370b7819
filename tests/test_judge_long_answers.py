"""What a chat answer's length can do to the judge: be too long for an endpoint's model,
which the endpoint refuses (HTTP 400) instead of judging, or for the engine judge's
context in a tournament game. A real engine (the untrained micro judge) and a real
OpenAI-compatible endpoint throughout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.judge import Judge
from recipe_arena.rewards.rubric import FALLBACK_RUBRIC, game_prompt, tournament
from recipe_arena.rewards.verify import verify_jsonl
from tests.hostile_tally import record
from tests.judge_endpoint import JudgeEndpoint, reply
from tests.untrained_judge import untrained_judge

ROW = PromptRow(
    id="c",
    messages=[{"role": "user", "content": "What number comes after six?"}],
    ground_truth="seven",
    domain="chat",
)


@pytest.fixture(scope="module")
def micro_gen():
    yield from untrained_judge(max_new_tokens=6)


def _context_server(limit: int) -> JudgeEndpoint:
    """A real OpenAI-compatible endpoint with a model context of ``limit`` characters of
    prompt: a longer request is refused with HTTP 400 and vLLM's error body, as vLLM and
    OpenAI refuse a prompt longer than the model's context; any other is judged
    'Score: 6'."""

    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        size = sum(len(m["content"]) for m in body["messages"])
        if size <= limit:
            return reply("Score: 6")
        error = {
            "object": "error",
            "message": f"This model's maximum context length is {limit} tokens. "
            f"However, you requested {size} tokens.",
            "type": "BadRequestError",
            "code": 400,
        }
        return 400, error

    return JudgeEndpoint(answer)


def test_an_answer_an_endpoint_refuses_is_a_judged_0(tmp_path: Path) -> None:
    """``verify`` with an endpoint judge whose model takes 1,500 characters: a short
    answer is judged (0.6); an answer of 4,000 characters (the most the judge is shown)
    is refused with HTTP 400. Before, that refusal was "judge failed", which ``verify``
    leaves out of its averages, so a file's wrong answers made long enough dropped out
    of its mean (an engine judge already scored them 0). Now it scores 0.0 as judged
    and counts (count/chat 2); a row whose own prompt the endpoint refuses stays an
    error (errors 1), as with an engine judge."""
    srv = _context_server(limit=1500)
    rows = [
        {"domain": "chat", "prompt": "Plural of road?", "response": "roads"},
        {"domain": "chat", "prompt": "Plural of road?", "response": "roads " * 667},
        {"domain": "chat", "prompt": "why? " * 400, "response": "roads"},
    ]
    inp, out = tmp_path / "rows.jsonl", tmp_path / "scored.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = RewardsConfig(judge_model=srv.url, judge_retries=0, workers=1, allow_weak_sandbox=True)
    try:
        summary = verify_jsonl(inp, out, cfg)
    finally:
        srv.close()
    got = [json.loads(x) for x in out.read_text().splitlines()]
    ok = got[1]["score"] == 0.0 and summary["count/chat"] == 2.0
    record("chat judge: answers an endpoint refuses", 1, int(ok))
    assert got[0]["score"] == 0.6
    assert got[1]["score"] == 0.0, got[1]
    assert got[1]["reason"] == "answer too long for the judge's context"
    assert got[2]["score"] is None and got[2]["reason"].startswith("error:")
    assert summary["count/chat"] == 2.0 and summary["errors"] == 1.0


def test_an_answer_too_long_for_the_judge_forfeits_its_games(micro_gen) -> None:
    """A tournament of a short answer and one of 4,000 characters (the most the judge is
    shown; a game holding it is longer than the judge's 1,024-token context): the judge
    reads neither game. Before, both answers lost both (0.0 and 0.0), so the long
    answer cost its opponent what a short wrong one would have lost to it; now the
    short answer wins both by forfeit (1.0, 0.0). Two answers that each fit alone but
    not together forfeit nothing: neither is too long, and their games stay unread."""
    cfg = RewardsConfig(chat="rubric_tournament", rubric_max_new_tokens=6)
    long_answer = " ".join(f"w{k}" for k in range(1000))[:4000]
    results, counts = tournament(Judge(micro_gen), ROW, ["seven", long_answer], cfg)
    scores = [r.score for r in results]
    record("rubric tournament: answers too long for the judge", 1, int(scores == [1.0, 0.0]))
    assert scores == [1.0, 0.0], [r.reason for r in results]
    assert counts["chat/judge_answer_too_long"] == 2
    half = ("seven " * 90).strip()  # about 540 characters: fits alone, not beside another
    results, counts = tournament(Judge(micro_gen), ROW, [half, half + " eight"], cfg)
    assert [r.score for r in results] == [0.0, 0.0]
    assert counts["chat/judge_answer_too_long"] == 0 and counts["chat/judge_failed"] == 2


def test_an_answer_too_long_beside_another_forfeits_its_games(micro_gen) -> None:
    """A tournament of a short right answer and a wrong one padded to just fit the
    judge's 1,024-token context alone (with the fallback rubric the untrained judge
    leaves): their games fit neither order. Before, both answers lost both (0.0 and
    0.0), so padding a wrong answer to fill the context cost its opponent every game
    against it, as an answer too long alone did; now the short answer, which fits
    beside a copy of itself where the padded one does not, wins both by forfeit (1.0,
    0.0). Answers the micro policy writes (at most 160 characters) always fit a game."""
    cfg = RewardsConfig(chat="rubric_tournament", rubric_max_new_tokens=6)
    base = len(micro_gen._encode(game_prompt(ROW, FALLBACK_RUBRIC, "", "")))
    room = 1024 - 1 - base  # characters an answer can take alone (one token each)
    short = "Six, then seven: the number after six is seven."
    padded = ("eight " * room)[: room - 10]
    results, counts = tournament(Judge(micro_gen), ROW, [short, padded], cfg)
    scores = [r.score for r in results]
    record("rubric tournament: answers too long for the judge", 1, int(scores == [1.0, 0.0]))
    assert counts["chat/rubric_failed"] == 1  # the fallback rubric, as measured
    assert scores == [1.0, 0.0], [r.reason for r in results]
    assert counts["chat/judge_answer_too_long"] == 2
