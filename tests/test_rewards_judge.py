"""LM judge and rubric tournament: plumbing and failure handling through real models.

The micro model (untrained, tiny) is a real judge that answers nonsense: it checks
that prompts reach an engine, replies come back, and unparsable verdicts score 0 and
are counted. SmolLM2-135M-Instruct (slow test) is the judge of the smol world; the micro world's
judge has tests of its own (test_micro_judge.py).
HTTP tests run a real server on 127.0.0.1 wrapping a real engine; two of them inject
faults that cannot be produced otherwise (a stalled server, a failing first request).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.judge import HTTPGenerator, Judge, parse_score
from recipe_arena.rewards.rubric import pair_schedule, parse_winner, tournament, win_rates
from tests.untrained_judge import untrained_judge


def chat_row(ref: str | None = "roads") -> PromptRow:
    return PromptRow(
        id="c",
        messages=[{"role": "user", "content": "Plural of road?"}],
        ground_truth=ref,
        domain="chat",
    )


@pytest.fixture(scope="module")
def micro_gen():
    yield from untrained_judge(max_new_tokens=8)


def test_parse_score_cases() -> None:
    """'Score: 7' -> 0.7; last labelled score wins; '8/10' -> 0.8; a short reply with one
    number counts; out of range (11) and several bare numbers are unparsable (None)."""
    assert parse_score("Score: 7") == 0.7
    assert parse_score("Score: 2\nScore: 9") == 0.9
    assert parse_score("I give it 8/10") == 0.8
    assert parse_score("The answer is 10.") == 1.0
    assert parse_score("Score: 11") is None
    assert parse_score("3 or 4") is None
    assert parse_score(None) is None


def test_judge_through_a_real_engine_counts_unparsable(micro_gen) -> None:
    """Three non-empty answers are judged (3 engine calls) and one empty answer is not;
    every score lies in [0, 1]; judged = parsed + unparsable."""
    judge = Judge(micro_gen, mode="auto")
    prompt = judge.prompt_for(chat_row(), "<think>x</think>roads")[0]["content"]
    assert "roads" in prompt and "Reference answer" in prompt
    assert "Reference answer" not in judge.prompt_for(chat_row(None), "roads")[0]["content"]
    res = judge.score(
        [chat_row()] * 4, ["roads", "The plural is roads.", "cats", "<think>only thinking"]
    )
    assert all(0.0 <= r.score <= 1.0 for r in res)
    assert res[3].score == 0.0 and res[3].reason == "empty answer"
    c = judge.take_counts()
    parsed = sum(1 for r in res[:3] if r.reason.startswith("judge score"))
    assert c["chat/judged"] == 3 and c["chat/judge_unparsable"] == 3 - parsed


class _Server:
    """A real OpenAI-compatible endpoint on 127.0.0.1 that wraps an EngineGenerator."""

    def __init__(self, gen: Any, stall_s: float = 0.0, fail_first: int = 0) -> None:
        state = {"calls": 0}
        self.state = state

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                state["calls"] += 1
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if state["calls"] <= fail_first:
                    self.send_error(500, "injected failure")
                    return
                if stall_s:
                    time.sleep(stall_s)
                text = gen.generate([body["messages"]])[0]
                out = json.dumps(
                    {"choices": [{"message": {"role": "assistant", "content": text}}]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # Request threads that close() waits for: a stalled request otherwise answers
        # after its test has ended, on an engine the module's fixture may have closed,
        # and its traceback lands in whatever test the worker runs next.
        self.httpd.daemon_threads = False
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        """Stop serving, then wait for the requests in flight (``server_close`` joins
        their threads)."""
        self.httpd.shutdown()
        self.httpd.server_close()


def test_http_judge_round_trip_matches_engine(micro_gen) -> None:
    """Greedy decoding is deterministic, so the reply through HTTP equals the engine's
    reply for the same chat prompt."""
    srv = _Server(micro_gen)
    try:
        chat = [{"role": "user", "content": "Score this: roads"}]
        assert HTTPGenerator(srv.url, timeout_s=30).generate([chat]) == micro_gen.generate([chat])
    finally:
        srv.close()


def test_http_retry_after_failure_and_timeout_counts(micro_gen) -> None:
    """fail_first=1: the first request gets HTTP 500, the retry succeeds (2 calls).
    A server that stalls 3 s against a 0.5 s timeout and no retries: the judge reports a
    failure, scores 0 and counts chat/judge_failed = 1."""
    srv = _Server(micro_gen, fail_first=1)
    try:
        out = HTTPGenerator(srv.url, timeout_s=30, retries=1).generate(
            [[{"role": "user", "content": "hi"}]]
        )
        assert out[0] is not None and srv.state["calls"] == 2
    finally:
        srv.close()
    slow = _Server(micro_gen, stall_s=3.0)
    try:
        judge = Judge(HTTPGenerator(slow.url, timeout_s=0.5, retries=0))
        t0 = time.monotonic()
        res = judge.score([chat_row()], ["roads"])
        assert time.monotonic() - t0 < 2.5
        assert res[0].score == 0.0 and judge.take_counts()["chat/judge_failed"] == 1
    finally:
        slow.close()


def test_judge_memo_asks_each_distinct_prompt_once(micro_gen) -> None:
    """Scores of [roads, roads, cats] then [roads, dogs] through a real HTTP judge: the
    first batch sends 2 requests (roads once, cats) and hits the memo once; the second
    sends 1 (dogs) and hits once (roads): 3 requests for 5 verdicts, and a repeated
    answer gets the same score as its first judgement. A failed reply is not
    remembered: after the server goes away, the same new prompt is asked again."""
    srv = _Server(micro_gen)
    try:
        judge = Judge(HTTPGenerator(srv.url, timeout_s=30, retries=0))
        first = judge.score([chat_row()] * 3, ["roads", "roads", "cats"])
        assert srv.state["calls"] == 2 and first[0] == first[1]
        second = judge.score([chat_row()] * 2, ["roads", "dogs"])
        assert srv.state["calls"] == 3 and second[0] == first[0]
        assert judge.take_counts()["chat/judge_memo_hits"] == 2
    finally:
        srv.close()
    judge.score([chat_row()], ["birds"])
    judge.score([chat_row()], ["birds"])
    assert judge.take_counts()["chat/judge_failed"] == 2


def test_pair_schedule_and_win_rates() -> None:
    """G=4: all_pairs has 4*3/2 = 6 pairs; round_robin with k=1 is the ring (0,1),(1,2),
    (2,3),(0,3). Games (0 beats 1 in both orders, 1-2 tie twice, 2 vs 0 unparsable):
    points 0: 2 of 4 games = 0.5; 1: 0 + 2*0.5 = 1 of 4 = 0.25; 2: 1 of 4 = 0.25."""
    assert len(pair_schedule(4)) == 6
    assert pair_schedule(4, "round_robin", 1) == [(0, 1), (0, 3), (1, 2), (2, 3)]
    games = [(0, 1, "A"), (1, 0, "B"), (1, 2, "tie"), (2, 1, "tie"), (0, 2, None), (2, 0, None)]
    assert win_rates(3, games) == [0.5, 0.25, 0.25]
    assert parse_winner("I think... Winner: B") == "B" and parse_winner("Winner: tie") == "tie"
    assert parse_winner("no idea") is None


def test_tournament_through_a_real_engine(micro_gen) -> None:
    """G=3, all pairs in both orders: 3*2 = 6 games, each response plays 4; rewards in
    [0, 1]; the empty answer scores 0."""
    cfg = RewardsConfig(chat="rubric_tournament")
    res, counts = tournament(Judge(micro_gen), chat_row(None), ["roads", "road", ""], cfg)
    assert counts["chat/tournament_games"] == 6
    assert all(0.0 <= r.score <= 1.0 for r in res) and res[2].score == 0.0
    assert "over 4 games" in res[0].reason


def test_scorer_routes_chat_rows_to_the_judge(micro_gen) -> None:
    """A scorer built with an explicit judge scores chat rows with it and math rows in
    the pool, in one batch; judge counters surface in scorer.metrics()."""
    rows = [
        chat_row(),
        PromptRow(
            id="m", messages=[{"role": "user", "content": "1+1"}], ground_truth="2", domain="math"
        ),
    ]
    with build_scorer(RewardsConfig(workers=1), judge=Judge(micro_gen)) as s:
        res = s.score(rows, ["roads", r"\boxed{2}"])
        assert res[1].score == 1.0 and 0.0 <= res[0].score <= 1.0
        assert s.metrics()["reward/chat/judged"] == 1.0
        group = s.score_group(chat_row(), ["a", "b"])
        assert len(group) == 2


@pytest.mark.slow
def test_default_smol_judge_end_to_end() -> None:
    """The smol world's judge (SmolLM2-135M-Instruct, converted once from the package
    GGUF) grades two answers; its plumbing works and scores lie in [0, 1]."""
    with build_scorer(RewardsConfig(judge_model="smol", judge_max_new_tokens=16, workers=1)) as s:
        res = s.score([chat_row()] * 2, ["The plural of road is roads.", "cats"])
        assert all(0.0 <= r.score <= 1.0 for r in res)
        m = s.metrics()
        assert m["reward/chat/judged"] == 2.0
