"""An endpoint judge's reply stopped for a reason other than its token cap. OpenAI stops a
reply with ``finish_reason: content_filter`` and vLLM or SGLang with ``abort``, as
abruptly as the cap does; read as a finished reply, the answer's words a judge had
copied by then were a short reply's one number. Judged through a real
OpenAI-compatible endpoint and ``Judge``."""

from __future__ import annotations

import re
from typing import Any

from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.judge import HTTPGenerator, Judge
from tests.judge_endpoint import JudgeEndpoint, reply

ROW = PromptRow(
    id="c",
    messages=[{"role": "user", "content": "How many apples are in the bowl?"}],
    ground_truth="3",
    domain="chat",
)


def _scored(handler: Any, answers: list[str]) -> list[Any]:
    """Each answer to ``ROW`` judged by ``Judge`` through a real endpoint run by
    ``handler``."""
    srv = JudgeEndpoint(handler)
    try:
        judge = Judge(HTTPGenerator(srv.url, max_new_tokens=64, timeout_s=30, retries=0))
        return judge.score([ROW] * len(answers), answers)
    finally:
        srv.close()


def _quoting_judge(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A judge that quotes the answer's first two words, then gives its verdict (0), or
    for the answer ``3`` writes ``Correct: 10``, a short reply with no label. An answer that names a stop reason (``filtered``,
    ``aborted``, ``capped``) gets its reply stopped after the quote for that reason, as a
    content filter, an aborted request or a gateway's ``MAX_TOKENS`` stops it; a finished
    reply ends for ``STOP``, as some gateways write ``stop``."""
    prompt = body["messages"][0]["content"]
    graded = re.search(r"Answer to grade:\n(.*)\n\nDoes", prompt, re.S)
    answer = graded.group(1) if graded else ""
    quote = "The answer says " + " ".join(answer.split()[:2])
    if "filtered" in answer:
        return reply(quote, "content_filter")
    if "aborted" in answer:
        return reply(quote, "abort")
    if "capped" in answer:
        return reply(quote, "MAX_TOKENS")
    return reply("Correct: 10" if answer.strip() == "3" else f"{quote}. Score: 0", "STOP")


def test_a_reply_stopped_by_a_filter_or_an_abort_is_read_as_cut() -> None:
    """Attack: wrong answers ``9 apples, filtered``, ``9 apples, aborted`` and ``9
    apples, capped``; the judge's reply stops after ``The answer says 9 apples,`` (25
    characters, one number) for ``content_filter``, ``abort`` and ``MAX_TOKENS``. By
    hand: a reply the model did not end holds no label, so it is unparsable, 0.0 each;
    before, each read as a finished short reply of one number, 0.9. Replies ended for
    ``STOP`` read as finished, as before: the right answer ``3`` gets ``Correct: 10``
    (one number, 1.0) and a wrong ``9`` ``Score: 0`` (0.0)."""
    answers = ["9 apples, filtered", "9 apples, aborted", "9 apples, capped", "3", "9"]
    res = _scored(_quoting_judge, answers)
    assert [r.score for r in res] == [0.0, 0.0, 0.0, 1.0, 0.0], [r.reason for r in res]
    assert all("unparsable" in r.reason for r in res[:3])


def _reason_judge(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A judge whose reply ends for the reason the answer names after ``because``:
    ``Correct: 10`` (a short reply, no label) for an answer starting ``3``, and the quote
    ``The answer says 9 apples,`` for one starting ``9``; ``sglang-stop`` and
    ``sglang-length`` are SGLang's object form (``{"type": ...}``)."""
    prompt = body["messages"][0]["content"]
    graded = re.search(r"Answer to grade:\n(.*)\n\nDoes", prompt, re.S)
    answer = graded.group(1) if graded else ""
    why: Any = answer.split("because ")[-1]
    if why.startswith("sglang-"):
        why = {"type": why.removeprefix("sglang-"), "matched": None}
    text = "Correct: 10" if answer.startswith("3") else "The answer says 9 apples,"
    status, payload = reply(text, "stop")
    payload["choices"][0]["finish_reason"] = why
    return status, payload


def test_only_a_reason_that_stops_the_model_early_reads_as_cut() -> None:
    """Honest: the right answer ``3`` gets ``Correct: 10`` ended for ``tool_calls``,
    ``function_call`` (OpenAI), ``tool_use`` (Anthropic), ``COMPLETE`` (Cohere) and
    SGLang's ``{"type": "stop"}``: by hand one number, 1.0 each (a list of the ended
    reasons read these as cut, 0.0, and SGLang's object raised ``TypeError``). Attack:
    the quote of a wrong ``9`` stopped for Gemini's ``SAFETY``, Anthropic's ``refusal``
    and SGLang's ``{"type": "length"}`` is cut, unparsable, 0.0 (0.9 read as finished)."""
    honest = ["tool_calls", "function_call", "tool_use", "COMPLETE", "sglang-stop"]
    hostile = ["SAFETY", "refusal", "sglang-length"]
    answers = [f"3 because {w}" for w in honest] + [f"9 because {w}" for w in hostile]
    res = _scored(_reason_judge, answers)
    assert [r.score for r in res] == [1.0] * 5 + [0.0] * 3, [r.reason for r in res]
