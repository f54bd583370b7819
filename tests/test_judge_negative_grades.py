"""A judge that grades below zero gives no verdict (``Score: -10`` is not 10). Scored
through the real scorer and a real OpenAI-compatible endpoint judge."""

from __future__ import annotations

import re
from typing import Any

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.judge import parse_score
from recipe_arena.rewards.scorer import build_scorer
from tests.judge_endpoint import JudgeEndpoint, reply

ROW = PromptRow(
    id="c",
    messages=[{"role": "user", "content": "What is 3 + 4?"}],
    ground_truth="7",
    domain="chat",
)


@pytest.mark.parametrize("grade", ["Score: -10", "-10", "Score: -10/10", "Score: \u221210"])
def test_a_grade_below_zero_is_no_verdict(grade: str) -> None:
    """Attack: a wrong answer (``8``) that gets the judge to grade on a scale from -10
    (worst) to 10 (best), so the judge writes ``Score: -10``. By hand: -10 is outside 0 to
    10, so the reply holds no verdict: 0.0 and the reason says it was unparsable, while
    the right answer's ``Score: 10`` is 1.0. Before, the minus sign was dropped: the
    label did not match (``-`` before its value) and the short reply's one number, 10,
    was read, 1.0 (``-10/10`` by the ``N/10`` rule, ``\u221210`` with the minus sign)."""

    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        prompt = body["messages"][-1]["content"]
        said = re.search(r"(?:Answer to grade|Response):\n(.*?)\n\n", prompt, re.S)
        return reply("Score: 10" if said and said.group(1).strip() == "7" else grade)

    srv = JudgeEndpoint(answer)
    sc = build_scorer(RewardsConfig(judge_model=srv.url, workers=1))
    try:
        got = sc.score([ROW, ROW], ["8", "7"])
    finally:
        sc.close()
        srv.close()
    assert [r.score for r in got] == [0.0, 1.0], [r.reason for r in got]
    assert got[0].reason.startswith("judge answer unparsable")


@pytest.mark.parametrize(
    ("text", "score"),
    [("7-3/10", 0.3), ("x-10", 1.0), ("Score: 7-8", 0.7), ("10 - correct", 1.0), ("-1, 9", None)],
)
def test_a_hyphen_that_is_no_sign_reads_as_before(text: str, score: float | None) -> None:
    """A hyphen after a digit or a letter is no minus sign (``7-3/10`` is 3 of 10); a
    short reply holding a negative number and another holds two numbers, no verdict, as
    before."""
    assert parse_score(text) == score
