"""IFEval answers that hide a forbidden word, a capped count or a repeated response
behind letters that Unicode's confusables list as Latin ones and that the Cyrillic,
Greek and Lisu tables left out: the Cherokee ``Ꮮ Ꮩ Ꭼ`` and their small letters, the
Canadian syllabics ``ᒪ ᐯ``, the Armenian ``օ``, the script ``ɡ``, the Latin alpha
``ɑ``, the dental click ``ǀ``, the izhitsa ``ѵ``, the Coptic ``ⲟ``, and the small
capital ``ʟ`` (read as a capital only by the case checks before); and marks it lists as
a comma, a full stop, a minus or an asterisk. Each is scored by lm-eval's real checkers
through ``check_ifeval``, beside a plain answer that follows the instruction (1)."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.ifeval import check_ifeval
from tests.hostile_tally import record
from tests.test_ifeval_drawn_alike import ONE_PARAGRAPH, TWO_BULLETS
from tests.test_ifeval_other_scripts import (
    FEW_A,
    FEW_SEA,
    FEW_SENTENCES,
    LOVE,
    NO_COMMA,
    TWO,
    instruction,
)

DOG = instruction("keywords:forbidden_words", forbidden_words=["dog"])

HOSTILE = [
    # (instruction, hostile answer, plain answer that follows it)
    (LOVE, "I \u13deO\u13d9\u13ac the sea.", "I like the sea."),  # Cherokee L V E
    (LOVE, "I \u14aaO\u142fE the sea.", "I like the sea."),  # Canadian syllabics L V
    (LOVE, "I \uabaeove the sea.", "I like the sea."),  # Cherokee small L
    (LOVE, "I l\u0585ve the sea.", "I like the sea."),  # Armenian oh
    (LOVE, "I \u01c0ove the sea.", "I like the sea."),  # dental click drawn as l
    (LOVE, "I lo\u0475e the sea.", "I like the sea."),  # Cyrillic izhitsa
    (LOVE, "I l\u2c9fve the sea.", "I like the sea."),  # Coptic o
    (LOVE, "I \u029fove the sea.", "I like the sea."),  # small capital L
    (DOG, "I have a do\u0261.", "I have a cat."),  # script g
    (FEW_SEA, "The sea. The se\u0251. The \u0455e\u0251.", "The sea is big."),  # Latin alpha
    (FEW_A, "A c\u0251t \u0251nd \u0251 b\u0251t.", "A dog sat."),
    (TWO, "I love the sea. ****** I l\u0585ve the sea.", "I love the sea. ****** I like it."),
]

MARKS = [
    # (instruction, hostile answer, plain answer that follows it)
    (NO_COMMA, "The sea is big\u066b blue and deep.", "The sea is big and deep."),
    (NO_COMMA, "The sea is big\u060d blue and deep.", "The sea is big and deep."),
    (NO_COMMA, "The sea is big\u0326 blue and deep.", "Marea e mare \u0219i adânc\u0103."),
    (NO_COMMA, "The sea is big \u0326blue and deep.", "Marea e mare s\u0326i adânc\u0103."),
    (FEW_SENTENCES, "It is big\U00010a50 Fish live in it\U00010a50 Boats sail\U00010a50", "It is."),
    (TWO_BULLETS, "- a\n- b\n\u02d7 c\n\u2796 d", "- a\n- b"),
    (TWO_BULLETS, "* a\n* b\n\u066d c\n\U0001031f d", "* a\n* b"),
    (ONE_PARAGRAPH, "One.\n\n\u066d\u066d\u066d\n\nTwo.", "One."),
]


@pytest.mark.parametrize(("gt", "hostile", "plain"), HOSTILE)
def test_a_confusable_letter_does_not_hide_what_is_forbidden(
    gt: dict[str, object], hostile: str, plain: str
) -> None:
    """The hostile answer fails: a reader sees the forbidden word, the capped count or
    one response twice; before, each scored 1, since NFKC keeps these letters apart
    from Latin ones and only Cyrillic, Greek and Lisu look-alikes were read as Latin.
    The plain answer passes."""
    score = check_ifeval(gt, hostile)[0]
    record("ifeval: confusable letters", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(gt, plain)[0] == 1.0, plain


def test_honest_answers_with_those_letters_keep_their_verdicts() -> None:
    """An Armenian answer (``Ես սիրում եմ ծովը։``, "I love the sea") holds no English
    forbidden word; a look-alike does not count towards "at least" (the word as shown
    is wanted); a required word written with a look-alike is not the word; two
    responses that differ in what they say still differ."""
    armenian = "\u0535\u057d \u057d\u056b\u0580\u0578\u0582\u0574 \u0565\u0574 \u056e\u0578\u057e\u0568\u0589"
    assert check_ifeval(LOVE, armenian)[0] == 1.0
    many_sea = instruction("keywords:frequency", keyword="sea", frequency=2, relation="at least")
    assert check_ifeval(many_sea, "The sea. The se\u0251.")[0] == 0.0
    must = instruction("keywords:existence", keywords=["love"])
    assert check_ifeval(must, "I l\u0585ve the sea.")[0] == 0.0
    assert check_ifeval(TWO, "I l\u0585ve the sea. ****** I like it.")[0] == 1.0


@pytest.mark.parametrize(("gt", "hostile", "plain"), MARKS)
def test_a_confusable_mark_is_read_as_the_mark_it_is_drawn_as(
    gt: dict[str, object], hostile: str, plain: str
) -> None:
    """Marks that Unicode's confusables list as a comma (the Arabic decimal and date
    separators ``٫`` ``؍``) or drawn as one (the combining comma below, on a letter or
    a space; a Romanian ``ș`` is no comma), a full stop (the Kharoshthi punctuation dot), a minus
    (``˗``, ``➖``) or an asterisk (``٭``, the Old Italic ``𐌟``): a comma for "no
    commas", three sentences for "less than 2", four bullets for "exactly 2", two
    paragraphs for "exactly 1". Before, each scored 1. The plain answer passes."""
    score = check_ifeval(gt, hostile)[0]
    record("ifeval: confusable letters", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(gt, plain)[0] == 1.0, plain
