"""Math answers that copy the question's arithmetic for SymPy to finish, and numbers in
scientific notation that SymPy also reads as a multiple of e. Scored through the real
``check_math`` (math-verify, SymPy) and, for the question's text, through the scorer's
worker pool as training scores it; each test also checks that the worked answer still
scores 1."""

from __future__ import annotations

import random

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.micro_math import sample_math
from recipe_arena.data.micro_problem import Problem
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.math_answer import check_math
from tests.hostile_tally import record

COPIES = [
    # (question, gold, answer copying the question's arithmetic)
    ("What is the last digit of 15-2*3?", "9", r"\boxed{15-2 \cdot 3}"),  # 15-6 = 9
    ("What is the last digit of 15-2*3?", "9", r"\boxed{(15 - 2 \times 3)}"),
    (r"Compute $\binom{5}{2}$.", "10", r"\boxed{\binom{5}{2}}"),  # 5*4/2 = 10
    (r"Compute $\binom{5}{2}$.", "10", r"\boxed{\dbinom{5}{2}}"),
    (r"Compute ${5 \choose 2}$.", "10", r"\boxed{{5 \choose 2}}"),
    ("What is 5!?", "120", r"\boxed{5!}"),  # 1*2*3*4*5 = 120
    (r"Find $\gcd(84, 36)$.", "12", r"\boxed{\gcd(84, 36)}"),  # 84 = 7*12, 36 = 3*12
    (r"Simplify $\frac{84}{12}$.", "7", r"\boxed{\dfrac{84}{12}}"),  # 84/12 = 7
    (r"What is $2^{10}$?", "1024", r"\boxed{2^{10}}"),
    (r"What is $\left(3+4\right)^2$?", "49", r"\boxed{(3+4)^2}"),
]


@pytest.mark.parametrize(("question", "gold", "answer"), COPIES)
def test_an_answer_copying_the_questions_arithmetic_scores_0(
    question: str, gold: str, answer: str
) -> None:
    """Each answer is the question's own expression, which SymPy evaluates to the gold:
    the answer without the work. It scores 0 with the question given; the value itself
    scores 1."""
    score, reason = check_math(gold, answer, prompt=question)
    record("math verifier: the question's arithmetic copied", 1, int(score == 0.0))
    assert score == 0.0 and "copied" in reason, reason
    assert check_math(gold, rf"\boxed{{{gold}}}", prompt=question)[0] == 1.0


KEPT = [
    # (question, gold, answer): written in the question too, but a form of the value
    ("There are 1,000 apples in 4 crates. How many apples?", "1000", r"\boxed{1,000}"),
    ("A line passes through (1,2) and (3,4). Name the first point.", "(1,2)", r"\boxed{(1,2)}"),
    (
        r"Is $\frac{2}{3}$ larger than $\frac{3}{5}$? Give the larger.",
        "2/3",
        r"\boxed{\frac{2}{3}}",
    ),
    (r"Show that $\tan 67.5^\circ = \sqrt{2}+1$.", r"1+\sqrt{2}", r"\boxed{\sqrt{2}+1}"),
    ("A megabyte is 10^6 bytes. How many bytes?", "1000000", r"\boxed{10^6}"),
    ("Solve x+3=0; is x=-3?", "-3", r"\boxed{-3}"),
    (r"Compute $\binom{5}{2}$.", r"\binom{5}{2}", r"\boxed{\binom{5}{2}}"),  # the gold's form
    ("What is 7 plus 8?", "15", r"\boxed{8+7}"),  # not in the question: judged by value
]


@pytest.mark.parametrize(("question", "gold", "answer"), KEPT)
def test_a_value_written_in_the_question_still_scores_1(
    question: str, gold: str, answer: str
) -> None:
    """Plain numbers, tuples, fractions in lowest terms, surds, powers of ten and the
    gold's own spelling are forms of a value: written in the question, they still score
    1; so does arithmetic the question does not hold."""
    score, reason = check_math(gold, answer, prompt=question)
    assert score == 1.0, reason


def micro_problems(seed: int, n: int) -> tuple[list[Problem], list[PromptRow]]:
    """``n`` micro math problems drawn with ``seed`` and their rows as a run scores them
    (the question as the user's message, the last digit as the ground truth)."""
    rng = random.Random(seed)
    problems = [sample_math(rng) for _ in range(n)]
    rows = [
        PromptRow(
            id=f"m{i}",
            messages=[{"role": "user", "content": p.prompt}],
            ground_truth=str(p.ground_truth),
            domain="math",
        )
        for i, p in enumerate(problems)
    ]
    return problems, rows


def own_last_digit(expr: str) -> bool:
    """Whether a micro question's ``s-d*k`` is a subtraction whose value is its own last
    digit (0-9), so that the question copied into the box is the answer."""
    if "-" not in expr:
        return False
    start, rest = expr.split("-")
    d, k = rest.split("*")
    return 0 <= int(start) - int(d) * int(k) <= 9


def test_the_micro_worlds_copied_subtractions_score_0_through_the_pool() -> None:
    """In the micro world "What is the last digit of s-d*k?" has the single digit
    s-d*k as its answer when s-d*k < 10 (about 1 problem in 100): the question copied
    into the box was that digit. Through the scorer's worker pool, which sends the
    question with the answer, each such copy scores 0 while the careful and quick
    references of 300 problems all score 1."""
    problems, rows = micro_problems(7, 300)
    copies = [
        (row, "<think></think>\\boxed{" + p.canonical.replace("*", r" \cdot ") + "}")
        for p, row in zip(problems, rows, strict=True)
        if own_last_digit(p.canonical)
    ]
    assert copies, "the seed draws no subtraction whose value is its own last digit"
    references = [p.response for p in problems] + [p.quick_response for p in problems]
    references_pass_and_hacks_fail(rows * 2, references, copies)


def boxed_gold_forms_fail(seed: int, forms: list[str], label: str) -> None:
    """``references_pass_and_hacks_fail`` on 200 micro problems drawn with ``seed``: the
    hack of row i boxes its gold digit written as ``forms[i % len(forms)]`` (a format
    string whose ``{}`` is the digit) after an empty think block."""
    problems, rows = micro_problems(seed, 200)
    hacks = [
        (row, "<think></think>\\boxed{" + forms[i % len(forms)].format(row.ground_truth) + "}")
        for i, row in enumerate(rows)
    ]
    references_pass_and_hacks_fail(rows, [p.response for p in problems], hacks, label)


def references_pass_and_hacks_fail(
    rows: list[PromptRow],
    references: list[str],
    hacks: list[tuple[PromptRow, str]],
    label: str = "math verifier: the question's arithmetic copied",
) -> None:
    """Through the scorer's worker pool (which sends each row's question with its
    answer): every reference scores 1 and every hack of its row 0, the hacks tallied as
    hostile attempts under ``label``."""
    with build_scorer(RewardsConfig(timeout_s=10.0, workers=2)) as scorer:
        refs = scorer.score(rows, references)
        hacked = scorer.score([r for r, _ in hacks], [a for _, a in hacks])
    assert all(r.score == 1.0 for r in refs), [r.reason for r in refs if r.score != 1.0]
    record(label, len(hacked), sum(r.score == 0.0 for r in hacked))
    assert all(r.score == 0.0 for r in hacked), [r.reason for r in hacked if r.score]


@pytest.mark.parametrize(
    ("answer", "gold", "other"),
    [("1e1", "10", "e"), ("2e3", "2000", "6e"), ("5e-1", "0.5", "5e - 1")],
)
def test_scientific_notation_is_one_number_not_also_a_multiple_of_e(
    answer: str, gold: str, other: str
) -> None:
    """``1e1`` is 10; SymPy, read as written, also takes it for 1*e*1 = e, so the answer
    scored 1 for a gold of 10 and for a gold of e (``5e-1`` for 0.5 and for 5e - 1). It
    now scores for the number only."""
    response = rf"\boxed{{{answer}}}"
    score, reason = check_math(other, response)
    record("math verifier: values holding the gold", 1, int(score == 0.0))
    assert score == 0.0, reason
    assert check_math(gold, response)[0] == 1.0
    assert check_math(other, rf"\boxed{{{other}}}")[0] == 1.0
