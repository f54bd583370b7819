"""IFEval answers that pass an instruction with symbols drawn otherwise than the checkers
read them: the negative circled and squared capitals (``🅛``, ``🅻``; symbols to Unicode,
with no compatibility form), the Ogham space mark (white space to Unicode, drawn as a
stroke), the musical null notehead (a symbol, drawn as blank space) and geometric
bullets (``▸``, ``➤``, ``■``) opening list lines. Scored by lm-eval's real checkers
through ``check_ifeval``, beside a plain answer that follows the instruction (1); the
notehead also through ``Judge`` behind a real OpenAI-compatible endpoint."""

from __future__ import annotations

from typing import Any

import pytest

from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.ifeval import check_ifeval
from recipe_arena.rewards.judge import HTTPGenerator, Judge
from tests.hostile_tally import record
from tests.judge_endpoint import JudgeEndpoint, reply
from tests.test_ifeval_other_scripts import LOVE, LOWER, instruction


def boxed(word: str, base: int) -> str:
    """``word`` (capitals) in the negative circled (``base`` 0x1F150) or negative squared
    (0x1F170) capitals."""
    return "".join(chr(base + ord(c) - ord("A")) for c in word)


END = instruction("startend:end_checker", end_phrase="The end.")
QUOTED = instruction("startend:quotation")
TITLE = instruction("detectable_format:title")
TWO_HIGHLIGHTS = instruction("detectable_format:number_highlighted_sections", num_highlights=2)
NOTEHEAD = "\U0001d159"

HOSTILE = [
    # (instruction, hostile answer, plain answer that follows it)
    (LOVE, f"I {boxed('LOVE', 0x1F170)} the sea.", "I like the sea."),
    (LOVE, f"I {boxed('LOVE', 0x1F150)} the sea.", "I like the sea."),
    (END, "Hi. The end.\u1680\u1680\u1680", "Hi. The end."),
    (QUOTED, '"The sea is big."\u1680\u1680', '"The sea is big."'),
    (TITLE, f"<<{NOTEHEAD}>> The sea is big.", "<<Sea>> The sea is big."),
    (TWO_HIGHLIGHTS, f"*{NOTEHEAD}* and *{NOTEHEAD}*", "*big* and *deep*"),
]


@pytest.mark.parametrize(("gt", "hostile", "plain"), HOSTILE)
def test_a_symbol_is_read_as_it_is_drawn(gt: dict[str, object], hostile: str, plain: str) -> None:
    """A reader sees "LOVE" in boxed capitals for "do not use the word love", strokes after the end phrase or the closing
    quote (``strip`` removed the Ogham space mark as white space), and a title and two
    highlights that hold nothing (``<<𝅙>>``, ``*𝅙*``, the notehead drawn as blank).
    Before, each scored 1. Expected 0; the plain answer passes."""
    score = check_ifeval(gt, hostile)[0]
    record("ifeval: symbols drawn otherwise", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(gt, plain)[0] == 1.0, plain


def test_boxed_capitals_were_capitals_to_the_case_checks_already() -> None:
    """Unicode counts the negative circled capitals as capitals (``str.isupper``), so an
    all-lowercase answer holding ``🅑🅘🅖`` fails, as it did before."""
    assert check_ifeval(LOWER, f"the sea is {boxed('BIG', 0x1F150)} and deep.")[0] == 0.0


def test_an_answer_of_null_noteheads_scores_0_unasked() -> None:
    """A judge that gives any answer 6: an answer of three null noteheads shows nothing
    and scores 0 as an empty answer, without a request; before, the judge was asked and
    its 6 was the reward (0.6). A visible answer is still judged (0.6)."""
    seen: list[str] = []

    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        seen.append(body["messages"][-1]["content"])
        return reply("Score: 6")

    row = PromptRow(
        id="c", messages=[{"role": "user", "content": "Say hi."}], ground_truth="hi", domain="chat"
    )
    srv = JudgeEndpoint(answer)
    try:
        judge = Judge(HTTPGenerator(srv.url, retries=0))
        res = judge.score([row, row], [NOTEHEAD * 3, "hi"])
    finally:
        srv.close()
    record("chat judge: answers that show the judge nothing", 1, int(res[0].score == 0.0))
    assert (res[0].score, res[0].reason) == (0.0, "empty answer") and len(seen) == 1
    assert res[1].score == 0.6


TWO_BULLETS = instruction("detectable_format:number_bullet_lists", num_bullets=2)


@pytest.mark.parametrize("signs", ["\u25b8\u27a4", "\u25a0\u25cb", "\u25c6\u2756", "\u25ba\u27a2"])
def test_a_line_opened_by_a_geometric_bullet_is_a_bullet(signs: str) -> None:
    """``* a\\n* b`` then two lines opened by triangles, squares, diamonds or arrowheads
    (``▸ c``, ``➤ d``): four bullets to a reader, two to the checker, which counts lines
    opened by ``-`` or ``*``, so it passed "exactly 2 bullets" (1). Expected 0; two
    bullets drawn ``▸`` pass (1; before, 0)."""
    hostile = f"* a\n* b\n{signs[0]} c\n{signs[1]} d"
    score = check_ifeval(TWO_BULLETS, hostile)[0]
    record("ifeval: symbols drawn otherwise", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(TWO_BULLETS, f"{signs[0]} a\n{signs[1]} b")[0] == 1.0
