"""Rubric tournament (Kimi K3 style group reward for open-ended prompts).

The judge first writes a rubric for the prompt (from the prompt and its reference answer
when the row has one and the judge's mode allows it, as ``judge_prompt`` chooses its
template: ``rubric_prompt``), then compares the group's responses pairwise under that
rubric (``game_prompt``). Every pair is judged in both orders (A/B and B/A) to
cancel position bias. Reward of response i = points_i / games_i with win = 1,
tie = 1/2, loss or unparsable verdict = 0: a win rate in [0, 1]. A game the judge
could not read because one answer is too long for its context, alone or beside an
answer as long as the other, is won by the other (``_too_long``), as a verdict on such
an answer is a judged 0.

Cost: 'all_pairs' judges G(G-1) ordered pairs (quadratic in G); 'round_robin' lets
each response meet ``k`` neighbours (i+1..i+k mod G), about G*k ordered pairs.

Deviations from the report: the report's tournament details (rubric prompts, how
ties and unparsable verdicts count) are not public; the choices above are ours.
An empty answer scores 0 whatever the judge says.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.judge import (
    Chat,
    Judge,
    judged_answer,
    labels,
    reference,
    template,
    uncut,
)
from recipe_arena.rewards.text import RewardResult, is_blank

FALLBACK_RUBRIC = (
    "1. The answer is correct.\n2. It answers the question asked.\n3. It is clear and concise."
)
_WINNER_RE = re.compile(
    r"(?<![a-z])winner(?:(?=[\s:=*])|(?<!\dwinner))\s*[:=]?\s*\**\s*"
    r"(an?[ \t]+(?:tie|draw)(?![\w-])|A|B|tie)\b",
    re.IGNORECASE,
)
"""A game's verdict label: "Winner: B". The label is a word of its own: a word that ends
in it ("breadwinner a", "prizewinner B", in a reply's account of an answer after its
verdict) would otherwise be read as the last verdict. After a digit it is read only with
a space, ``:``, ``=`` or ``*`` before its verdict: a judge's copy of an answer's last
word ``0000winnera``, at the start of a reply cut at its token cap before its own
label, won the game for that answer (the micro judge writes ``706010Winner: B`` too).
A tie worded with an article (``Winner: a tie``, ``Winner: a draw``, ``Winner: A tie
between A and B``) is a tie, not the article read as answer A; ``a tie-breaker`` or
``a tied`` after the label leaves ``a`` the verdict, as before."""


GAME_TOKENS_FACTOR = 2
"""A game's reply may take this many times ``judge_max_new_tokens``: it judges two
answers where a verdict judges one (the micro judge writes a verdict's copies and marks
for each, ``data.micro_verdicts.Game.reply``)."""


def rubric_prompt(row: PromptRow, mode: str = "auto") -> Chat:
    """The judge's prompt to write a rubric for ``row``: the question and its reference
    answer (``rubric_write_reference``) when ``mode`` is 'reference', or 'auto' and the
    row has a reference; else the question alone (``rubric_write``)."""
    if mode == "reference" or (mode == "auto" and reference(row) is not None):
        text = template("rubric_write_reference").format(
            prompt=row.prompt_text, reference=str(row.ground_truth or "")
        )
    else:
        text = template("rubric_write").format(prompt=row.prompt_text)
    return [{"role": "user", "content": text}]


def game_prompt(row: PromptRow, rubric: str, first: str, second: str) -> Chat:
    """The judge's prompt to compare two answers (already cut to what is judged) under
    ``rubric``: ``first`` is answer A, ``second`` answer B."""
    text = template("rubric_compare").format(
        prompt=row.prompt_text, rubric=rubric, first=first, second=second
    )
    return [{"role": "user", "content": text}]


def pair_schedule(g: int, schedule: str = "all_pairs", opponents: int = 2) -> list[tuple[int, int]]:
    """Unordered pairs (i < j) to compare. all_pairs: G(G-1)/2; round_robin: i meets
    i+1..i+k (mod G), duplicates removed."""
    if schedule == "all_pairs":
        return [(i, j) for i in range(g) for j in range(i + 1, g)]
    if schedule == "round_robin":
        pairs = {tuple(sorted((i, (i + d) % g))) for i in range(g) for d in range(1, opponents + 1)}
        return sorted(p for p in pairs if p[0] != p[1])  # type: ignore[misc]
    raise ValueError(f"tournament schedule {schedule!r} not allowed; use all_pairs or round_robin")


def parse_winner(text: str | None) -> str | None:
    """'Winner: A' -> 'A', 'B', 'tie' ('Winner: a tie' and 'Winner: a draw' too); None
    if absent."""
    if text is None:
        return None
    found = labels(_WINNER_RE, text, "")
    if not found:
        return None
    return "tie" if found[-1].lower() not in ("a", "b") else found[-1].upper()


def win_rates(g: int, games: Sequence[tuple[int, int, str | None]]) -> list[float]:
    """games: (first, second, verdict) with verdict 'A' (first wins), 'B', 'tie' or None.
    Returns points / games per response (0 for a response that played no game)."""
    points, played = [0.0] * g, [0] * g
    for first, second, verdict in games:
        played[first] += 1
        played[second] += 1
        if verdict == "A":
            points[first] += 1.0
        elif verdict == "B":
            points[second] += 1.0
        elif verdict == "tie":
            points[first] += 0.5
            points[second] += 0.5
    return [p / n if n else 0.0 for p, n in zip(points, played, strict=True)]


def _too_long(judge: Judge, row: PromptRow, rubric: str, first: str, second: str) -> str | None:
    """The winner of a game the judge could not read because one answer is too long
    for its context: the game fits with that answer left empty and not with the other
    left empty ('B' when ``first`` is too long, 'A' when ``second`` is). When both fit
    alone but not together, the answer too long to be read beside one as long as
    itself loses to the one that is not (a game of two copies of it does not fit, a
    game of two copies of the other does). None when both alone or both beside
    themselves overflow it, the game fits (it failed otherwise), or the judge cannot
    tell (``Judge._answer_too_long`` for one answer). Why: a game with no verdict is
    lost by both answers, so an answer made too long to read, alone or beside another,
    cost its opponent the games it played against it while scoring 0 itself, as a
    short wrong answer does; under mean-centred advantages the long one was then pushed
    down less."""
    fits = getattr(judge.gen, "fits", None)
    if fits is None:
        return None
    first_fits = bool(fits(game_prompt(row, rubric, first, "")))
    second_fits = bool(fits(game_prompt(row, rubric, "", second)))
    if first_fits != second_fits:
        return "A" if first_fits else "B"
    if not first_fits or fits(game_prompt(row, rubric, first, second)):
        return None  # both too long alone, or a failure that was not the game's length
    first_fits = bool(fits(game_prompt(row, rubric, first, first)))
    second_fits = bool(fits(game_prompt(row, rubric, second, second)))
    if first_fits == second_fits:
        return None
    return "A" if first_fits else "B"


def tournament(
    judge: Judge, row: PromptRow, responses: Sequence[str], cfg: Any
) -> tuple[list[RewardResult], Counter[str]]:
    """Rubric, then both-order pairwise comparisons; (results, metric counts): the
    tournaments, their games, the games parsed and unparsable, and the tournaments
    whose win rates differ (``chat/tournament_varied``: groups with a learning signal)."""
    counts: Counter[str] = Counter({"chat/tournaments": 1})
    g = len(responses)
    answers = [judged_answer(r) for r in responses]
    rubric = uncut(  # a rubric may run to its cap
        judge.gen.generate(
            [rubric_prompt(row, judge.mode)],
            max_new_tokens=cfg.rubric_max_new_tokens,
        )[0]
    )
    if not rubric or not rubric.strip():
        counts["chat/rubric_failed"] += 1
        rubric = FALLBACK_RUBRIC
    ordered = [
        (i, j) for i, j in pair_schedule(g, cfg.tournament_schedule, cfg.tournament_opponents)
    ]
    ordered += [(j, i) for i, j in ordered]
    prompts = [game_prompt(row, rubric, answers[a], answers[b]) for a, b in ordered]
    replies = (
        judge.gen.generate(prompts, max_new_tokens=GAME_TOKENS_FACTOR * cfg.judge_max_new_tokens)
        if prompts
        else []
    )
    games = []
    for (a, b), reply in zip(ordered, replies, strict=True):
        verdict = parse_winner(reply)
        counts["chat/tournament_games"] += 1
        if verdict is not None:
            counts["chat/tournament_parsed"] += 1
        elif reply is None and (forfeit := _too_long(judge, row, rubric, answers[a], answers[b])):
            counts["chat/judge_answer_too_long"] += 1
            verdict = forfeit
        else:
            counts["chat/tournament_unparsable" if reply is not None else "chat/judge_failed"] += 1
        games.append((a, b, verdict))
    rates = win_rates(g, games)
    if len(set(rates)) > 1:
        counts["chat/tournament_varied"] += 1  # a group RL can learn from
    out = []
    for i, rate in enumerate(rates):
        if is_blank(answers[i]):
            out.append(RewardResult(0.0, "empty answer"))
        else:
            out.append(
                RewardResult(
                    rate,
                    f"tournament win rate {rate:.2f} over {sum(1 for a, b, _ in games if i in (a, b))} games",
                )
            )
    return out, counts
