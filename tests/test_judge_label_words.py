"""The judge's verdict label must be a word of its own. A reply that gives its verdict
and then describes the answer in words ending in "score" or "rating" ("it keeps
generating 10 digits", an answer full of "underscore 9") was read by that last
look-alike label. Judged through a real OpenAI-compatible endpoint and ``Judge``."""

from __future__ import annotations

import pytest

from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.judge import HTTPGenerator, Judge
from tests.hostile_tally import record
from tests.judge_endpoint import JudgeEndpoint, reply


def _judged(text: str) -> float:
    row = PromptRow(
        id="c",
        messages=[{"role": "user", "content": "Name the digits of pi."}],
        ground_truth="3.14159",
        domain="chat",
    )
    srv = JudgeEndpoint(lambda body: reply(text))
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
