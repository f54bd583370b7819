"""Verdicts for the micro judge: chat answers, right and wrong, labelled exactly.

For a chat problem the generator knows the answer word, and ``micro_chat.is_right``
decides any answer exactly (its final word is the reference word or it is not). Each
``Verdict`` is one answer to one problem with that label, shown through the judge's own
prompt (``rewards.judge.judge_prompt``, the templates in ``rewards/templates/``), and
the reply a judge should give: the answer's final word, the right word, a mark of
whether they agree (two numbers get a mark per digit), and ``Score: 10`` or ``Score: 0``.

Answers are drawn so that about half are right: the reference sentence, the bare word,
or the word in another sentence; the wrong ones are what a small policy writes when it
errs: the reference sentence with another word of the same kind (another colour, a
wrong plural ending, a count off by one), the question's own word, another question's
answer, a sentence cut before its last word, or a right sentence with a word added.
Train verdicts come from train-split problems, held-out verdicts from held-out ones.
On train verdicts a share of the references can be swapped for another word of the same
kind (``swap_fraction``), labelled against the word shown: otherwise the question tells
the reference on every verdict, and a judge can fit them by recalling the facts instead
of reading the reference, which fails on held-out questions. Train verdicts can come
in pairs (``paired_verdicts``): one problem shown the same way with a right and a wrong
answer.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Literal

from recipe_arena.data.micro import Split, generate_examples
from recipe_arena.data.micro_chat import (
    _COLOURS,
    _NOUNS,
    _OPPOSITES,
    MAX_NUMBER,
    _plural,
    final_word,
    is_right,
)
from recipe_arena.data.schema import PromptRow, VerdictKind

RIGHT_REPLY, WRONG_REPLY = "Score: 10", "Score: 0"
NUMBER_WIDTH = 4
"""Digits a number is zero-padded to in the judge's reply: the chat world's numbers
(up to ``MAX_NUMBER`` plus a distractor's 10) have at most four."""
_WHOLE_NUMBER = re.compile(r"0|[1-9][0-9]*")
"""A whole number written without leading zeros: padding two of them keeps them equal
exactly when the words are (``is_right`` compares the words)."""
_WORDS = sorted({*_OPPOSITES, *_OPPOSITES.values()})
_COLOUR_WORDS = sorted(set(_COLOURS.values()) | {"pink", "grey", "purple"})


@dataclass(frozen=True)
class Verdict:
    row: PromptRow
    answer: str
    right: bool
    """``micro_chat.is_right(row.ground_truth, answer)``."""
    mode: Literal["reference", "open"]

    @property
    def reply(self) -> str:
        """The judge's reply: the answer's final word and the right word side by side,
        a mark, ``=`` where they agree and ``x`` where they differ, then the verdict
        (``cold / cold =. Score: 10``). Writing the two words first puts them next to
        each other, so the mark compares neighbours, and the score reads the mark rather
        than the question. Two whole numbers are written zero-padded to one width, then
        one mark per digit (``0941 / 0939 ==xx. Score: 0``): the judge reads numbers digit
        by digit, and each mark compares two digits a fixed distance back."""
        word = final_word(self.answer) or "none"
        reference = str(self.row.ground_truth).lower()
        verdict = RIGHT_REPLY if self.right else WRONG_REPLY
        if _WHOLE_NUMBER.fullmatch(word) and _WHOLE_NUMBER.fullmatch(reference):
            width = max(NUMBER_WIDTH, len(word), len(reference))
            a, b = word.zfill(width), reference.zfill(width)
            marks = "".join("=" if x == y else "x" for x, y in zip(a, b, strict=True))
            return f"{a} / {b} {marks}. {verdict}"
        return f"{word} / {reference} {'=' if word == reference else 'x'}. {verdict}"


_KINDS: tuple[tuple[str, VerdictKind], ...] = (
    ("What is the opposite", "opposite"),
    ("What colour", "colour"),
    ("What is the plural", "plural"),
    ("What number", "number"),
)
"""Opening words of each question frame of ``micro_chat.sample_chat`` and its kind."""


def question_kind(row: PromptRow) -> VerdictKind:
    """The kind of the row's question: opposite, colour, plural, number or letters."""
    q = row.prompt_text
    return next((kind for prefix, kind in _KINDS if q.startswith(prefix)), "letters")


def _distractor(rng: random.Random, row: PromptRow) -> str:
    """A wrong answer word of the same kind as the row's."""
    gt, q, kind = str(row.ground_truth), row.prompt_text, question_kind(row)
    if kind == "opposite":
        pool = [w for w in _WORDS if w != gt]
    elif kind == "colour":
        pool = [c for c in _COLOUR_WORDS if c != gt]
    elif kind == "plural":
        noun = q.removeprefix("What is the plural of ").removesuffix("?")
        pool = [noun, noun + "s", noun + "es", noun[:-1] + "ies", noun + "ies"]
        pool += [p + "s" for p in rng.sample(_NOUNS, 2)]
    else:  # a number: next, letters
        n = int(gt)
        pool = [str(n + d) for d in (-2, -1, 1, 2, 10) if n + d >= 0]
    pool = [w for w in pool if w.lower() != gt.lower()]
    return rng.choice(pool)


def _other_reference(rng: random.Random, row: PromptRow, reference: str) -> tuple[PromptRow, str]:
    """The row with another reference word of its kind (and the reference sentence
    ending in it): the question no longer tells the reference, so only the shown
    reference does."""
    gt, kind = str(row.ground_truth), question_kind(row)
    if kind == "opposite":
        pool = _WORDS
    elif kind == "colour":
        pool = sorted(set(_COLOURS.values()))
    elif kind == "plural":
        pool = [_plural(n) for n in _NOUNS]
    elif kind == "number":
        pool = [str(rng.randint(0, MAX_NUMBER)) for _ in range(3)]
    else:  # letters in a word
        pool = ["3", "4", "5"]
    word = rng.choice([w for w in pool if w != gt])
    swapped = row.model_copy(update={"ground_truth": word})
    return swapped, reference[: reference.rfind(gt)] + word + "."


def _wrong(rng: random.Random, row: PromptRow, reference: str, others: list[str]) -> str:
    gt = str(row.ground_truth)
    stem = reference[: reference.rfind(gt)]
    kind = rng.random()
    if kind < 0.55:
        return stem + _distractor(rng, row) + "."
    if kind < 0.7:
        return rng.choice(others)
    if kind < 0.8:
        return stem.rstrip()
    if kind < 0.9:
        return f"{stem}{gt} or {_distractor(rng, row)}."
    return _distractor(rng, row)


def _right(rng: random.Random, gt: str, reference: str) -> str:
    kind = rng.random()
    if kind < 0.6:
        return reference
    if kind < 0.8:
        return gt
    return f"It is {gt}."


def _problems(split: Split, n: int, seed: int) -> tuple[list[PromptRow], list[str]]:
    """The ``max(1, n // 2)`` chat problems the verdicts are drawn on, and each one's
    reference answer (the generator's response after its think block)."""
    examples = generate_examples("chat", split, max(1, n // 2), seed)
    return [e.row for e in examples], [e.response.split("</think>", 1)[1] for e in examples]


def generate_verdicts(
    split: Split,
    n: int,
    seed: int,
    open_fraction: float = 0.0,
    swap_fraction: float = 0.0,
    paired: bool = False,
) -> list[Verdict]:
    """``n`` verdicts on ``split`` chat problems, about half of them right; a share
    ``open_fraction`` uses the open-ended prompt (no reference shown), and a share
    ``swap_fraction`` of the reference ones shows another reference word of the same
    kind (``_other_reference``), labelled against the reference shown. ``paired``: see
    ``paired_verdicts``."""
    if paired:
        return paired_verdicts(split, n, seed, open_fraction, swap_fraction)
    rows, answers = _problems(split, n, seed)
    rng = random.Random(f"verdicts|{split}|{seed}")
    swap_rng = random.Random(f"swaps|{split}|{seed}")  # ``rng`` draws as without swaps
    out = []
    for i in range(n):
        k = i % len(rows)
        true_row, reference = rows[k], answers[k]
        row = true_row
        if swap_fraction > 0 and swap_rng.random() < swap_fraction:
            row, reference = _other_reference(swap_rng, row, reference)
        others = [a for a in rng.sample(answers, min(3, len(answers))) if a != reference]
        answer = (
            _right(rng, str(row.ground_truth), reference)
            if rng.random() < 0.5 or not others
            else _wrong(rng, row, reference, others)
        )
        mode: Literal["reference", "open"] = "open" if rng.random() < open_fraction else "reference"
        row = row if mode == "reference" else true_row  # no reference shown: the true label
        out.append(Verdict(row, answer, is_right(str(row.ground_truth), answer), mode))
    return out


def paired_verdicts(
    split: Split, n: int, seed: int, open_fraction: float = 0.0, swap_fraction: float = 0.0
) -> list[Verdict]:
    """``n // 2`` pairs of verdicts, each pair one problem shown the same way (template,
    reference, swapped or not) with a right answer drawn first and a wrong one second,
    so the two differ only in the answer: a judge trained on both in one batch is pushed
    to read the answer against the reference, since nothing else tells them apart. A
    share ``swap_fraction`` of the problems gets another reference (``_other_reference``)
    before the template is drawn; an open pair shows no reference and is labelled
    against the true one, so where its answers were drawn around a swapped reference
    both are wrong (an answer off the fact). Labels are ``is_right``'s throughout."""
    rows, answers = _problems(split, n, seed)
    rng = random.Random(f"verdicts|{split}|{seed}")
    out = []
    for k in range(n // 2):
        true_row, reference = rows[k], answers[k]
        row = true_row
        if rng.random() < swap_fraction:
            row, reference = _other_reference(rng, row, reference)
        mode: Literal["reference", "open"] = "open" if rng.random() < open_fraction else "reference"
        shown = row if mode == "reference" else true_row
        others = [a for a in rng.sample(answers, min(3, len(answers))) if a != reference]
        good = _right(rng, str(row.ground_truth), reference)
        bad = _wrong(rng, row, reference, others or [""])
        for answer in (good, bad):
            out.append(Verdict(shown, answer, is_right(str(shown.ground_truth), answer), mode))
    return out


RUBRIC_STEM = "1. The answer ends with "
"""The micro judge's rubric (``rubric_reply``) before the reference: one criterion, the
answer's final word, which is what ``micro_chat.is_right`` checks."""
WINNER = "Winner: "
"""The label of a game's verdict, which ``rewards.rubric.parse_winner`` reads."""


def rubric_reply(reference: str) -> str:
    """The rubric the micro judge writes for a question whose reference answer is
    ``reference`` (``1. The answer ends with cold.``): the reference copied into one
    criterion, so that the games read it from the rubric as verdicts read it from the
    reference answer."""
    return f"{RUBRIC_STEM}{reference.lower()}."


@dataclass(frozen=True)
class Game:
    """One game of the rubric tournament: two answers to one problem, compared under
    the rubric written from the reference shown (``row.ground_truth``)."""

    row: PromptRow
    first: str
    second: str

    @property
    def rubric(self) -> str:
        return rubric_reply(str(self.row.ground_truth))

    @property
    def winner(self) -> Literal["A", "B", "tie"]:
        """The ground-truth order: the right answer wins against a wrong one (``A`` the
        first, ``B`` the second); two right or two wrong answers tie."""
        a, b = (is_right(str(self.row.ground_truth), x) for x in (self.first, self.second))
        return "tie" if a == b else ("A" if a else "B")

    @property
    def reply(self) -> str:
        """Each answer's half verdict in turn, its final word, the rubric's word and the
        mark (``Verdict.reply`` without its score), then the winner: ``hot / cold x.
        cold / cold =. Winner: B``. The same copies and marks as a verdict, so a judge
        that learns one learns the other; the winner reads the two marks."""
        halves = [
            Verdict(self.row, x, is_right(str(self.row.ground_truth), x), "reference").reply.rsplit(
                " ", 2
            )[0]
            for x in (self.first, self.second)
        ]
        return f"{halves[0]} {halves[1]} {WINNER}{self.winner}"


def paired_games(split: Split, n: int, seed: int, swap_fraction: float = 0.0) -> list[Game]:
    """``n // 2`` pairs of games, each pair one problem's two answers in both orders
    (``a`` against ``b``, then ``b`` against ``a``), so that only the order tells the pair
    apart and a judge is pushed to read both answers rather than a position. In two
    pairs of three the answers are a right and a wrong one; in the third both are right
    or both wrong (a tie). A share ``swap_fraction`` of the problems shows another
    reference (``_other_reference``), labelled against it, as for verdicts."""
    rows, answers = _problems(split, n, seed)
    rng = random.Random(f"games|{split}|{seed}")
    out = []
    for k in range(n // 2):
        row, reference = rows[k], answers[k]
        if rng.random() < swap_fraction:
            row, reference = _other_reference(rng, row, reference)
        gt = str(row.ground_truth)
        others = [a for a in rng.sample(answers, min(3, len(answers))) if a != reference]
        kind = rng.random()
        if kind < 2 / 3:
            a, b = _right(rng, gt, reference), _wrong(rng, row, reference, others or [""])
            if rng.random() < 0.5:
                a, b = b, a
        elif kind < 5 / 6:
            a, b = _right(rng, gt, reference), _right(rng, gt, reference)
        else:
            a, b = (_wrong(rng, row, reference, others or [""]) for _ in range(2))
        out += [Game(row, a, b), Game(row, b, a)]
    return out
