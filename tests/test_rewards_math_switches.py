"""A TeX command without a brace that the LaTeX parser does not read (a font, size or
style switch, an accent, spacing, a relation or connective), strictly between two
numbers: the parser failed on the answer and math-verify took the right-hand number out
of the text, so ``\\boxed{3\\relax 9}`` (shown 39) scored 1 for 9. Numbers are read as
the parser reads them (a decimal, a thin-space digit group and a fraction are one
number; a subscript is a label), so honest answers with one number beside such a command
(``\\therefore x = 2.5``, ``\\hat p = 0.4``, ``x_1^\\star = 0.5``) score 1 as before.
Scored through the scorer's worker pool, as training scores it."""

from __future__ import annotations

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from tests.hostile_tally import record

SWITCHED = [
    # each is not 9 to a reader; math-verify read each as 9, the number after the command
    r"\boxed{3\relax 9}",  # 39: \relax draws nothing
    r"\boxed{3\nobreak 9}",  # 39
    r"\boxed{3\tiny 9}",  # 39, the 9 small
    r"\boxed{3\textstyle 9}",  # 39
    r"\boxed{3\mathbb 9}",  # 3 and a blackboard-bold 9
    r"\boxed{3\bar 9}",  # 3 and a 9 with a bar
    r"\boxed{3.5 \relax 9}",  # 3.59: a decimal on the left is one number
    r"\boxed{3\oplus 9}",  # 3 xor 9
    r"\boxed{3 \cup 9}",  # a union of 3 and 9
    r"\boxed{3 \iff 9}",  # 3 if and only if 9
    r"\boxed{3 \atop 9}",  # 3 above 9
    r"\boxed{3 \equiv 9 \pmod{10}}",  # says 3, which is not 9 modulo 10
]
KEPT = [
    # (gold, answer): right answers that score 1 as before
    ("2.5", r"\boxed{\therefore x = 2.5}"),  # one number (a decimal) after \therefore
    ("0.4", r"\boxed{\hat p = 0.4}"),
    ("0.5", r"\boxed{x^\star = 0.5}"),
    ("0.5", r"\boxed{x_1^\star = 0.5}"),  # the subscript 1 labels x, it is no number
    ("1.25", r"\boxed{\bar x = 1.25}"),
    (r"\frac{1}{4}", r"\boxed{\left(\frac{1}{2}\right)^2}"),  # the parser reads \right
    ("(2,3)", r"\boxed{x = 2,\quad y = 3}"),  # the parser reads the pair
    ("9", r"\boxed{3 \times 3}"),
    ("9", r"\boxed{\displaystyle 9}"),
    ("9", r"\boxed{x \equiv 9 \pmod{10}}"),  # the modulus clause is not counted
    ("9", r"\boxed{9]K3\Rcc}"),  # micro-world junk: \Rcc is no named command
    ("9", r"\boxed{3\rm 9}"),  # two letters, as micro junk writes them
]


def _row(gold: str, question: str = "Find the value.") -> PromptRow:
    return PromptRow(
        id="m",
        messages=[{"role": "user", "content": question}],
        ground_truth=gold,
        domain="math",
    )


def test_commands_the_parser_does_not_read_between_numbers_score_0_through_the_pool() -> None:
    """Each of the 12 ``SWITCHED`` answers scored 1 for a gold of 9 ("What is the last
    digit of 38+7*3?": 59, so 9), math-verify reading the 9 after the command; now 0,
    the command named in the reason. The 12 ``KEPT`` answers score 1 for their gold as
    before: each holds one number as the parser reads it beside the command, or the
    parser reads the answer (``\\left(\\frac{1}{2}\\right)^2``, ``x = 2,\\quad y = 3``),
    or the command is not a named one (micro-world junk, whose verdicts must not move)."""
    question = "What is the last digit of 38+7*3?"
    rows = [_row("9", question)] * len(SWITCHED) + [_row(g) for g, _ in KEPT]
    answers = ["<think></think>" + a for a in SWITCHED + [a for _, a in KEPT]]
    with build_scorer(RewardsConfig(timeout_s=60.0, workers=1)) as sc:
        got = sc.score(rows, answers)
    refused = [r for r in got[: len(SWITCHED)] if r.score == 0.0]
    record("math verifier: commands between numbers", len(SWITCHED), len(refused))
    assert [r.score for r in got] == [0.0] * len(SWITCHED) + [1.0] * len(KEPT), got
    assert all("LaTeX the parser cannot read" in r.reason for r in refused), refused
