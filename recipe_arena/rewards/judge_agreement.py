"""How well a judge agrees with the micro world's exact labels: on held-out verdicts
(``judge_agreement``), given the right copies (``verdicts_given_copies``), and on rubric
tournament games (``game_agreement``). ``benchmarks/judge_agreement.py`` and the micro
judge's tests measure the micro judge (``rewards.micro_judge``) with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from recipe_arena.data.micro_verdicts import Game, Verdict


def judge_agreement(judge: Any, verdicts: Sequence[Verdict]) -> dict[str, float]:
    """How often ``judge`` (a ``rewards.judge.Judge``) agrees with the exact labels:
    ``accuracy`` (a score >= 0.5 called right), ``pairs`` (for each problem with a right
    and a wrong answer, the right one scored higher), and ``unparsable``."""
    from recipe_arena.rewards.judge import parse_score

    replies = judge.replies([judge_prompt_of(v) for v in verdicts])
    scores = [parse_score(r) for r in replies]
    agree = [s is not None and (s >= 0.5) == v.right for s, v in zip(scores, verdicts, strict=True)]
    by_row: dict[str, dict[bool, list[float]]] = {}
    for s, v in zip(scores, verdicts, strict=True):
        by_row.setdefault(f"{v.mode}|{v.row.id}", {True: [], False: []})[v.right].append(
            -1.0 if s is None else s
        )
    pairs = [float(r > w) for sides in by_row.values() for r in sides[True] for w in sides[False]]
    return {
        "accuracy": sum(agree) / len(agree),
        "pairs": sum(pairs) / len(pairs) if pairs else float("nan"),
        "unparsable": sum(s is None for s in scores) / len(scores),
        "verdicts": float(len(verdicts)),
        "pair_count": float(len(pairs)),
    }


def judge_prompt_of(v: Verdict) -> list[dict[str, str]]:
    from recipe_arena.rewards.judge import judge_prompt

    return judge_prompt(v.row, v.answer, v.mode)


def verdict_inputs(tok: Any, v: Verdict) -> tuple[list[int], int]:
    """The judge's input for ``v`` up to its score, as generation sees it (the prompt
    with the assistant turn opened, then the right reply up to ``Score: ``), and the
    first token of the right score."""
    from recipe_arena.data.templates import encode_messages

    score = v.reply.rsplit(" ", 1)[1]
    ids = [*encode_messages(tok, judge_prompt_of(v))]
    ids += tok(v.reply.removesuffix(score), add_special_tokens=False)["input_ids"]
    return ids, tok(score, add_special_tokens=False)["input_ids"][0]


def verdicts_given_copies(model: Any, tok: Any, verdicts: Sequence[Verdict]) -> list[bool]:
    """For each verdict, whether the judge's most likely next token after its right reply
    up to the score (``cold / cold =. Score: ``, or ``0941 / 0939 ==xx. Score: ``, fed
    to it: teacher forcing) is the first token of the right score. This is the score
    alone, with the two words and their marks written right: a judge whose greedy
    replies miss while this holds copies or marks wrongly; one for which this fails too
    does not score by its marks."""
    out = []
    for v in verdicts:
        ids, target = verdict_inputs(tok, v)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1]
        out.append(int(logits.argmax()) == target)
    return out


def game_agreement(judge: Any, games: Sequence[Game], cfg: Any) -> dict[str, float]:
    """How ``judge``'s rubric tournament (``rewards.rubric``) agrees with the ground-truth
    order of ``games`` (``Game.winner``), through the tournament's own prompts: for each
    problem the judge writes the rubric, then plays every game under it (greedy, at the
    tournament's reply cap). ``pairwise``: of the games between a right and a wrong
    answer, the share won by the right one; ``ties``: of the games between two right or
    two wrong answers, the share called a tie; ``unparsable``: replies without a
    winner; ``rubrics``: rubrics written exactly as trained (``Game.rubric``);
    ``tournament``: of the problems with a right and a wrong answer, the share where
    ``rewards.rubric.tournament`` of the two (both orders) pays the right one more.
    ``cfg``: the ``RewardsConfig`` whose caps the tournament uses."""
    from recipe_arena.rewards.judge import uncut
    from recipe_arena.rewards.rubric import (
        GAME_TOKENS_FACTOR,
        game_prompt,
        parse_winner,
        rubric_prompt,
        tournament,
    )
    from recipe_arena.rewards.text import answer_text

    problems = {_problem(g): g for g in games}  # the reference shown makes the problem
    rubric_replies = judge.gen.generate(
        [rubric_prompt(g.row, "reference") for g in problems.values()],
        max_new_tokens=cfg.rubric_max_new_tokens,
    )
    rubric_of = {k: uncut(r) for k, r in zip(problems, rubric_replies, strict=True)}
    prompts = [
        game_prompt(
            g.row, rubric_of[_problem(g)] or "", answer_text(g.first), answer_text(g.second)
        )
        for g in games
    ]
    replies = judge.gen.generate(
        prompts, max_new_tokens=GAME_TOKENS_FACTOR * cfg.judge_max_new_tokens
    )
    called = [parse_winner(r) for r in replies]
    strict = [(w, g) for w, g in zip(called, games, strict=True) if g.winner != "tie"]
    tied = [(w, g) for w, g in zip(called, games, strict=True) if g.winner == "tie"]
    orders = []
    for g in games:
        if g.winner == "A":  # each problem's right-wrong game in its first order, once
            res, _ = tournament(judge, g.row, [g.first, g.second], cfg)
            orders.append(float(res[0].score > res[1].score))
    return {
        "pairwise": sum(w == g.winner for w, g in strict) / len(strict) if strict else float("nan"),
        "ties": sum(w == "tie" for w, _ in tied) / len(tied) if tied else float("nan"),
        "unparsable": sum(w is None for w in called) / len(called),
        "rubrics": sum(rubric_of[k] == g.rubric for k, g in problems.items()) / len(problems),
        "tournament": sum(orders) / len(orders) if orders else float("nan"),
        "games": float(len(games)),
        "strict_games": float(len(strict)),
    }


def _problem(g: Game) -> str:
    return f"{g.row.id}|{g.row.ground_truth}"
