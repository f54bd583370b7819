"""A tournament game's tie worded with an article (``Winner: a tie``, ``Winner: a draw``)
is a tie, not the article ``a`` read as answer A. Played through ``tournament`` against a
real OpenAI-compatible endpoint judge."""

from __future__ import annotations

import re
from typing import Any

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.judge import HTTPGenerator, Judge
from recipe_arena.rewards.rubric import parse_winner, tournament
from tests.judge_endpoint import JudgeEndpoint, reply

ROW = PromptRow(
    id="c",
    messages=[{"role": "user", "content": "What is 3 + 4?"}],
    ground_truth="7",
    domain="chat",
)
RIGHT, WRONG = "3 + 4 = 7.", "3 + 4 = 8."


def _biased_judge(tie: str) -> JudgeEndpoint:
    """A judge with a position bias: shown the wrong answer first it calls the game a tie
    in the words ``tie``; shown the right answer first it names it (``Winner: A``).
    Rubric prompts get a rubric."""

    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        prompt = body["messages"][-1]["content"]
        game = re.search(r"Answer A:\n(.*)\n\nAnswer B:\n(.*)\n\nWhich", prompt, re.S)
        if game is None:
            return reply("1. It gives the sum.")
        return reply(f"Winner: {tie}" if game.group(1) == WRONG else "Winner: A")

    return JudgeEndpoint(answer)


@pytest.mark.parametrize("tie", ["a tie", "a draw", "A tie between A and B", "**a tie**"])
def test_a_worded_tie_is_no_win_for_the_first_answer(tie: str) -> None:
    """Attack: the wrong answer, shown first, gets the judge to call the game
    ``Winner: a tie``. By hand: that game is a tie (0.5 each) and the right answer wins
    the other (1), so the right answer scores 1.5 of 2 (0.75) and the wrong one 0.5 of 2
    (0.25). Before, the article was read as answer A: the wrong answer won that game and
    both scored 0.5."""
    srv = _biased_judge(tie)
    try:
        judge = Judge(HTTPGenerator(srv.url, timeout_s=30, retries=0))
        results, counts = tournament(
            judge, ROW, [RIGHT, WRONG], RewardsConfig(chat="rubric_tournament")
        )
    finally:
        srv.close()
    assert counts["chat/tournament_parsed"] == 2
    assert [r.score for r in results] == [0.75, 0.25], [r.reason for r in results]


@pytest.mark.parametrize(
    ("text", "winner"),
    [
        ("Winner: A", "A"),
        ("Winner: a", "A"),
        ("**Winner:** B", "B"),
        ("Winner: tie", "tie"),
        ("Winner: a tie-breaker on clarity gives A", "A"),
        ("Winner: A\nTie: no", "A"),
        ("Winner: A, a tie on accuracy but clearer", "A"),
    ],
)
def test_the_verdicts_beside_a_worded_tie_read_as_before(text: str, winner: str) -> None:
    """Verdicts near the worded tie keep their reading: the letter alone, ``tie`` alone,
    ``a tie-breaker`` (not a tie), and a tie word on the next line or after a comma."""
    assert parse_winner(text) == winner
