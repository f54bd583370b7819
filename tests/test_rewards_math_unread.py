"""Math answers math-verify read otherwise than a reader sees them: relations the negation
and order checks did not name. Scored through the real ``check_math`` (math-verify,
SymPy) and through the scorer's worker pool as training scores it."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.math_answer import check_math
from tests.hostile_tally import record

RELATIONS = [
    # (answer, what it says of 9): each scored 1 for a gold of 9
    (r"\boxed{\nvDash 9}", "a negation"),
    (r"\boxed{\nVdash 9}", "a negation"),
    (r"\boxed{\nshortmid 9}", "a negation"),
    (r"\boxed{x \nsubseteqq 9}", "a negation"),
    (r"\boxed{\ntriangleleft 9}", "a negation"),
    (r"\boxed{\nrightarrow 9}", "a negation"),
    (r"\boxed{\nni 9}", "a negation"),
    (r"\boxed{\setminus 9}", "all but 9"),
    (r"\boxed{x =\!\!\!/\, 9}", "x is not 9: = struck through by /"),
    (r"\boxed{x \lessgtr 9}", "x is less or greater than 9"),
    (r"\boxed{x \gtrless 9}", "x is greater or less than 9"),
    (r"\boxed{x \eqslantless 9}", "at most 9"),
    (r"\boxed{x \preccurlyeq 9}", "at most 9"),
    (r"\boxed{x \curlyeqprec 9}", "at most 9"),
    (r"\boxed{x \lvertneqq 9}", "below 9"),
    (r"\boxed{x \subsetneq 9}", "contained in 9"),
    (r"\boxed{x \sqsubseteq 9}", "contained in 9"),
]


@pytest.mark.parametrize(("answer", "says"), RELATIONS)
def test_a_relation_the_checks_did_not_name_scores_0(answer: str, says: str) -> None:
    """Each answer says ``says`` of 9, not that it is 9, with a relation the negation and
    order checks did not name: the parser does not know it and read the number beside
    it, so each scored 1 for a gold of 9, as ``\\neq 9`` and ``\\le 9`` no longer do.
    Each scores 0 now; the reference's own relation is still allowed."""
    score, reason = check_math("9", answer)
    record("math verifier: answers negating or bounding the gold", 1, int(score == 0.0))
    assert score == 0.0 and "answer states" in reason, (says, reason)
    assert check_math(r"x \lessgtr 3", r"\boxed{x \lessgtr 3}")[0] == 1.0
    assert check_math(r"A \subseteq B", r"\boxed{A \subseteq B}")[0] == 1.0
