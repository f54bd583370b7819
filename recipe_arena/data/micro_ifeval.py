"""Instruction-following prompts with 1-3 checkable constraints (IFEval ids and kwargs).

Every constraint uses an instruction id that lm-eval's IFEval checkers implement, with
kwargs in their format, so the real checkers score the micro world. A prompt asks for
two sentences about a topic; the reference answer applies each constraint in turn.
``change_case:english_capital`` is left out: its checker asks langdetect for English,
and langdetect calls short all-capital sentences German or Vietnamese.
"""

from __future__ import annotations

import random

from recipe_arena.data.micro_problem import Problem
from recipe_arena.data.schema import Effort

_TOPICS = {
    "the sea": "The sea is big, blue and deep. Fish live in it.",
    "the sun": "The sun is hot and bright. It gives us light.",
    "rain": "Rain falls from grey clouds. It makes the grass wet.",
    "a cat": "A cat is a small, soft animal. It likes to sleep.",
    "a dog": "A dog is a loyal friend. It likes to run and play.",
    "trees": "Trees are tall and green. They give us shade.",
    "the moon": "The moon shines at night. It moves around the earth.",
    "snow": "Snow is cold and white. Children play in it.",
    "bread": "Bread is made from flour, water and salt. People eat it.",
    "music": "Music is made of sound and rhythm. People dance to it.",
    "books": "Books are full of stories. Reading them is fun.",
    "the city": "The city is busy and loud. Many people live there.",
    "a garden": "A garden has flowers, plants and trees. Bees visit it.",
    "winter": "Winter is the coldest season. The days are short.",
    "birds": "Birds have wings and feathers. Most of them can fly.",
    "coffee": "Coffee is a hot, dark drink. People drink it in the morning.",
}
_KEYWORDS = ["happy", "blue", "light", "friend", "water", "quiet", "warm", "small"]
_END_PHRASES = ["Any other questions?", "That is all.", "The end."]

# id -> sentence shown to the user; kwargs are drawn in _kwargs.
_SENTENCES = {
    "change_case:english_lowercase": "Use only lowercase letters.",
    "keywords:existence": "Include the word {keyword}.",
    "punctuation:no_comma": "Do not use any commas.",
    "startend:end_checker": "End your answer with the exact phrase: {end_phrase}",
    "startend:quotation": "Wrap your whole answer in double quotes.",
    "detectable_format:title": "Give it a title in double angular brackets, like <<title>>.",
    "detectable_content:postscript": "Add a postscript starting with P.S.",
}


def _kwargs(rng: random.Random, iid: str) -> dict[str, object]:
    if iid == "keywords:existence":
        return {"keywords": [rng.choice(_KEYWORDS)]}
    if iid == "startend:end_checker":
        return {"end_phrase": rng.choice(_END_PHRASES)}
    if iid == "detectable_content:postscript":
        return {"postscript_marker": "P.S."}
    return {}


def _apply(topic: str, ids: list[str], kwargs: list[dict[str, object]]) -> tuple[str, str]:
    """The reference answer and a thought listing the constraints, applied in an order
    that keeps every earlier one satisfied (quotes last, case changes after additions)."""
    text, notes = _TOPICS[topic], []
    by_id = dict(zip(ids, kwargs, strict=True))
    if "keywords:existence" in by_id:
        words = by_id["keywords:existence"]["keywords"]
        assert isinstance(words, list)
        word = str(words[0])
        text += f" It is {word}."
        notes.append(f"use {word}")
    if "detectable_format:title" in by_id:
        text = f"<<{topic.title()}>>\n{text}"
        notes.append("title")
    if "detectable_content:postscript" in by_id:
        text += "\nP.S. Thanks."
        notes.append("P.S.")
    if "startend:end_checker" in by_id:
        text += f" {by_id['startend:end_checker']['end_phrase']}"
        notes.append("end phrase")
    if "punctuation:no_comma" in by_id:
        text = text.replace(",", "")
        notes.append("no commas")
    if "change_case:english_lowercase" in by_id:
        text = text.lower()
        notes.append("lowercase")
    if "startend:quotation" in by_id:
        text = f'"{text}"'
        notes.append("quotes")
    return text, ", ".join(notes)


def sample_ifeval(rng: random.Random) -> Problem:
    topic = rng.choice(sorted(_TOPICS))
    count = rng.choice([1, 1, 2, 2, 3])
    ids = sorted(rng.sample(sorted(_SENTENCES), count))
    kwargs = [_kwargs(rng, i) for i in ids]
    fill = {
        "keyword": (
            kwargs[ids.index("keywords:existence")]["keywords"][0]  # type: ignore[index]
            if "keywords:existence" in ids
            else ""
        ),
        "end_phrase": (
            kwargs[ids.index("startend:end_checker")]["end_phrase"]
            if "startend:end_checker" in ids
            else ""
        ),
    }
    sentences = [_SENTENCES[i].format(**fill) for i in ids]
    prompt = f"Write two sentences about {topic}. " + " ".join(sentences)
    answer, thought = _apply(topic, ids, kwargs)
    effort: Effort = ("low", "medium", "high")[count - 1]
    canonical = f"{topic}|" + "|".join(
        f"{i}{sorted(kw.items())}" for i, kw in zip(ids, kwargs, strict=True)
    )
    return Problem(
        canonical, prompt, {"instruction_id_list": ids, "kwargs": kwargs}, answer, thought, effort
    )
