"""Answers that show nothing (zero-width characters, the byte-order mark, soft hyphens,
a lone combining mark, the braille blank, a Hangul filler) are empty to every verifier
that gives an empty answer 0: IFEval, the chat judge and the rubric tournament."""

from __future__ import annotations

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.ifeval import check_ifeval
from recipe_arena.rewards.judge import Judge
from recipe_arena.rewards.rubric import tournament
from recipe_arena.rewards.text import is_blank
from tests.hostile_tally import record
from tests.untrained_judge import untrained_judge

BLANK = [
    "\u200b",  # zero-width space
    "<think>x</think>\u200b\u200c\u200d",  # after the think block: ZWSP, ZWNJ, ZWJ
    "\ufeff",  # byte-order mark
    "\u2060",  # word joiner
    "\u180e",  # Mongolian vowel separator
    "\u00ad",  # soft hyphen
    "\u034f",  # combining grapheme joiner
    "\u2800",  # braille pattern blank
    "\u3164",  # Hangul filler
    " \u200b\n\u00a0",  # mixed with whitespace
]


@pytest.mark.parametrize("response", BLANK)
def test_an_invisible_answer_follows_no_instruction(response: str) -> None:
    """``punctuation:no_comma`` holds for any text without a comma, but an answer that
    shows nothing follows nothing: 0, as the empty answer."""
    gt = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    score, reason = check_ifeval(gt, response)
    record("ifeval: invisible answers", 1, int(score == 0.0))
    assert score == 0.0, reason


def test_visible_answers_are_not_blank() -> None:
    """A letter, a digit, a full stop, an accented letter written with a combining mark
    and an emoji all show something."""
    for text in ("a", "7", ".", "e\u0301", "\U0001f600", "\u00e9"):
        assert not is_blank(text), text
    gt = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    assert check_ifeval(gt, "<think>x</think>no commas here")[0] == 1.0


@pytest.fixture(scope="module")
def micro_gen():
    yield from untrained_judge(max_new_tokens=4)


def test_the_judge_and_the_tournament_give_an_invisible_answer_0(micro_gen) -> None:
    """The judge scores a zero-width answer 0 as empty without asking the model (judged
    0 times); the tournament gives it 0 whatever the games say."""
    row = PromptRow(
        id="c",
        messages=[{"role": "user", "content": "Plural of road?"}],
        ground_truth="roads",
        domain="chat",
    )
    judge = Judge(micro_gen)
    res = judge.score([row], ["<think>x</think>\u200b\u2060"])
    assert (res[0].score, res[0].reason) == (0.0, "empty answer")
    assert judge.take_counts()["chat/judged"] == 0
    cfg = RewardsConfig(chat="rubric_tournament")
    out, _ = tournament(judge, row, ["roads", "\u200b\u00ad"], cfg)
    assert (out[1].score, out[1].reason) == (0.0, "empty answer")
