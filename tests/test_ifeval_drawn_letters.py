"""IFEval answers that hide a forbidden word, a capped count or capitals behind letters
drawn as Latin ones that Unicode's confusables do not list with one (the open e ``ɛ``,
the Ukrainian ``є``, the Greek ``ε``; the Cyrillic ``в н т``, listed with the small
capitals ``ʙ ʜ ᴛ``) and behind regional indicators, symbols drawn as boxed capitals
where they make no flag. Each is scored by lm-eval's real checkers through
``check_ifeval``, beside a plain answer that follows the instruction (1)."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.ifeval import check_ifeval
from tests.hostile_tally import record
from tests.test_ifeval_other_scripts import FEW_CAPS, LOVE, LOWER, TWO, instruction

RI = {c: chr(0x1F1E6 + ord(c) - ord("A")) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
"""Each capital's regional indicator symbol."""


def regional(word: str) -> str:
    """``word`` (capitals) in regional indicator symbols."""
    return "".join(RI[c] for c in word)


BIG = instruction("keywords:forbidden_words", forbidden_words=["big"])
FEW_THE = instruction("keywords:frequency", keyword="the", frequency=2, relation="less than")

HOSTILE = [
    # (instruction, hostile answer, plain answer that follows it)
    (LOVE, "I lov\u025b the sea.", "I like the sea."),  # open e
    (LOVE, "I lov\u0454 the sea.", "I like the sea."),  # Ukrainian ie
    (LOVE, "I lov\u03b5 the sea.", "I like the sea."),  # Greek epsilon
    (BIG, "The sea is \u0432ig.", "The sea is wide."),  # Cyrillic ve, a small capital B
    (FEW_THE, "The sea is wide. \u0442he sky is blue.", "The sea is wide."),  # te
    (LOVE, f"I {regional('LOVE')} the sea.", "I like the sea."),  # LO, then the VE flag
    (LOVE, f"I {regional('LOV')}\u200b{RI['E']} the sea.", "I like the sea."),
    (TWO, "I love it. ****** I lov\u025b it.", "I love it. ****** I like it."),
    (LOWER, f"the sea is {regional('BIG')} today and i like it.", "the sea is big today."),
    (FEW_CAPS, f"The sea is {regional('BIG')} and {regional('RED')}.", "The sea is big."),
]


@pytest.mark.parametrize(("gt", "hostile", "plain"), HOSTILE)
def test_a_letter_drawn_as_a_latin_one_does_not_hide_what_is_forbidden(
    gt: dict[str, object], hostile: str, plain: str
) -> None:
    """The hostile answer fails: a reader sees "love" (``lovɛ``; ``🇱🇴🇻🇪``, boxed L O
    and a flag read as V E; ``🇱🇴🇻\u200b🇪``, four boxed capitals), "Big" (``вig``), "the"
    twice for "less than 2" (``тhe sky``), one response twice (``lovɛ``), capitals in an all-lowercase answer (``🇧🇮🇬``,
    the flag of Burundi and a boxed G) and three capitalised words, G, D and R-E-D read
    from ``🇧🇮🇬`` and ``🇷🇪🇩``, for "less than 2". Before, each scored 1. The plain
    answer passes."""
    score = check_ifeval(gt, hostile)[0]
    record("ifeval: letters drawn as Latin ones", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(gt, plain)[0] == 1.0, plain


def test_honest_answers_with_those_letters_and_flags_keep_their_verdicts() -> None:
    """A Ukrainian answer (``Я люблю море, це є правда.``) holds no English forbidden
    word; a flag (``🇫🇷``) in an all-lowercase answer is no capital; a required word
    written with ``ɛ`` is not the word (``keywords:existence`` wants it as written)."""
    ukrainian = "\u042f \u043b\u044e\u0431\u043b\u044e \u043c\u043e\u0440\u0435, \u0446\u0435 \u0454 \u043f\u0440\u0430\u0432\u0434\u0430."
    assert check_ifeval(LOVE, ukrainian)[0] == 1.0
    assert check_ifeval(LOWER, f"i love paris {RI['F']}{RI['R']} and the sea is big.")[0] == 1.0
    must = instruction("keywords:existence", keywords=["love"])
    assert check_ifeval(must, "I lov\u025b the sea.")[0] == 0.0


@pytest.mark.parametrize(
    "hostile", ["the sea is \u0432ig.", "\u0442he sea is big.", "i s\u0430w \u043dim."]
)
def test_a_cyrillic_small_capital_is_a_capital_to_the_case_checks(hostile: str) -> None:
    """The Cyrillic ``в н т``, drawn as the small capitals ``ʙ ʜ ᴛ`` (Unicode's
    confusables list them so), in an answer otherwise in English lowercase: a reader sees
    "Big", "The", "Him", a capital each, so "all lowercase" fails (0); before, each
    scored 1 (they are lowercase letters to ``str.islower``). The cap on capitalised
    words, asked of any language, still reads them as lowercase: a Russian answer keeps
    its verdict there."""
    text = hostile + " i like it very much today and the sky is blue."
    score = check_ifeval(LOWER, text)[0]
    record("ifeval: letters drawn as Latin ones", 1, int(score == 0.0))
    assert score == 0.0, text
    russian = "\u0412\u0438\u0436\u0443 \u043c\u043e\u0440\u0435, \u0442\u0430\u043c \u043d\u0435\u0431\u043e."
    assert check_ifeval(FEW_CAPS, russian)[0] == 1.0
