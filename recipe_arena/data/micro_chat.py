"""Short chat questions with reference answers: opposites, colours, plurals, counting.

Plurals and counting follow rules, so held-out questions are answerable by a model
that learned the rule; opposites and colours are facts, judged against the reference.
Every reference answer is one sentence that ends with the answer word (``The opposite
of hot is cold.``), so whether an answer is right can be decided exactly
(``is_right``): that labels the verdicts the micro judge learns from.
"""

from __future__ import annotations

import random
import re

from recipe_arena.data.micro_problem import Problem

_OPPOSITES = {
    "hot": "cold",
    "big": "small",
    "up": "down",
    "fast": "slow",
    "happy": "sad",
    "light": "dark",
    "open": "closed",
    "old": "new",
    "tall": "short",
    "full": "empty",
    "early": "late",
    "hard": "soft",
    "high": "low",
    "wet": "dry",
    "rich": "poor",
    "strong": "weak",
    "day": "night",
    "left": "right",
    "in": "out",
    "win": "lose",
    "push": "pull",
    "near": "far",
    "thick": "thin",
    "loud": "quiet",
    "first": "last",
}
_COLOURS = {
    "grass": "green",
    "the sky": "blue",
    "snow": "white",
    "coal": "black",
    "a banana": "yellow",
    "a tomato": "red",
    "an orange": "orange",
    "milk": "white",
    "a lemon": "yellow",
    "blood": "red",
    "a leaf": "green",
    "the sea": "blue",
    "chocolate": "brown",
    "a crow": "black",
}
_NOUNS = [
    "cat",
    "dog",
    "tree",
    "book",
    "car",
    "bird",
    "cup",
    "hat",
    "pen",
    "door",
    "apple",
    "egg",
    "bag",
    "ship",
    "lamp",
    "star",
    "road",
    "song",
    "cake",
    "chair",
    "bus",
    "box",
    "fox",
    "dish",
    "glass",
    "class",
    "baby",
    "city",
    "story",
    "lady",
    "key",
    "day",
    "toy",
    "boy",
]


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "sh", "ch")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def sample_chat(rng: random.Random) -> Problem:
    kind = rng.choice(["opposite", "colour", "plural", "plural", "next", "letters"])
    if kind == "opposite":
        a, b = rng.choice(sorted(_OPPOSITES.items()))
        if rng.random() < 0.5:
            a, b = b, a
        return Problem(
            f"opp|{a}",
            f"What is the opposite of {a}?",
            b,
            f"The opposite of {a} is {b}.",
            f"{a} -> {b}",
            "low",
        )
    if kind == "colour":
        thing, colour = rng.choice(sorted(_COLOURS.items()))
        return Problem(
            f"col|{thing}",
            f"What colour is {thing}?",
            colour,
            f"{thing[0].upper() + thing[1:]} is {colour}.",
            f"{thing}: {colour}",
            "low",
        )
    if kind == "plural":
        noun = rng.choice(_NOUNS)
        p = _plural(noun)
        return Problem(
            f"plural|{noun}",
            f"What is the plural of {noun}?",
            p,
            f"The plural of {noun} is {p}.",
            f"{noun} + {p[len(noun) - (noun[-1] == 'y') :]}",
            "medium",
        )
    if kind == "next":
        n = rng.randint(1, 999)
        return Problem(
            f"next|{n}",
            f"What number comes after {n}?",
            str(n + 1),
            f"The number after {n} is {n + 1}.",
            f"{n}+1 = {n + 1}",
            "low",
        )
    noun = rng.choice(_NOUNS)
    return Problem(
        f"letters|{noun}",
        f"How many letters are in the word {noun}?",
        str(len(noun)),
        f"The number of letters in {noun} is {len(noun)}.",
        " ".join(noun),
        "medium",
    )


MAX_NUMBER = 1010
"""The largest number a chat answer or a judge verdict on one normally holds: the
number after 999 plus the largest distractor offset (``micro_verdicts``)."""


def vocabulary() -> list[str]:
    """Every word of the chat world's questions and reference answers (the lists
    above, the plurals, the numbers 0..``MAX_NUMBER``, the words of the sentence frames),
    sorted: what a word-level vocabulary learned from its text would hold."""
    words = {*_OPPOSITES, *_OPPOSITES.values(), *_COLOURS.values(), *_NOUNS}
    words |= {_plural(n) for n in _NOUNS} | {str(n) for n in range(MAX_NUMBER + 1)}
    rng = random.Random("chat-vocabulary")
    for _ in range(2000):
        p = sample_chat(rng)
        words |= set(re.findall(r"[A-Za-z0-9]+", f"{p.prompt} {p.answer}"))
    return sorted(words)


def final_word(answer: str) -> str | None:
    """The last run of letters or digits in ``answer``, lower-cased (None if there is none)."""
    words = re.findall(r"[A-Za-z0-9]+", answer)
    return words[-1].lower() if words else None


def is_right(ground_truth: str, answer: str) -> bool:
    """The exact label of a chat answer: its final word is the reference word
    (``Grass is green.`` for ``green``: right; ``Grass is green or red.``: wrong)."""
    return final_word(answer) == ground_truth.lower()
