"""The micro judge's games and agreement counts: games ordered by the exact labels and
played in both orders, the rubric tournament asking the judge exactly what it is trained
on, and ``judge_agreement`` and ``game_agreement`` counted by hand with stand-in judges."""

from __future__ import annotations

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.micro_chat import is_right
from recipe_arena.data.micro_verdicts import Game, generate_verdicts, paired_games
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.judge import Judge, judge_prompt
from recipe_arena.rewards.judge_agreement import game_agreement, judge_agreement, verdict_inputs
from recipe_arena.rewards.micro_judge import game_chat, judge_tokenizer, rubric_chat, verdict_chat


def _chat_row(reference: str, question: str = "What is the opposite of hot?") -> PromptRow:
    return PromptRow(
        id="chat-train-0",
        messages=[{"role": "user", "content": question}],
        ground_truth=reference,
        domain="chat",
    )


def test_games_are_ordered_by_the_labels_and_come_in_both_orders() -> None:
    """A game's winner is the right answer against a wrong one (``A`` first, ``B``
    second) and a tie between two right or two wrong ones; its reply is each answer's
    copies and mark, as a verdict writes them, then the winner. By hand: reference
    cold, ``It is cold.`` against ``It is hot.``: ``cold / cold =. hot / cold x. Winner:
    A``; reference 941, ``939`` against ``941``: the numbers padded to four digits with
    a mark per digit (0939 against 0941: ``==xx``), ``Winner: B``; two wrong answers
    tie. On 600 drawn games (300 problems, each in both orders): the second of each
    pair is the first reversed, every winner is ``is_right``'s order, and strict games
    are 2/3 of the problems, +- 4 * sqrt((2/9) / 300) = 0.109."""
    cold = _chat_row("cold")
    assert Game(cold, "It is cold.", "It is hot.").reply == "cold / cold =. hot / cold x. Winner: A"
    assert (
        Game(cold, "It is hot.", "It is warm.").reply == "hot / cold x. warm / cold x. Winner: tie"
    )
    number = _chat_row("941", "What number comes after 940?")
    assert Game(number, "939", "941").reply == "0939 / 0941 ==xx. 0941 / 0941 ====. Winner: B"
    assert Game(number, "941", "It is 941.").winner == "tie"
    assert Game(number, "941", "939").rubric == "1. The answer ends with 941."
    games = paired_games("train", 600, seed=3, swap_fraction=0.5)
    assert len(games) == 600
    for a, b in zip(games[::2], games[1::2], strict=True):
        assert (a.row, a.first, a.second) == (b.row, b.second, b.first)
    for g in games:
        first, second = (is_right(str(g.row.ground_truth), x) for x in (g.first, g.second))
        assert g.winner == ("tie" if first == second else "A" if first else "B")
        assert g.reply.endswith(f". Winner: {g.winner}")
    strict = sum(g.winner != "tie" for g in games[::2]) / 300
    assert abs(strict - 2 / 3) < 0.109


class _Tournament:
    """A judge model that replies what the micro judge is trained to write to exactly
    the prompts it is trained on (``rubric_chat``, ``game_chat``) and fails the test
    (KeyError) on any other prompt; it records the reply caps it is given."""

    def __init__(self, games: list[Game], wrong: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        self.replies = {rubric_chat(g)[0]["content"]: g.rubric for g in games}
        for k, g in enumerate(games):
            right = g.reply
            flipped = right.replace("Winner: A", "Winner: B") if "A" in right[-1] else right
            self.replies[game_chat(g)[0]["content"]] = flipped if k in wrong else right
        self.caps: list[int | None] = []

    def generate(self, prompts, max_new_tokens=None):  # type: ignore[no-untyped-def]
        self.caps.append(max_new_tokens)
        return [self.replies[p[0]["content"]] for p in prompts]

    def close(self) -> None:
        pass


def test_tournament_asks_the_judge_what_it_is_trained_on() -> None:
    """``rewards.rubric.tournament`` sends the micro judge the rubric prompt (with the
    reference, the row having one) and the game prompts it is trained on, word for
    word (any other prompt fails the stand-in judge), at the rubric cap (96 tokens) and
    twice the verdict cap for games (2 x 40). With a judge that replies as trained, a
    group of one right and two wrong answers (all pairs in both orders, 6 games): the
    right one wins its 4 games, 1.0; each wrong one loses 2 and ties 2, 1 / 4 = 0.25.
    Every game is counted and parsed, and the rewards differ (a varied tournament)."""
    from recipe_arena.rewards.rubric import tournament

    row = _chat_row("cold")
    answers = ["It is cold.", "It is hot.", "cold or hot."]
    games = [Game(row, a, b) for a in answers for b in answers if a != b]
    judge = _Tournament(games)
    cfg = RewardsConfig(chat="rubric_tournament")
    results, counts = tournament(Judge(judge), row, answers, cfg)  # type: ignore[arg-type]
    assert [r.score for r in results] == [1.0, 0.25, 0.25]
    assert judge.caps == [96, 80]
    assert counts["chat/tournament_games"] == counts["chat/tournament_parsed"] == 6
    assert counts["chat/tournaments"] == counts["chat/tournament_varied"] == 1
    assert counts["chat/tournament_unparsable"] == 0


def test_game_agreement_counts_by_hand() -> None:
    """``game_agreement`` with a judge right on every game but one strict game (its
    winner flipped from A to B): pairwise (S - 1) / S of the S strict games, ties and
    rubrics all right, none unparsable; that problem's tournament pays its two answers
    1 / 2 each (one game won by each), so the right answer is paid more on P - 1 of the
    P strict problems."""
    games = paired_games("heldout", 120, seed=4)
    flip = next(k for k, g in enumerate(games) if g.winner == "A")
    result = game_agreement(Judge(_Tournament(games, {flip})), games, RewardsConfig())  # type: ignore[arg-type]
    strict = [g for g in games if g.winner != "tie"]
    problems = len({(g.row.id, g.row.ground_truth) for g in strict})
    assert result["strict_games"] == len(strict)
    assert result["pairwise"] == pytest.approx(1 - 1 / len(strict))
    assert result["ties"] == result["rubrics"] == 1.0 and result["unparsable"] == 0.0
    assert result["tournament"] == pytest.approx(1 - 1 / problems)


class _Oracle:
    """A judge model that is right on every verdict but the first, which it answers
    unparsably: exercises ``judge_agreement`` with known counts."""

    def __init__(self, verdicts: list) -> None:  # type: ignore[type-arg]
        self.replies = {
            judge_prompt(v.row, v.answer, v.mode)[0]["content"]: v.reply for v in verdicts
        }
        self.first = judge_prompt(verdicts[0].row, verdicts[0].answer, "reference")[0]["content"]

    def generate(self, prompts, max_new_tokens=None):  # type: ignore[no-untyped-def]
        return [
            "no idea" if p[0]["content"] == self.first else self.replies[p[0]["content"]]
            for p in prompts
        ]

    def close(self) -> None:
        pass


def test_agreement_counts_by_hand() -> None:
    """One unparsable reply of n verdicts: accuracy (n - 1) / n, unparsable 1 / n; every
    right-wrong pair of a row is ordered correctly except those with the unparsable one
    (scored -1, below any wrong answer's 0 when it is right; above nothing when wrong)."""
    drawn = generate_verdicts("heldout", 60, seed=2)
    unique = {judge_prompt(v.row, v.answer, v.mode)[0]["content"]: v for v in drawn}
    verdicts = list(unique.values())
    n = len(verdicts)
    result = judge_agreement(Judge(_Oracle(verdicts)), verdicts)  # type: ignore[arg-type]
    assert result["accuracy"] == pytest.approx((n - 1) / n)
    assert result["unparsable"] == pytest.approx(1 / n)
    first = verdicts[0]
    same_row = [v for v in verdicts if v.row.id == first.row.id]
    misordered = sum(v.right != first.right for v in same_row) if first.right else 0
    assert result["pairs"] == pytest.approx(1 - misordered / result["pair_count"])


def test_verdict_inputs_are_the_training_conversation_up_to_the_score() -> None:
    """The teacher-forced input of ``verdicts_given_copies``: for right and wrong
    verdicts (numbers among them), the input up to the score and the score's first token
    are the first tokens of the conversation the judge is trained on (``assistant_mask``
    of ``verdict_chat``), so generation is asked what training taught; the input decodes
    to end in the reply's two words (and a number reply's marks) and ``Score: ``; the
    token is the score's first digit, ``1`` (of 10) or ``0``."""
    from recipe_arena.supervised import assistant_mask

    tok = judge_tokenizer()
    drawn = generate_verdicts("heldout", 60, seed=5)
    verdicts = [v for v in drawn if v.right][:6] + [v for v in drawn if not v.right][:6]
    assert any(str(v.row.ground_truth).isdigit() for v in verdicts)
    for v in verdicts:
        ids, target = verdict_inputs(tok, v)
        trained, _ = assistant_mask(tok, verdict_chat(v))
        assert trained[: len(ids) + 1] == [*ids, target]
        words = v.reply.rsplit("Score: ", 1)[0]
        assert tok.decode(ids).endswith(words + "Score: ")
        assert tok.decode([target]) == ("1" if v.right else "0")
