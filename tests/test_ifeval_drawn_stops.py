"""IFEval answers that end sentences with letters or digits of other scripts drawn as a
stop: the glottal stop ``ʔ`` and the Cherokee ``Ꭾ`` (drawn as ``?``), the Tifinagh
``ⵑ`` (drawn as ``!``), the Arabic-Indic zero ``٠`` (drawn as ``.``); and with stops
that no space follows. Scored by lm-eval's real checkers through ``check_ifeval``,
beside a plain answer that follows the instruction (1)."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.ifeval import check_ifeval
from tests.hostile_tally import record
from tests.test_ifeval_other_scripts import FEW_SENTENCES, instruction

STOPS = ["\u0294", "\u0241", "\u13ae", "\u2d51", "\u0660", "\u06f0"]


@pytest.mark.parametrize("stop", STOPS)
def test_a_letter_drawn_as_a_stop_after_a_latin_word_ends_a_sentence(stop: str) -> None:
    """``It is big? Fish live in it? Boats sail?`` drawn with ``stop`` for each ``?`` (or
    ``!``, ``.``): three sentences to a reader, one to NLTK's splitter, which ends none
    at a letter or a digit, so it passed "less than 2 sentences" (1). Expected 0; ``It
    is.`` passes."""
    hostile = f"It is big{stop} Fish live in it{stop} Boats sail{stop}"
    score = check_ifeval(FEW_SENTENCES, hostile)[0]
    record("ifeval: letters drawn as a stop", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(FEW_SENTENCES, "It is.")[0] == 1.0


def test_those_letters_in_their_own_scripts_keep_their_verdicts() -> None:
    """In their own scripts they are letters and digits and end nothing: Arabic-Indic
    numbers (``١٠ ٢٠ ٣٠``, 10 20 30) and Tifinagh words are one sentence, and so is a
    glottal stop inside a Latin word (``aʔa``); "at least 3 sentences" still wants
    three stops a reader sees."""
    assert check_ifeval(FEW_SENTENCES, "\u0661\u0660 \u0662\u0660 \u0663\u0660")[0] == 1.0
    assert check_ifeval(FEW_SENTENCES, "\u2d5c\u2d51 \u2d30\u2d51 \u2d62\u2d51")[0] == 1.0
    assert check_ifeval(FEW_SENTENCES, "A a\u0294a b\u0294b c\u0294c d.")[0] == 1.0
    three = instruction("length_constraints:number_sentences", num_sentences=3, relation="at least")
    assert check_ifeval(three, "It is big\u0294 Fish live in it\u0294 Boats sail\u0294")[0] == 1.0


@pytest.mark.parametrize("stop", [".", "!", "?"])
def test_a_stop_with_no_space_before_a_capitalised_word_ends_a_sentence(stop: str) -> None:
    """``It is big.Fish live in it.Boats sail.``: three sentences to a reader, one to
    NLTK's splitter (no space after the stop), so it passed "less than 2 sentences"
    (1). Expected 0; ``U.S.A.``, ``ASP.NET`` and ``3.5`` end no sentence (1)."""
    hostile = f"It is big{stop}Fish live in it{stop}Boats sail{stop}"
    score = check_ifeval(FEW_SENTENCES, hostile)[0]
    record("ifeval: letters drawn as a stop", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(FEW_SENTENCES, "I like the U.S.A. and ASP.NET, 3.5 times.")[0] == 1.0
