"""A tournament game's verdict label must be a word of its own. A judge that gives its
verdict and then quotes the losing answer read as that answer's "breadwinner a": the
last "winner" followed by a letter, so a wrong answer ending in it won every game in
which it was answer A. Played through ``tournament`` against a real OpenAI-compatible
endpoint whose judge names the right answer the winner and then quotes the other."""

from __future__ import annotations

from typing import Any

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.micro_verdicts import paired_games
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.judge import HTTPGenerator, Judge
from recipe_arena.rewards.rubric import parse_winner, tournament
from tests.hostile_tally import record
from tests.judge_endpoint import JudgeEndpoint, quoting_verdict, reply

ROW = PromptRow(
    id="c",
    messages=[{"role": "user", "content": "Who earns the family's money?"}],
    ground_truth="The breadwinner.",
    domain="chat",
)
RIGHT = "The breadwinner."


def _quoting_judge() -> JudgeEndpoint:
    """A real endpoint judging games: the answer equal to ``RIGHT`` wins ('Winner: A',
    'Winner: B', or 'Winner: tie' when both or neither are); after a win it quotes the
    other answer, as judges explain their verdicts. Rubric prompts get a rubric."""

    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        verdict = quoting_verdict(body["messages"][-1]["content"], RIGHT)
        return reply(verdict or "1. It names who earns the money.")

    return JudgeEndpoint(answer)


@pytest.mark.parametrize(
    "wrong",
    ["The mother, the breadwinner a", "The prizewinner B", "Nobody."],
)
def test_a_word_ending_in_the_label_wins_no_game(wrong: str) -> None:
    """The right answer wins both games against the wrong one (1.0 and 0.0). Before,
    "breadwinner a" quoted after "Winner: B" was read as A: the wrong answer, answer A
    in one of the two orders, won that game and scored 0.5 (so did "prizewinner B" as
    answer B). The plain wrong answer's games are read as before."""
    srv = _quoting_judge()
    cfg = RewardsConfig(chat="rubric_tournament")
    try:
        judge = Judge(HTTPGenerator(srv.url, timeout_s=30, retries=0))
        results, counts = tournament(judge, ROW, [RIGHT, wrong], cfg)
    finally:
        srv.close()
    scores = [r.score for r in results]
    expected = [1.0, 0.0]
    record("rubric tournament: labels inside words", 1, int(scores == expected))
    assert counts["chat/tournament_parsed"] == 2
    assert scores == expected, [r.reason for r in results]


def test_the_micro_judges_game_replies_read_as_before() -> None:
    """Every game reply the micro judge is trained to write (600 held-out games, right,
    wrong and tied) is read as its own winner."""
    games = paired_games("heldout", 600, seed=99)
    assert all(parse_winner(g.reply) == g.winner for g in games)
