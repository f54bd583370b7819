"""A response built to make the math verifier's answer extraction slow: boxes that never
close. Scored through the scorer's worker pool under its default deadline."""

from __future__ import annotations

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from tests.hostile_tally import record


def test_thousands_of_unclosed_boxes_cost_milliseconds_not_the_deadline() -> None:
    """6,000 ``\\boxed{`` that never close, then ``\\boxed{9}`` (42,009 characters):
    looking for each box's closing brace by scanning on to the end took 6,000 scans of up
    to 42,000 characters, past the verifier's 5 s deadline, so the row's worker was killed
    and the row scored 0 (``timeout after 5s``). Braces are now matched in one pass: the
    only closed box is 9, so the row scores 1 for a gold of 9 ("correct"), as does a plain
    ``\\boxed{9}`` scored with it."""
    row = PromptRow(
        id="m", messages=[{"role": "user", "content": "What is 4+5?"}], ground_truth="9",
        domain="math",
    )  # fmt: skip
    hostile = "<think></think>" + "\\boxed{" * 6000 + "\\boxed{9}"
    with build_scorer(RewardsConfig(workers=1)) as scorer:
        results = scorer.score([row, row], [hostile, "<think></think>\\boxed{9}"])
    record("math verifier: responses that exhaust the deadline", 1, int(results[0].score == 1.0))
    assert [r.score for r in results] == [1.0, 1.0], [r.reason for r in results]
    assert results[0].reason.startswith("correct"), results[0].reason
