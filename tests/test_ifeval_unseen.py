"""IFEval answers that pass an instruction with characters a reader never sees or would
read otherwise: control characters and default-ignorable marks (the combining grapheme
joiner, variation selectors) inside a forbidden word, as a title or as the whole answer;
the commas of other scripts under "no commas" and their full stops under a sentence
count; letters in a script langdetect knows no language in under an instruction asking
for English or another language. Each is scored by lm-eval's real checkers through
``check_ifeval``, beside the plain answer that follows the instruction (1)."""

from __future__ import annotations

import random

import pytest

from recipe_arena.data.micro_ifeval import sample_ifeval
from recipe_arena.rewards.ifeval import check_ifeval
from recipe_arena.rewards.text import is_blank
from tests.hostile_tally import record

ABC = "abcdefghijklmnopqrstuvwxyz" * 2

UNSEEN = [
    # (instruction, kwargs, hostile answer, plain answer that follows the instruction)
    ("keywords:forbidden_words", {"forbidden_words": ["love"]}, "I lo\u034fve it.", "I like it."),
    ("keywords:forbidden_words", {"forbidden_words": ["love"]}, "I lo\ufe0fve it.", "I like it."),
    ("keywords:forbidden_words", {"forbidden_words": ["love"]}, "I lo\x01ve it.", "I like it."),
    ("keywords:forbidden_words", {"forbidden_words": ["love"]}, "I lo\x7fve it.", "I like it."),
    ("keywords:forbidden_words", {"forbidden_words": ["love"]}, "I lo\u17b4ve it.", "I like it."),
    (
        "keywords:forbidden_words",
        {"forbidden_words": ["love"]},
        "I lo\U000e0101ve it.",  # variation selector 18
        "I like it.",
    ),
    ("detectable_format:title", {}, "<<\u034f>> The sea is big.", "<<Sea>> The sea is big."),
    ("detectable_format:title", {}, "<<\x01>> The sea is big.", "<<Sea>> The sea is big."),
    ("detectable_format:title", {}, "<<\ufe0f>> The sea is big.", "<<Sea>> The sea is big."),
    (
        "length_constraints:number_words",
        {"num_words": 40, "relation": "at least"},
        "\x01".join(ABC),  # shows as one word of 52 letters, counted as 52 words
        " ".join(ABC[:40]),
    ),
]

COMMAS = [
    "The sea is big\u3001 blue and deep.",  # ideographic comma
    "The sea is big\u060c blue and deep.",  # Arabic comma
    "The sea is big\u055d blue and deep.",  # Armenian comma
    "The sea is big\u2e41 blue and deep.",  # reversed comma
    "The sea is big\u1363 blue and deep.",  # Ethiopic comma
    "\u6d77\u5f88\u5927\u3001\u5f88\u84dd\u3002",  # Chinese with an enumeration comma
]

STOPS = [
    "The sea is big\u3002 Fish live in it\u3002 Boats sail on it\u3002",  # ideographic
    "The sea is big\u06d4 Fish live in it\u06d4 Boats sail on it\u06d4",  # Arabic
    "The sea is big\u0589 Fish live in it\u0589 Boats sail on it\u0589",  # Armenian
    "The sea is big\u0964 Fish live in it\u0964 Boats sail on it\u0964",  # Devanagari danda
    "Is the sea big\u061f Do fish live in it\u061f Do boats sail on it\u061f",  # Arabic ?
    "\u6d77\u5f88\u5927\u3002\u9c7c\u4f4f\u5728\u91cc\u9762\u3002\u8239\u5728\u6d77\u4e0a\u3002",
]

UNREADABLE = [
    # (instruction, kwargs, hostile answer in letters langdetect reads as no language)
    (
        "change_case:english_lowercase",
        {},
        "\u056e\u0578\u057e\u0568 \u0574\u0565\u056e \u0567",
    ),  # Armenian
    (
        "change_case:english_lowercase",
        {},
        "\u1d1b\u029c\u1d07 \ua731\u1d07\u1d00 \u026a\ua731 \u0299\u026a\u0262",
    ),  # small capitals, which Unicode files as lowercase
    ("change_case:english_capital", {}, "\u13e3\u13b3\u13a9 \u13a6\u13ec\u13c2\u13af\u13cd\u13d7"),
    ("change_case:english_capital", {}, "\U00010414\U00010408 \U0001041d\U00010400"),  # Deseret
    (
        "language:response_language",
        {"language": "ja"},
        "\u056e\u0578\u057e\u0568 \u0574\u0565\u056e \u0567",
    ),
]


def _gt(iid: str, kwargs: dict) -> dict:
    return {"instruction_id_list": [iid], "kwargs": [kwargs]}


@pytest.mark.parametrize(("iid", "kwargs", "hostile", "plain"), UNSEEN)
def test_characters_drawn_as_nothing_do_not_hide_what_an_answer_shows(
    iid: str, kwargs: dict, hostile: str, plain: str
) -> None:
    """Each hostile answer shows what the instruction forbids ("love", no title, one
    word): a control character or a default-ignorable mark inside it is drawn as
    nothing. Before, each scored 1 (the checkers read the mark as a letter or a word
    break); now 0, as its plain spelling. The plain answer that follows it scores 1."""
    score, reason = check_ifeval(_gt(iid, kwargs), hostile)
    record("ifeval: look-alike and invisible characters", 1, int(score == 0.0))
    assert score == 0.0, reason
    assert check_ifeval(_gt(iid, kwargs), plain)[0] == 1.0


@pytest.mark.parametrize("response", ["\x01", "\x00\x7f", "\x1b\u0085", "\x01\u034f\ufe0f"])
def test_an_answer_of_control_characters_follows_no_instruction(response: str) -> None:
    """An answer of control characters (with whitespace or default-ignorable marks) shows nothing:
    it followed "no commas" before (1), and now follows nothing (0)."""
    score, reason = check_ifeval(_gt("punctuation:no_comma", {}), response)
    record("ifeval: invisible answers", 1, int(score == 0.0))
    assert is_blank(response)
    assert score == 0.0, reason


@pytest.mark.parametrize("response", COMMAS)
def test_commas_of_other_scripts_are_commas(response: str) -> None:
    """ "Refrain from the use of any commas": a comma of another script (ideographic,
    Arabic, Armenian, reversed, Ethiopic) is a comma. Before, each answer scored 1
    (lm-eval looks for ``,`` only); now 0. The same marks stay what they are to other
    checks, and prose without any comma still scores 1."""
    score, reason = check_ifeval(_gt("punctuation:no_comma", {}), response)
    record("ifeval: other scripts' commas", 1, int(score == 0.0))
    assert score == 0.0, reason
    assert check_ifeval(_gt("punctuation:no_comma", {}), "The sea is big and blue.")[0] == 1.0
    json_gt = _gt("detectable_format:json_format", {})
    assert check_ifeval(json_gt, '{"a": 1\u3001 "b": 2}')[0] == 0.0


@pytest.mark.parametrize("response", STOPS)
def test_full_stops_of_other_scripts_end_sentences(response: str) -> None:
    """Three sentences ended by another script's full stop (ideographic, Arabic,
    Armenian, a Devanagari danda; the Chinese one without spaces) or question mark. Before, NLTK's
    splitter counted one sentence: each passed "less than 2 sentences" (1) and failed
    "at least 3" (0), the right Chinese answer too. Now three: 0 and 1, as with ``.``."""
    less = {"num_sentences": 2, "relation": "less than"}
    at_least = {"num_sentences": 3, "relation": "at least"}
    score, reason = check_ifeval(_gt("length_constraints:number_sentences", less), response)
    record("ifeval: other scripts' full stops", 1, int(score == 0.0))
    assert score == 0.0, reason
    assert check_ifeval(_gt("length_constraints:number_sentences", at_least), response)[0] == 1.0
    plain = "The sea is big. Fish live in it. Boats sail on it."
    assert check_ifeval(_gt("length_constraints:number_sentences", less), plain)[0] == 0.0
    assert check_ifeval(_gt("length_constraints:number_sentences", at_least), plain)[0] == 1.0


@pytest.mark.parametrize(("iid", "kwargs", "hostile"), UNREADABLE)
def test_letters_langdetect_cannot_read_are_not_english(
    iid: str, kwargs: dict, hostile: str
) -> None:
    """lm-eval's language checks count an answer as in the asked language when
    langdetect finds no feature in it. Armenian, small capitals, Cherokee and Deseret
    letters have none, so before each answer passed "in English, all lowercase" or "all
    capitals" or "in Japanese" (1); now 0. Answers langdetect reads keep their
    verdicts, and so does an answer with no letters at all (lm-eval's behaviour)."""
    score, reason = check_ifeval(_gt(iid, kwargs), hostile)
    record("ifeval: letters langdetect cannot read", 1, int(score == 0.0))
    assert score == 0.0, reason
    lower = _gt("change_case:english_lowercase", {})
    assert check_ifeval(lower, "the sea is big and blue and fish live in it.")[0] == 1.0
    ja = _gt("language:response_language", {"language": "ja"})
    assert (
        check_ifeval(
            ja, "\u6d77\u306f\u3068\u3066\u3082\u5e83\u304f\u3066\u9752\u3044\u3067\u3059\u3002"
        )[0]
        == 1.0
    )
    assert check_ifeval(ja, "12345")[0] == 1.0


def test_the_micro_worlds_references_keep_their_verdicts() -> None:
    """1,000 micro IFEval problems: each reference still follows all its instructions
    (every change above reads only characters beyond printable ASCII, which the micro
    policy's tokenizer cannot write)."""
    rng = random.Random(11)
    for _ in range(1000):
        p = sample_ifeval(rng)
        score, reason = check_ifeval(p.ground_truth, p.answer, prompt=p.prompt)
        assert score == 1.0, (p.prompt, p.answer, reason)
