"""Kimi's token budget where a level has no budget of its own: the rule's fallback and
its metrics, by hand."""

from __future__ import annotations

import torch

from recipe_arena.length_control import LengthInput, TokenBudgetParams, apply_length_control


def _inp(effort: str | None, row_budget: int | None = None) -> LengthInput:
    return LengthInput(
        rewards_G=torch.tensor([1.0, 0.0]),
        lengths_G=torch.tensor([10, 3]),
        row_budget=row_budget,
        effort=effort,
        finish_seconds_G=torch.zeros(2),
        start_versions_G=torch.zeros(2, dtype=torch.long),
        end_versions_G=torch.zeros(2, dtype=torch.long),
        engine_version=0,
    )


def test_a_level_without_a_budget_leaves_the_rewards_and_says_so() -> None:
    """budget_by_effort names only ``low`` (4 tokens). A ``high`` row has no budget:
    rewards unchanged (1, 0), budget_missing 1, no violation counted. A ``low`` row's
    budget is 4: the 10-token response (reward 1) is over it and gets the penalty -1,
    the 3-token one keeps its 0; 1 violation of 2 (frac 0.5), budget_missing 0."""
    params = TokenBudgetParams(source="effort", budget_by_effort={"low": 4})
    none = apply_length_control(params, _inp("high"))
    assert none.rewards_G.tolist() == [1.0, 0.0]
    assert none.metrics == {"length/budget_missing": 1.0}
    low = apply_length_control(params, _inp("low", row_budget=100))
    assert low.rewards_G.tolist() == [-1.0, 0.0] and low.keep_G.all()
    assert low.metrics == {
        "length/budget_violations": 1.0,
        "length/budget_violation_frac": 0.5,
        "length/budget_missing": 0.0,
    }
