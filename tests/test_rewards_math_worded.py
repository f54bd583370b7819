"""A number followed by plain words that scale, bound, negate or hedge it is not the
number: ``math_answer.normalise`` tries a number with letters after it also as the
number alone (a unit, ``12 cm`` as 12), and math-verify reads ``9 or more`` as 9, so
``\\boxed{9 thousand}`` (9000 to a reader), ``\\boxed{9 or more}`` and ``\\boxed{9
maybe}`` scored 1 for a gold of 9, as ``\\boxed{9\\text{ thousand}}`` did before
``math_markup`` refused it. Scored through the scorer's worker pool, as training scores
it, and through ``check_math`` for each way an answer is found."""

from __future__ import annotations

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.math_answer import check_math
from tests.hostile_tally import record

WORDED = [
    # each is not 9: a reader reads the number the word makes of it, or a bound, or a hedge
    r"\boxed{9 thousand}",  # 9000
    r"\boxed{9 THOUSAND}",  # 9000, capitals
    r"\boxed{9 million}",  # 9,000,000
    r"\boxed{9 hundred}",  # 900
    r"\boxed{9 dozen}",  # 108
    r"\boxed{9 squared}",  # 81
    r"\boxed{9 factorial}",  # 362880
    r"\boxed{9 and a half}",  # 9.5
    r"\boxed{9 tenths}",  # 0.9
    r"\boxed{9 or more}",  # a lower bound, not a value
    r"\boxed{9 or less}",  # an upper bound
    r"\boxed{9 at least}",  # a lower bound
    r"\boxed{9 at most}",  # an upper bound
    r"\boxed{9 maybe}",  # a hedge
    r"\boxed{9 perhaps}",  # a hedge
]
KEPT = [
    # still 1 for 9: units, and words of fewer than four letters, as junk the micro
    # world may write holds
    r"\boxed{9}",
    r"\boxed{9 cm}",
    r"\boxed{9 apples}",
    r"\boxed{9 minutes}",
    r"\boxed{9 percent}",
    r"\boxed{9k}",
    r"\boxed{9 or}",
    r"\boxed{9k klW}",
]


def _row(question: str, gold: str) -> PromptRow:
    return PromptRow(
        id="m", messages=[{"role": "user", "content": question}], ground_truth=gold, domain="math"
    )


def test_words_that_scale_or_bound_the_number_score_0_through_the_pool() -> None:
    """Each of the 15 ``WORDED`` answers scored 1 for a gold of 9 ("What is the last
    digit of 38+7*3?": 59, so 9); now 0, with the word named in the reason. The eight
    ``KEPT`` answers (units, and ``9k``, ``9 or`` and ``9k klW``, whose words are
    shorter than four letters) score 1 as before, and a gold that holds the word itself
    (``9 or more``, ``9 \\text{ or more}``) is matched by ``\\boxed{9 or more}``."""
    row = _row("What is the last digit of 38+7*3?", "9")
    answers = ["<think></think>" + a for a in WORDED + KEPT]
    with build_scorer(RewardsConfig(timeout_s=60.0, workers=1)) as sc:
        got = sc.score([row] * len(answers), answers)
        golds = [_row("How many?", "9 or more"), _row("How many?", r"9 \text{ or more}")]
        own = sc.score(golds, [r"\boxed{9 or more}"] * 2)
    refused = [r for r in got[: len(WORDED)] if r.score == 0.0]
    record("math verifier: words after a number", len(WORDED), len(refused))
    assert [r.score for r in got] == [0.0] * len(WORDED) + [1.0] * len(KEPT), got
    assert all("a word that changes or bounds its number" in r.reason for r in refused), refused
    assert [r.score for r in own] == [1.0, 1.0], own


def test_words_after_the_number_are_read_in_every_way_an_answer_is_found() -> None:
    """The short answer ``9 thousand``, ``The final answer is 9 thousand.`` and
    ``$9$ maybe`` outside a box scored 1 for 9 (the answer found as a short answer or
    after "the final answer is"); now 0. ``9 apples`` still scores 1."""
    found = ["9 thousand", "The final answer is 9 thousand.", "$9$ maybe"]
    scores = [check_math("9", "<think></think>" + a)[0] for a in found]
    assert scores == [0.0, 0.0, 0.0], scores
    assert check_math("9", "<think></think>9 apples")[0] == 1.0
