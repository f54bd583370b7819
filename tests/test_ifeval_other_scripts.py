"""IFEval answers that hide a forbidden word, or a counted one, behind letters of
another script drawn as Latin ones (a Cyrillic ``о`` in ``lоve``), and commas and
full stops behind marks Unicode names otherwise (the cedilla ``¸``, the Greek lower
numeral sign ``͵``, the Lisu tone ``ꓸ``, the click letter ``ǃ``, the ornaments ``❟``
and ``❗``), and capitals behind small capitals (``ᴛʜᴇ``, lowercase letters to Unicode); and two
"different" responses that differ only by a look-alike.
Each is scored by lm-eval's real checkers through ``check_ifeval``, beside a plain
answer that follows the instruction (1) and an honest answer in that script."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.ifeval import check_ifeval
from tests.hostile_tally import record


def instruction(iid: str, **kwargs: object) -> dict[str, object]:
    """The ground truth of an IFEval row holding the one instruction ``iid``."""
    return {"instruction_id_list": [iid], "kwargs": [kwargs]}


LOVE = instruction("keywords:forbidden_words", forbidden_words=["love"])
FEW_SEA = instruction("keywords:frequency", keyword="sea", frequency=2, relation="less than")
FEW_A = instruction(
    "keywords:letter_frequency", letter="a", let_frequency=3, let_relation="less than"
)
NO_COMMA = instruction("punctuation:no_comma")
LOWER = instruction("change_case:english_lowercase")
TWO = instruction("combination:two_responses")
FEW_CAPS = instruction(
    "change_case:capital_word_frequency", capital_frequency=2, capital_relation="less than"
)
FEW_SENTENCES = instruction(
    "length_constraints:number_sentences", num_sentences=2, relation="less than"
)

HOSTILE = [
    # (instruction, hostile answer, plain answer that follows it)
    (LOVE, "I l\u043eve the sea.", "I like the sea."),  # Cyrillic o
    (LOVE, "I \u04c0\u03bfv\u0435 the sea.", "I like the sea."),  # palochka, omicron, ie
    (
        instruction("keywords:forbidden_words", forbidden_words=["cope"]),
        "I \u0441\u043e\u0440\u0435.",
        "I manage.",
    ),
    (FEW_SEA, "The sea. The s\u0435a. The \u0455ea.", "The sea is big."),
    (FEW_A, "A c\u0430t \u0430nd \u0430 b\u0430t.", "A dog sat."),
    (NO_COMMA, "The sea is big\u00b8 blue and deep.", "The sea is big and deep."),
    (NO_COMMA, "The sea is big\u0375 blue and deep.", "The sea is big and deep."),
    (NO_COMMA, "The sea is big\u02cf blue and deep.", "The sea is big and deep."),
    (NO_COMMA, "The sea is big\ua4f9 blue and deep.", "The sea is big and deep."),  # Lisu
    (FEW_SENTENCES, "The sea is big\u01c3 Fish live in it\u01c3 Boats sail\u01c3", "It is big."),
    (FEW_SENTENCES, "The sea is big\ua4f8 Fish live in it\ua4f8 Boats sail\ua4f8", "It is big."),
    (NO_COMMA, "The sea is big\u275f blue and deep.", "The sea is big and deep."),  # ornament
    (FEW_SENTENCES, "The sea is big\u2757 Fish live in it\u2753 Boats sail\u2757", "It is big."),
    (LOWER, "the sea is \u0299\u026a\u0262 and blue. fish live in it.", "the sea is big."),
    (LOWER, "\u1d1b\u029c\u1d07 sea is big and blue. fish live in it.", "the sea is big."),
    (TWO, "A cat is small. ****** \u0410 cat is small.", "A cat is small. ****** A dog is big."),
    (FEW_CAPS, "The sea is \u0299\u026a\u0262 and \u1d05\u1d07\u1d07\u1d18.", "The sea is BIG."),
]


@pytest.mark.parametrize(("gt", "hostile", "plain"), HOSTILE)
def test_a_lookalike_does_not_hide_what_is_forbidden(
    gt: dict[str, object], hostile: str, plain: str
) -> None:
    """The hostile answer fails (before, each scored 1: NFKC keeps Cyrillic and Greek
    letters apart from Latin ones, and the marks drawn as commas or sentence ends are
    named none); the
    plain answer passes."""
    score = check_ifeval(gt, hostile)[0]
    record("ifeval: other scripts' look-alikes", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(gt, plain)[0] == 1.0, plain


def test_honest_answers_in_those_scripts_keep_their_verdicts() -> None:
    """Russian and Greek answers are read as written wherever nothing is forbidden: a
    Russian answer is still Russian to ``response_language``; neither holds an English
    forbidden word; and a Cyrillic look-alike does not count towards "at least" (it is not the word
    as shown). A letter under a cedilla (``ç``) is no comma. Two Russian responses that
    differ in what they say still differ."""
    russian = "\u042f \u043b\u044e\u0431\u043b\u044e \u043c\u043e\u0440\u0435 \u0438 \u0441\u043e\u043b\u043d\u0446\u0435."
    assert check_ifeval(instruction("language:response_language", language="ru"), russian)[0] == 1.0
    assert check_ifeval(LOVE, russian)[0] == 1.0
    greek = "\u0397 \u03b8\u03ac\u03bb\u03b1\u03c3\u03c3\u03b1 \u03b5\u03af\u03bd\u03b1\u03b9 \u03bc\u03c0\u03bb\u03b5."
    assert check_ifeval(LOVE, greek)[0] == 1.0
    many_sea = instruction("keywords:frequency", keyword="sea", frequency=2, relation="at least")
    assert check_ifeval(many_sea, "The sea. The s\u0435a.")[0] == 0.0
    assert check_ifeval(NO_COMMA, "Gar\u00e7on and fa\u00e7ade.")[0] == 1.0
    two_russian = "\u041a\u043e\u0442 \u043c\u0430\u043b. ****** \u041f\u0451\u0441 \u0432\u0435\u043b\u0438\u043a."
    assert check_ifeval(TWO, two_russian)[0] == 1.0
