"""The chat judge against a policy that controls only its answer text: template fields
written into the answer, and replies the judge did not finish (a long answer word
copied into the reply can push the verdict past the judge's token cap, leaving a bare
number that is not a verdict). Real engines and a real HTTP server throughout."""

from __future__ import annotations

from typing import Any

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.judge import (
    CUT_MARK,
    EngineGenerator,
    HTTPGenerator,
    Judge,
    judge_prompt,
    parse_score,
)
from recipe_arena.rewards.rubric import game_prompt, tournament
from tests.hostile_tally import record
from tests.judge_endpoint import JudgeEndpoint, reply
from tests.untrained_judge import untrained_judge


def _row(ref: str | None = "seven") -> PromptRow:
    return PromptRow(
        id="c",
        messages=[{"role": "user", "content": "What number comes after six?"}],
        ground_truth=ref,
        domain="chat",
    )


@pytest.fixture(scope="module")
def micro_gen():
    yield from untrained_judge(max_new_tokens=6)


def test_template_fields_in_an_answer_stay_literal() -> None:
    """An answer ``{reference}`` is shown as those eleven characters: the reference is
    in the judge's prompt once, in its own section, never copied into the answer's. In
    a rubric game an answer A of ``{second}`` does not bring answer B into its place."""
    for answer in ("{reference}", "{prompt} {reference} {response}", "{0}{}"):
        text = judge_prompt(_row("the secret"), answer)[0]["content"]
        ok = text.count("the secret") == 1 and answer in text
        record("chat judge: template fields in the answer", 1, int(ok))
        assert ok, text
    text = game_prompt(_row(), "1. right", "{second}", "B's words")[0]["content"]
    assert text.count("B's words") == 1 and "Answer A:\n{second}" in text


def test_a_bare_number_in_a_cut_reply_is_not_a_verdict() -> None:
    """A finished short reply with one number is a label-less verdict ('7' -> 0.7); the
    same text cut at the cap is not (None: unparsable, scores 0). Labels still count in
    a cut reply: 'Score: 3' then more -> 0.3."""
    copied = "aaaaaaaaaaaaaaaaaaaaaaaaa / 7 x."  # the answer's last word, the reference
    assert parse_score(copied) == 0.7
    assert parse_score(copied + CUT_MARK) is None
    assert parse_score("Score: 3 because" + CUT_MARK) == 0.3
    assert parse_score("It is 8/10 in" + CUT_MARK) == 0.8
    record("chat judge: bare numbers in cut replies", 1, 1)


def test_an_engine_reply_cut_at_the_cap_is_marked(micro_gen) -> None:
    """The untrained micro model (greedy, seed 0) writes six newlines and no end: the
    reply reaches the cap and ends with CUT_MARK; without a label it is unparsable (0,
    counted)."""
    replies = micro_gen.generate([judge_prompt(_row(), "seven")])
    assert replies[0] is not None and replies[0].endswith(CUT_MARK)
    judge = Judge(micro_gen)
    res = judge.score([_row()], ["seven"])
    assert res[0].score == 0.0 and judge.take_counts()["chat/judge_unparsable"] == 1


@pytest.mark.parametrize(("finish", "score"), [("stop", 0.7), ("length", 0.0)])
def test_an_http_reply_cut_at_max_tokens_is_read_by_labels_only(finish: str, score: float) -> None:
    """The endpoint's finish_reason decides: '7' that stopped is a verdict of 0.7; '7'
    cut at max_tokens is unparsable (0)."""
    srv = JudgeEndpoint(lambda body: reply("7", finish))
    try:
        res = Judge(HTTPGenerator(srv.url, timeout_s=30, retries=0)).score([_row()], ["seven"])
    finally:
        srv.close()
    assert res[0].score == score, res[0].reason


class _Recording:
    """The real micro generator, recording the prompts it is given (to read the game
    prompts the tournament built; nothing is changed)."""

    def __init__(self, gen: EngineGenerator) -> None:
        self.gen, self.prompts = gen, []  # type: ignore[var-annotated]

    def generate(self, prompts: Any, max_new_tokens: int | None = None) -> list[str | None]:
        self.prompts += list(prompts)
        return self.gen.generate(prompts, max_new_tokens)

    def close(self) -> None:
        pass


def test_a_rubric_cut_at_its_cap_is_shown_without_the_mark(micro_gen) -> None:
    """The rubric reply reaches its cap (6 tokens, as above), and the games show the
    rubric as written, without CUT_MARK, so the mark changes no comparison."""
    rec = _Recording(micro_gen)
    cfg = RewardsConfig(chat="rubric_tournament", rubric_max_new_tokens=6)
    tournament(Judge(rec), _row(), ["seven", "eight"], cfg)  # type: ignore[arg-type]
    games = [p[0]["content"] for p in rec.prompts[1:]]
    assert len(games) == 2 and not any("[cut at" in g for g in games)
