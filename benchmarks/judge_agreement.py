"""The micro judge's agreement with the chat generator's exact labels on held-out rows.

Trains the judge of ``rewards.micro_judge`` (or finds it in the cache: the default cache,
or ``--cache``), then judges held-out verdicts (``data.micro_verdicts.generate_verdicts(
"heldout", N, seed=99)``, reference template) through ``rewards.judge.Judge`` and
reports ``rewards.judge_agreement.judge_agreement``: accuracy (a score >= 0.5 called right),
right-vs-wrong pairs of a row ordered correctly, unparsable replies, and verdicts per
second (greedy, the torch engine, distinct prompts); then the accuracy by question kind
(most held-out verdicts ask for a number), and the same verdicts given the right copies
(``rewards.judge_agreement.verdicts_given_copies``: the judge fed its right reply up to
``Score: ``), which separates comparing the two words from copying them. Then the
rubric tournament's games (``rewards.chat=rubric_tournament``) on held-out problems
(``data.micro_verdicts.paired_games("heldout", N, seed=99)``, each problem's two answers
in both orders) through ``rewards.judge_agreement.game_agreement``: the judge writes each
problem's rubric, then compares the answers under it; ``pairwise`` is the share of games
between a right and a wrong answer won by the right one. Config overrides are JSON for
``MicroJudgeConfig``. Last line:
    judge_agreement: accuracy <a>, pairs <p>, unparsable <u>, pairwise <w>, <v> verdicts/s, train <s> s

Run: python benchmarks/judge_agreement.py [--set '{"steps": 1600}'] [--verdicts 600] [--games 600]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from recipe_arena.config_rewards import MicroJudgeConfig, RewardsConfig
from recipe_arena.data.micro_verdicts import generate_verdicts, paired_games, question_kind
from recipe_arena.engines import build_engine
from recipe_arena.models.factory import load_checkpoint
from recipe_arena.rewards.judge import EngineGenerator, Judge
from recipe_arena.rewards.judge_agreement import (
    game_agreement,
    judge_agreement,
    verdicts_given_copies,
)
from recipe_arena.rewards.judge_model import judge_engine
from recipe_arena.rewards.micro_judge import micro_judge_checkpoint


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="{}", help="JSON overrides of MicroJudgeConfig")
    ap.add_argument("--verdicts", type=int, default=600, help="held-out verdicts judged")
    ap.add_argument("--games", type=int, default=600, help="held-out tournament games played")
    ap.add_argument("--cache", default=None, help="cache directory (default: the usual one)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: all)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = MicroJudgeConfig(**json.loads(args.set))
    t0 = time.perf_counter()
    path = micro_judge_checkpoint(cfg, args.cache)
    train_s = time.perf_counter() - t0
    model, tok = load_checkpoint(path)
    model.eval()
    gen = EngineGenerator(build_engine(judge_engine(model), model, tok), tok)
    judge = Judge(gen, "reference")
    verdicts = generate_verdicts("heldout", args.verdicts, seed=99)
    t0 = time.perf_counter()
    result = judge_agreement(judge, verdicts)
    rate = len(verdicts) / (time.perf_counter() - t0)
    by_kind = {
        kind: judge_agreement(judge, [v for v in verdicts if question_kind(v.row) == kind])[
            "accuracy"
        ]
        for kind in sorted({question_kind(v.row) for v in verdicts})
    }
    games = game_agreement(judge, paired_games("heldout", args.games, seed=99), RewardsConfig())
    judge.close()
    given = verdicts_given_copies(model, tok, verdicts)
    given_by_kind = {
        kind: sum(g for g, v in zip(given, verdicts, strict=True) if question_kind(v.row) == kind)
        / sum(question_kind(v.row) == kind for v in verdicts)
        for kind in by_kind
    }
    print(json.dumps(result))
    print("accuracy by question kind: " + ", ".join(f"{k} {a:.3f}" for k, a in by_kind.items()))
    print(
        f"given the right copies: {sum(given) / len(given):.3f}; by kind: "
        + ", ".join(f"{k} {a:.3f}" for k, a in given_by_kind.items())
    )
    print(
        f"tournament games: pairwise {games['pairwise']:.3f} of {games['strict_games']:.0f}, "
        f"ties {games['ties']:.3f}, unparsable {games['unparsable']:.3f}, rubrics "
        f"{games['rubrics']:.3f}, right answer paid more {games['tournament']:.3f}"
    )
    print(
        f"judge_agreement: accuracy {result['accuracy']:.3f}, pairs {result['pairs']:.3f}, "
        f"unparsable {result['unparsable']:.3f}, pairwise {games['pairwise']:.3f}, "
        f"{rate:.0f} verdicts/s, train {train_s:.0f} s"
    )


if __name__ == "__main__":
    main()
