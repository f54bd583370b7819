"""Kimi K3's token budget (Kimi Team 2026, "Kimi K3", arXiv:2607.24653; seed Table 9.2,
row "Length control": "verbose outputs lose").

    r'_i = penalty (-1)   if len_i > budget,   else r_i
    budget = the row's token_budget (source "row", when the row has one),
             else budget_by_effort[row.effort]   (else no budget: r' = r)

A hard verifier bolted onto the learned one: a response longer than its problem's
budget loses whatever its answer, so the policy learns to fit its reasoning to the
effort a problem asks for.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from recipe_arena.core.lazy import torch
from recipe_arena.data.schema import Effort
from recipe_arena.length_control.base import LengthInput, LengthResult
from recipe_arena.strategy import Strategy, StrategyParams


class TokenBudgetParams(StrategyParams):
    name: Literal["token_budget"] = "token_budget"
    penalty: float = Field(-1.0, examples=[-0.5])
    """Reward of a response over its budget (reward units; -1 in Kimi K3)."""
    source: Literal["row", "effort"] = "row"
    """row: the row's own token_budget, falling back to the effort level's; effort: the
    effort level's budget always (one budget per level, as the report derives it)."""
    budget_by_effort: dict[Effort, int] = Field(
        default={"low": 64, "medium": 96, "high": 160},
        examples=[{"low": 64, "medium": 40, "high": 160}],
    )
    """Tokens allowed per effort level (>= 1). The micro world's reference responses
    (think block and answer, characters = tokens) run about 30-60 tokens at low effort,
    40-80 at medium and 60-150 at high."""


def budget_of(inp: LengthInput, params: TokenBudgetParams) -> int | None:
    """The rollouts' budget under ``params.source`` (module docstring); None: none."""
    if params.source == "row" and inp.row_budget is not None:
        return inp.row_budget
    if inp.effort is not None and inp.effort in params.budget_by_effort:
        return int(params.budget_by_effort[inp.effort])
    return None


def token_budget(inp: LengthInput, params: TokenBudgetParams) -> LengthResult:
    """r' = penalty where the response exceeds its budget; every rollout kept."""
    budget = budget_of(inp, params)
    keep_G = torch.ones_like(inp.rewards_G, dtype=torch.bool)
    if budget is None:
        return LengthResult(inp.rewards_G, keep_G, {"length/budget_missing": 1.0})
    over_G = inp.lengths_G > budget
    rewards_G = torch.where(over_G, torch.full_like(inp.rewards_G, params.penalty), inp.rewards_G)
    return LengthResult(
        rewards_G,
        keep_G,
        {
            "length/budget_violations": float(over_G.sum()),
            "length/budget_violation_frac": float(over_G.float().mean()),
            "length/budget_missing": 0.0,
        },
    )


STRATEGY = Strategy(TokenBudgetParams, token_budget)
