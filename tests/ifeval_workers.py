"""IFEval answers scored as training scores them: ``build_scorer``'s verifier pool and
its worker processes, one row per ground truth, so a hostile table checked with
``check_ifeval`` is also checked through the path a run takes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer


def scored_by_workers(
    table: Sequence[tuple[Any, str, str]], prompt: str
) -> tuple[list[float], list[float]]:
    """The scores of each (ground truth, hostile answer, plain answer) entry of
    ``table``: the hostile answers' and the plain answers', each row asked ``prompt``."""
    rows = [
        PromptRow(
            id=f"r{k}",
            messages=[{"role": "user", "content": prompt}],
            ground_truth=gt,
            domain="ifeval",
        )
        for k, (gt, _, _) in enumerate(table)
    ]
    with build_scorer(RewardsConfig(workers=1)) as scorer:
        hostile = scorer.score(rows, [h for _, h, _ in table])
        plain = scorer.score(rows, [p for _, _, p in table])
    return [r.score for r in hostile], [r.score for r in plain]
