"""IFEval answers that hide a forbidden word or a counted letter under diacritics drawn on
its letters (``lo\\u0334ve``, ``lọve``, ``löve``), and answers whose lines or paragraphs
are parted by line breaks other than ``\\n`` (the line separator U+2028, the paragraph
separator U+2029, next line U+0085, a carriage return), and answers whose sentences end
in a Sentence_Terminal of another script that no list named (the Javanese pada lungsi
``꧉``): each shows a reader what the instruction forbids or a count it does not ask
for, and each scored 1 before. Scored by
lm-eval's real checkers through ``check_ifeval``, and through the real scorer and its
verifier workers, beside plain answers that follow the instruction (1)."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.ifeval import check_ifeval
from tests.hostile_tally import record
from tests.ifeval_workers import scored_by_workers
from tests.test_ifeval_other_scripts import (
    FEW_CAPS,
    FEW_SEA,
    FEW_SENTENCES,
    LOVE,
    LOWER,
    TWO,
    instruction,
)

FEW_E = instruction(
    "keywords:letter_frequency", letter="e", let_frequency=3, let_relation="less than"
)
END = instruction("startend:end_checker", end_phrase="The end.")
TITLE = instruction("detectable_format:title")
HIGHLIGHTS = instruction("detectable_format:number_highlighted_sections", num_highlights=2)
TWO_BULLETS = instruction("detectable_format:number_bullet_lists", num_bullets=2)
SECOND_STARTS_DOG = instruction(
    "length_constraints:nth_paragraph_first_word",
    num_paragraphs=2,
    nth_paragraph=2,
    first_word="dog",
)

HOSTILE = [
    # (instruction, hostile answer, plain answer that follows it)
    (LOVE, "I lo\u0334ve the sea.", "I like the sea."),  # combining tilde overlay on o
    (LOVE, "I lo\u0323ve the sea.", "I like the sea."),  # dot below: NFKC makes it one letter
    (LOVE, "I l\u00f6ve the sea.", "I like the sea."),  # o with diaeresis, precomposed
    (LOVE, "I l\u043e\u0301ve the sea.", "I like the sea."),  # a Cyrillic o under an acute
    (FEW_SEA, "The sea. The se\u0332a. The s\u00e9a.", "The sea is big."),  # three "sea"
    (FEW_E, "Th\u00e9 s\u00eaa is d\u00ebep.", "A big sky."),  # five e, two plain
    (TWO, "A cat is small. ****** A cat is smal\u0301l.", "A cat. ****** A dog."),
    (TWO_BULLETS, "- a\u2028- b\u2028- c\n- d", "- a\n- b"),  # four bullets drawn
    (TWO_BULLETS, "- a\x85- b\x85- c\n- d", "- a\n- b"),  # next line
    (TWO_BULLETS, "* a\r* b\r* c\n* d", "* a\n* b"),  # carriage returns
    (TWO_BULLETS, "- a\n- b\n\u0301- c\n \u0301* d", "- a\n- b"),  # accents on nothing
    (SECOND_STARTS_DOG, "cat runs\u2029bird flies\n\ndog runs", "cat runs\n\ndog runs"),
    (LOVE, "I \ua4e1\ua4f3\ua4e6\ua4f0 the sea.", "I like the sea."),  # Lisu LOVE
    (LOWER, "the sea is \ua4d0\ua4f2\ua4d6 and blue. fish live in it.", "the sea is big."),
    (FEW_CAPS, "The sea is \ua4d0\ua4f2\ua4d6 and \ua4d3\ua4f0\ua4f0\ua4d1.", "The sea is BIG."),
    (TITLE, "<<\u0301>> The sea is big.", "<<The S\u00e9a>> The sea is big."),
    (HIGHLIGHTS, "*\u0301* and **\u0301** sea", "*sea* and *big* sea"),
    (END, "Hi.\n\u202e.dne ehT\txyz", "Hi.\n\u202e.dne ehT"),  # drawn "The end.", tab, "zyx"
    (END, "Hi.\n\u202e.dne ehT\x0bxyz", "Hi. The end."),  # "zyx" on a line of its own
]


@pytest.mark.parametrize(("gt", "hostile", "plain"), HOSTILE)
def test_marks_and_line_breaks_do_not_hide_what_the_instruction_counts(
    gt: dict[str, object], hostile: str, plain: str
) -> None:
    """Each hostile answer breaks its instruction as drawn: "love" under a mark is
    "love"; "sea" is there three times (cap: less than 2) and "e" five times (cap: less
    than 3); ``- a`` to ``- d`` are four bullets drawn on four lines for a count of
    exactly 2 (the checker saw two lines, or two bullets, the others opened by a mark
    drawn on nothing), and the paragraph separator makes three paragraphs where exactly
    two are asked for; two responses that differ by an acute
    on one letter are one response drawn twice; Lisu letters drawn as capitals show
    "LOVE", "BIG" and "DEEP"; a title or highlight of a lone accent
    holds nothing; an override drawn across a tab or a
    vertical tab ends with "zyx", as rule L1 of the bidirectional algorithm draws the
    runs on either side of a segment separator apart. Expected 0 (before: 1, the marks
    made other letters or stood beside theirs, the checkers part lines at ``\\n`` only,
    and the override was read reversed whole, "zyx", tab, "The end."). The plain answer
    scores 1."""
    score, reason = check_ifeval(gt, hostile)
    record("ifeval: diacritics and line breaks", 1, int(score == 0.0))
    assert score == 0.0, (hostile, reason)
    assert check_ifeval(gt, plain)[0] == 1.0, plain


def test_honest_answers_keep_their_verdicts() -> None:
    """Diacritics are read off only where a word is forbidden or a count capped:
    ``café`` still holds the required "café" and no "cafe" is required by it; a Russian
    ``й`` is no Latin letter and keeps its mark; "at least 2 sea" still needs two "sea"
    as shown. A Windows line end (``\\r\\n``) is one break: two bullets so written are
    two, and two paragraphs parted by ``\\r\\n\\r\\n`` are two; a prompt to repeat
    written with ``\\r\\n`` is repeated by its faithful copy."""
    assert (
        check_ifeval(instruction("keywords:existence", keywords=["caf\u00e9"]), "Un caf\u00e9.")[0]
        == 1
    )
    assert (
        check_ifeval(instruction("keywords:existence", keywords=["cafe"]), "Un caf\u00e9.")[0] == 0
    )
    russian = "\u041c\u043e\u0439 \u0434\u043e\u043c."  # "Мой дом."
    forbid_moi = instruction("keywords:forbidden_words", forbidden_words=["\u043c\u043e\u0438"])
    assert check_ifeval(forbid_moi, russian)[0] == 1.0
    many_sea = instruction("keywords:frequency", keyword="sea", frequency=2, relation="at least")
    assert check_ifeval(many_sea, "The sea. The s\u00e9a.")[0] == 0.0
    assert check_ifeval(TWO_BULLETS, "- a\r\n- b\r\n")[0] == 1.0
    assert check_ifeval(SECOND_STARTS_DOG, "cat runs\r\n\r\ndog runs")[0] == 1.0
    repeat = instruction(
        "combination:repeat_prompt", prompt_to_repeat="Write a poem.\r\nAbout the sea."
    )
    assert check_ifeval(repeat, "Write a poem.\r\nAbout the sea. It is big.")[0] == 1.0


def test_the_scorer_refuses_them_through_its_workers() -> None:
    """The same answers scored as training scores them (``build_scorer``, the verifier
    pool's worker processes): every hostile answer 0, every plain one 1."""
    hostile, plain = scored_by_workers(HOSTILE, "Write about the sea.")
    assert hostile == [0.0] * len(HOSTILE)
    assert plain == [1.0] * len(HOSTILE)


TERMINALS = ["\u1c7f", "\ua9c9", "\u1b5f", "\uabeb", "\u1aa8", "\U00011a42"]
"""Sentence terminals of Unicode that no list named before: the Ol Chiki double mucaad,
the Javanese pada lungsi, the Balinese carik pareren, the Meetei Mayek cheikhei, the Tai
Tham kaan, the Zanabazar Square mark tsheg shad."""


@pytest.mark.parametrize("stop", TERMINALS)
def test_every_sentence_terminal_ends_a_sentence(stop: str) -> None:
    """Three sentences each ended by ``stop`` are three sentences: "less than 2" fails
    (0; before, NLTK saw one sentence and it scored 1). One sentence so ended passes."""
    three = f"The sea is big{stop} Fish live in it{stop} Boats sail on it{stop}"
    score = check_ifeval(FEW_SENTENCES, three)[0]
    record("ifeval: other scripts' full stops", 1, int(score == 0.0))
    assert score == 0.0, three
    assert check_ifeval(FEW_SENTENCES, f"The sea is big{stop}")[0] == 1.0


@pytest.mark.parametrize("mark", ["\u0301", "\u0323", "\u20e3"])
def test_a_mark_on_a_full_stop_does_not_join_sentences(mark: str) -> None:
    """Three sentences whose stops carry a combining mark (an acute, a dot below, the
    enclosing keycap) are three: "less than 2 sentences" fails (0; before, NLTK split
    none of them and it scored 1). A mark on a letter before the stop changes nothing:
    one sentence passes."""
    three = f"The sea is big.{mark} Fish live in it!{mark} Boats sail on it?{mark}"
    score = check_ifeval(FEW_SENTENCES, three)[0]
    record("ifeval: diacritics and line breaks", 1, int(score == 0.0))
    assert score == 0.0, three
    assert check_ifeval(FEW_SENTENCES, f"The sea is bi{mark}g.")[0] == 1.0


MANY_WORDS = instruction("length_constraints:number_words", num_words=20, relation="at least")


@pytest.mark.parametrize("mark", ["\u0301", "\u20dd", "\u0e31"])
def test_a_mark_on_no_letter_is_no_word(mark: str) -> None:
    """Four words and 20 combining marks each drawn on a space (an acute, the enclosing
    circle, the Thai mai han-akat) are four words: "at least 20 words" fails (0; before,
    each mark was a ``\\w`` run of its own, 24 words, and it scored 1). Twenty words that
    carry the mark on a letter are still 20 words: 1."""
    hostile = "The sea is big." + f" {mark}" * 20
    score = check_ifeval(MANY_WORDS, hostile)[0]
    record("ifeval: diacritics and line breaks", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(MANY_WORDS, " ".join([f"se{mark}a"] * 20))[0] == 1.0


def test_an_override_cut_by_tabs_is_read_in_linear_time() -> None:
    """125 nested right-to-left overrides, then a tab every 12 characters over 100,000
    characters: rule L1 puts each tab at level 0, so the line climbs from 0 to 125 and
    back at every tab. Read with its levels packed (an even gap of levels reverses
    nothing), the verdict takes about 0.4 s (unpacked, 8,000 x 125 nested runs took
    3.6 s of a verifier's 5 s deadline); 1.5 s is the bound here."""
    import time

    hostile = ("\u202e" * 125 + "abc def\tghi " * 8400)[:100_000]
    check_ifeval(END, "The end.")  # the checkers load once per process, not timed
    start = time.perf_counter()
    check_ifeval(END, hostile)
    assert time.perf_counter() - start < 1.5
