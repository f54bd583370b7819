"""A number followed by a plain phrase that bounds or hedges it: math-verify read
``\\boxed{9 or more}`` as 9 and ``9 maybe`` as 9 with a unit, so each scored 1 for 9,
where ``\\boxed{\\ge 9}`` and ``\\boxed{9 \\text{ or more}}`` score 0. Words are read in
their phrase: ``3 more`` ("how many more?"), ``4 fewer`` and ``10 four digit numbers``
are counts and score 1 as before. Scored through the scorer's worker pool, as training
scores it."""

from __future__ import annotations

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from tests.hostile_tally import record

HEDGED = [
    # each says 9 is a bound or a guess, not the value; each scored 1 for 9
    r"\boxed{9 or more}",
    r"\boxed{9 OR MORE}",
    r"\boxed{9 or fewer}",
    r"\boxed{9 or higher}",
    r"\boxed{9 and up}",
    r"\boxed{9 or so}",
    r"\boxed{x = 9 or more}",  # read as x = 9
    r"\boxed{9 at least}",
    r"\boxed{9 at most}",
    r"\boxed{9 maybe}",
    r"\boxed{9 perhaps}",
    r"\boxed{9 probably}",
    r"\boxed{9 never}",
    r"\boxed{9 possibly}",
    "9 or more",  # a short answer, outside a box
    "The final answer is 9 at most.",
]
KEPT = [
    # (gold, answer): counts and units, which score 1 as before
    ("3", r"\boxed{3 more}"),  # "how many more?"
    ("3", r"\boxed{3 more apples}"),
    ("4", r"\boxed{4 fewer}"),
    ("4", r"\boxed{4 less}"),
    ("10", r"\boxed{10 four digit numbers}"),  # a number word as a noun
    ("9", r"\boxed{9 \text{ cm}}"),
    ("9", r"\boxed{9 apples}"),
    ("9", "9 minutes"),
    ("9", r"\boxed{9 or}"),  # micro-world junk: "or" alone bounds nothing
    ("9 or more", r"\boxed{9 or more}"),  # the reference's own phrase
]


def _row(gold: str) -> PromptRow:
    return PromptRow(
        id="m",
        messages=[{"role": "user", "content": "How many are there?"}],
        ground_truth=gold,
        domain="math",
    )


def test_a_phrase_that_bounds_or_hedges_the_number_scores_0_through_the_pool() -> None:
    """Each of the 16 ``HEDGED`` answers scored 1 for a gold of 9 (math-verify kept the
    9 and dropped or did not read the words); now 0, the phrase named in the reason.
    The 10 ``KEPT`` answers score 1 for their gold as before: ``more``, ``fewer`` and
    ``less`` without ``or`` count, letters after a number are a unit, and a reference
    that holds the phrase allows it."""
    rows = [_row("9")] * len(HEDGED) + [_row(g) for g, _ in KEPT]
    answers = ["<think></think>" + a for a in HEDGED + [a for _, a in KEPT]]
    with build_scorer(RewardsConfig(timeout_s=60.0, workers=1)) as sc:
        got = sc.score(rows, answers)
    refused = [r for r in got[: len(HEDGED)] if r.score == 0.0]
    record("math verifier: phrases that bound or hedge the number", len(HEDGED), len(refused))
    assert [r.score for r in got] == [0.0] * len(HEDGED) + [1.0] * len(KEPT), got
    assert all("bounds or hedges" in r.reason for r in refused), refused
