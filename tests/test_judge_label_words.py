"""The judge's verdict label must be a word of its own. A reply that gives its verdict
and then describes the answer in words ending in "score" or "rating" ("it keeps
generating 10 digits", an answer full of "underscore 9") was read by that last
look-alike label. Judged through a real OpenAI-compatible endpoint and ``Judge``."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.judge import HTTPGenerator, Judge
from tests.hostile_tally import record


class _ReplyServer:
    """A real OpenAI-compatible endpoint that answers every prompt with ``reply``."""

    def __init__(self, reply: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                self.rfile.read(int(self.headers["Content-Length"]))
                choice = {
                    "message": {"role": "assistant", "content": reply},
                    "finish_reason": "stop",
                }
                out = json.dumps({"choices": [choice]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _judged(reply: str) -> float:
    row = PromptRow(
        id="c",
        messages=[{"role": "user", "content": "Name the digits of pi."}],
        ground_truth="3.14159",
        domain="chat",
    )
    srv = _ReplyServer(reply)
    try:
        res = Judge(HTTPGenerator(srv.url, timeout_s=30, retries=0)).score([row], ["9 9 9"])
    finally:
        srv.close()
    return res[0].score


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("Score: 2. The answer keeps generating 10 digits that are wrong.", 0.2),
        ("Score: 1\nThe answer is an underscore 9 pattern, not pi.", 0.1),
        ("Score: 0. Its author is overrating 10 guesses.", 0.0),
        ("Rating: 3. Integrating 8 ideas does not make it right.", 0.3),
    ],
)
def test_a_word_ending_in_a_label_is_not_a_verdict(reply: str, verdict: float) -> None:
    """The judge's own label ("Score: 2") is the verdict; "generating 10" after it is
    not a second, later one."""
    score = _judged(reply)
    record("chat judge: labels inside words", 1, int(score == verdict))
    assert score == verdict


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("Score: 8", 0.8),
        ("Overall score: 9. The answer matches the reference.", 0.9),
        ("**Score:** 7", 0.7),
        ("final_score = 6", 0.6),
        ("Rating: 4/10", 0.4),
    ],
)
def test_a_label_of_its_own_is_still_read(reply: str, verdict: float) -> None:
    """Labels after a space, a star, a line start or an underscore are read as before."""
    assert _judged(reply) == verdict
