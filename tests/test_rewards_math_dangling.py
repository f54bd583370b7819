"""Math answers that end with a named binary operator or relation and nothing after it:
``\\boxed{9 \\cdot}``, ``\\boxed{x = 9 \\div}``, ``\\boxed{9 \\approx}``. The LaTeX parser
reads no value in them and math-verify took the number before the operator out of the
text, so each scored 1 for a gold of 9; a reader sees an unfinished expression. Scored
through the scorer's worker pool as training scores them, with the micro world's rows."""

from __future__ import annotations

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from tests.test_rewards_math_copies import boxed_gold_forms_fail

DANGLING = [
    # each is the gold digit {} with an operator or relation waiting for its other side
    r"{} \cdot",
    r"{}\div",
    r"x = {} \cdot",
    r"{} \oplus",
    r"{} \cup",
    r"{} \wedge",
    r"{} \approx",
    r"{} \equiv",
    r"{} \Rightarrow",
    r"{} \implies",
    r"{} \over",
    r"{} \bmod",
    r"{} \cdot \,",  # spacing after the operator is nothing after it
    r"{} \cdot.",  # nor is a full stop
    r"\cdot {}",  # an operator that opens the answer has no left-hand side
    r"\oplus {}",
]

KEPT = [
    # (gold, answer): honest right answers that end with, or hold, an operator as a mark or
    # with both sides; each scored 1 before the check and must keep 1
    ("9", r"\boxed{9\times}"),  # nine-fold, as in 3.2$\times$ faster
    ("9", r"\boxed{x^\ast = 9}"),
    ("9", r"\boxed{9^\ast}"),  # a mark on the value, not an operator
    ("9", r"\boxed{9\,M_\odot}"),  # nine solar masses
    ("9", r"\boxed{1 \cdot 9}"),
    ("9", r"\boxed{9^\circ}"),
    ("9", r"\boxed{9 \cdot 1}"),
    ("9", r"\boxed{\approx 9}"),  # a relation that opens the answer
    ("9", r"\boxed{\div 9}"),  # divide by 9
    ("9", r"\boxed{|A \cup B| = 9}"),
    ("9", r"\boxed{9}."),
    ("3^+", r"\boxed{x \to 3^+}"),
    ("[3, \\infty)", r"\boxed{[3, \infty)}"),
    ("9!", r"\boxed{9!}"),
    ("\\pm 3", r"\boxed{\pm 3}"),
]


def test_a_number_with_an_operator_and_nothing_after_it_scores_0_through_the_pool() -> None:
    """200 micro problems through the scorer's worker pool: each reference scores 1 and
    its gold digit d boxed with a named operator or relation after it and nothing on the
    other side (``d \\cdot``, ``d\\div``, ``x = d \\cdot``, ``d \\oplus``, ``d \\cup``,
    ``d \\wedge``, ``d \\approx``, ``d \\equiv``, ``d \\Rightarrow``, ``d \\implies``,
    ``d \\over``, ``d \\bmod``, and ``d \\cdot`` followed by ``\\,`` or a full stop),
    or opening it with nothing before (``\\cdot d``, ``\\oplus d``), scores 0, where each
    scored 1: the parser read no value and math-verify picked d out of the text."""
    boxed_gold_forms_fail(11, DANGLING, "math verifier: an operator with nothing after it")


def test_operators_written_as_marks_or_with_both_sides_keep_their_score() -> None:
    """Through the scorer's worker pool each answer of ``KEPT`` scores 1 (as before the
    check): ``9\\times`` (nine-fold) and ``9\\,M_\\odot`` end with an operator used as a
    mark, ``x^\\ast`` and ``9^\\circ`` carry one as a superscript, and the rest have both
    sides of their operator, a one-sided limit, an open interval or a sign."""
    rows = [
        PromptRow(
            id=f"k{i}",
            messages=[{"role": "user", "content": "Answer in a box."}],
            ground_truth=gold,
            domain="math",
        )
        for i, (gold, _) in enumerate(KEPT)
    ]
    with build_scorer(RewardsConfig(timeout_s=20.0, workers=2)) as scorer:
        results = scorer.score(rows, [answer for _, answer in KEPT])
    got = {answer: (r.score, r.reason) for (_, answer), r in zip(KEPT, results, strict=True)}
    assert all(score == 1.0 for score, _ in got.values()), got
