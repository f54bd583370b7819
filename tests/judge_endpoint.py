"""A real OpenAI-compatible chat endpoint on 127.0.0.1 for the judge's tests: the judge
client (``rewards.judge.HTTPGenerator``) speaks HTTP to it exactly as to vLLM or OpenAI,
and the test decides each reply from the request's JSON body. Not a mock of the client:
the request, the status, the body and its parsing all go over a socket."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]
"""What the endpoint does with a request: its JSON body in, (HTTP status, JSON body) out."""


def reply(content: str, finish: str = "stop") -> tuple[int, dict[str, Any]]:
    """A 200 chat completion whose one choice says ``content`` and ended for ``finish``
    (``"stop"``: the model ended it; ``"length"``: cut at its token cap)."""
    choice = {"message": {"role": "assistant", "content": content}, "finish_reason": finish}
    return 200, {"choices": [choice]}


def quoting_verdict(prompt: str, right: str) -> str | None:
    """A game judge that explains itself: for a game prompt, ``Winner: A`` or ``B`` for
    the answer equal to ``right`` followed by a quote of the other answer, as judges quote
    what they rule on, or ``Winner: tie`` when both or neither are; None for a prompt that
    is not a game."""
    game = re.search(r"Answer A:\n(.*)\n\nAnswer B:\n(.*)\n\nWhich", prompt, re.S)
    if game is None:
        return None
    a, b = (x == right for x in game.groups())
    if a == b:
        return "Winner: tie"
    loser = game.group(2) if a else game.group(1)
    return f"Winner: {'A' if a else 'B'}. The other answer says: {loser}"


class JudgeEndpoint:
    """The endpoint, serving from a thread until ``close``; ``url`` is its base address."""

    def __init__(self, answer: Answer) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = answer(body)
                out = json.dumps(payload).encode()
                self.send_response(status)
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
