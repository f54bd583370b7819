"""IFEval answers that break an instruction in what they show while the checker reads
other characters: a forbidden word split by a zero-width space or a soft hyphen or
written in fullwidth letters, commas drawn by look-alikes, words joined by a Hangul
filler, sentences ended by a one-dot leader. Each is scored by lm-eval's real checkers
through ``check_ifeval``; each test also scores the plain answer that follows the
instruction (1) and the plain answer that breaks it (0)."""

from __future__ import annotations

import random

import pytest

from recipe_arena.data.micro_ifeval import sample_ifeval
from recipe_arena.rewards.ifeval import check_ifeval
from recipe_arena.rewards.text import shown_text
from tests.hostile_tally import record

SEA = "The sea is big and blue and deep and fish live in it all day long"
LONG = " ".join([SEA] * 4)  # 64 words

LOOKALIKES = [
    # (instruction, kwargs, hostile answer, plain answer that follows the instruction)
    (
        "keywords:forbidden_words",
        {"forbidden_words": ["love"]},
        "I lo\u200bve the sea.",  # zero-width space inside "love"
        "I like the sea.",
    ),
    (
        "keywords:forbidden_words",
        {"forbidden_words": ["love"]},
        "I lo\u00adve the sea.",  # soft hyphen, drawn only at a line break
        "I like the sea.",
    ),
    (
        "keywords:forbidden_words",
        {"forbidden_words": ["love"]},
        "I \uff4c\uff4f\uff56\uff45 the sea.",  # fullwidth l o v e
        "I like the sea.",
    ),
    (
        "punctuation:no_comma",
        {},
        "The sea is big\u201a blue and deep.",  # single low-9 quotation mark
        "The sea is big and blue and deep.",
    ),
    (
        "punctuation:no_comma",
        {},
        "The sea is big\uff0c blue and deep.",  # fullwidth comma
        "The sea is big and blue and deep.",
    ),
    (
        "length_constraints:number_words",
        {"num_words": 20, "relation": "less than"},
        LONG.replace(" ", "\u3164"),  # 64 words joined by a Hangul filler: one \w+ run
        "The sea is big and blue.",
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 2, "relation": "less than"},
        "The sea is big\u2024 Fish live in it\u2024 Boats sail on it\u2024",  # one-dot leader
        "The sea is big.",
    ),
    (
        "keywords:frequency",
        {"keyword": "sea", "frequency": 2, "relation": "less than"},
        "The se\u200ba is big. The se\u200ba is deep. The se\u200ba is blue.",
        "The sea is big and deep and blue.",
    ),
    (
        "detectable_format:title",
        {},
        "<<\u200b>> The sea is big.",  # a title that shows nothing
        "<<The Sea>> The sea is big.",
    ),
]


def _gt(iid: str, kwargs: dict) -> dict:
    return {"instruction_id_list": [iid], "kwargs": [kwargs]}


@pytest.mark.parametrize(("iid", "kwargs", "hostile", "plain"), LOOKALIKES)
def test_an_answer_breaking_an_instruction_with_lookalikes_scores_0(
    iid: str, kwargs: dict, hostile: str, plain: str
) -> None:
    """The hostile answer shows what the instruction forbids (the word, a comma, 64
    words, three sentences, three "sea", an empty title); read as shown it breaks the
    instruction, as its plain spelling does. The plain answer that follows it scores 1."""
    score, reason = check_ifeval(_gt(iid, kwargs), hostile)
    record("ifeval: look-alike and invisible characters", 1, int(score == 0.0))
    assert score == 0.0, reason
    assert check_ifeval(_gt(iid, kwargs), shown_text(hostile))[0] == 0.0
    assert check_ifeval(_gt(iid, kwargs), plain)[0] == 1.0


def test_shown_text_keeps_what_a_reader_sees() -> None:
    """Folding leaves ordinary text, accents and other scripts as they are, keeps the
    ellipsis (``...`` would count as more sentences), and spells a zero-width space as
    nothing and a Hangul filler as a space."""
    for text in (
        "Caf\u00e9 na\u00efve, \u00fcber.",
        "\u6d77\u306f\u5e83\u3044\u3002",
        "Wait\u2026 what?",
    ):
        assert shown_text(text) == text
    assert shown_text("lo\u200bve\u3164sea") == "love sea"


def test_the_micro_worlds_references_still_follow_their_instructions() -> None:
    """500 micro IFEval problems: each reference answer follows all its instructions
    with the folding as without it."""
    rng = random.Random(3)
    for _ in range(500):
        p = sample_ifeval(rng)
        score, reason = check_ifeval(p.ground_truth, p.answer, prompt=p.prompt)
        assert score == 1.0, (p.prompt, p.answer, reason)
