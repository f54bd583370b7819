"""Chat answers that show the judge nothing while they are not empty text: an answer
whose first 4,000 characters (all the judge is shown) are zero-width spaces, with its
words after the cut, and answers of control characters. A lenient judge behind a real
OpenAI-compatible endpoint ('Score: 6' to any answer, 'Winner: A' to any game), so
what the judge would say about nothing is what such an answer would score."""

from __future__ import annotations

from typing import Any

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.judge import MAX_JUDGED_CHARS, HTTPGenerator, Judge
from recipe_arena.rewards.rubric import tournament
from tests.hostile_tally import record
from tests.judge_endpoint import JudgeEndpoint, reply

ROW = PromptRow(
    id="c",
    messages=[{"role": "user", "content": "What number comes after six?"}],
    ground_truth="seven",
    domain="chat",
)


@pytest.fixture
def lenient():
    """(judge, requests seen): a judge that gives any answer 6 and any game to A."""
    seen: list[str] = []

    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        text = body["messages"][-1]["content"]
        seen.append(text)
        return reply("Winner: A" if "Answer A:" in text else "Score: 6")

    srv = JudgeEndpoint(answer)
    yield Judge(HTTPGenerator(srv.url, retries=0)), seen
    srv.close()


BLANK_TO_THE_JUDGE = [
    "\u200b" * MAX_JUDGED_CHARS + " eight",  # words only after the judge's cut
    "<think>seven</think>" + "\u2060" * MAX_JUDGED_CHARS + "seven",
    "\x01\x02",  # control characters
    "\x00\x7f\u034f",
]


@pytest.mark.parametrize("response", BLANK_TO_THE_JUDGE)
def test_an_answer_that_shows_the_judge_nothing_scores_0_unasked(lenient, response: str) -> None:
    """What the judge is shown of each answer shows nothing. Before, the judge was asked
    and its 6 was the reward (0.6): words after the cut, or control characters, made
    the answer not blank. Now each scores 0 as empty without a request, as an answer of
    zero-width spaces alone did; a visible answer is still judged (0.6)."""
    judge, seen = lenient
    res = judge.score([ROW], [response])
    ok = (res[0].score, res[0].reason) == (0.0, "empty answer") and not seen
    record("chat judge: answers that show the judge nothing", 1, int(ok))
    assert (res[0].score, res[0].reason) == (0.0, "empty answer"), res[0]
    assert not seen
    assert judge.score([ROW], ["seven"])[0].score == 0.6


def test_an_answer_of_control_characters_wins_nothing_in_a_tournament(lenient) -> None:
    """A tournament of "seven" and an answer of control characters under a judge that
    gives every game to A: each wins its game as A. Before, the control characters
    kept their 0.5; now they score 0 as an empty answer does."""
    judge, _ = lenient
    cfg = RewardsConfig(chat="rubric_tournament")
    out, _ = tournament(judge, ROW, ["seven", "\x01\x02\x03"], cfg)
    ok = out[1].score == 0.0
    record("rubric tournament: answers that show nothing", 1, int(ok))
    assert (out[1].score, out[1].reason) == (0.0, "empty answer"), out[1]
    assert out[0].score == 0.5
