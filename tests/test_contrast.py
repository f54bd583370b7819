"""Which group of study rows moves held-out pass@1 more (eval/contrast.py), on
hand-built runs whose effects are set by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from recipe_arena.eval.comparison import MEAN, ArmData, RunData, columns
from recipe_arena.eval.contrast import contrast, group_effects, verdict
from recipe_arena.eval.scores import ScoreRecord

Q = 40
IDS = [f"q{i}" for i in range(Q)]
REF = ScoreRecord("eval", 48, IDS, ["math"] * Q, IDS, [0.0] * Q)
SEEDS = [0, 1, 2, 3]


def _arm(name: str, scores_SQ: np.ndarray) -> ArmData:
    runs = [
        RunData(
            Path(f"{name}{s}"),
            s,
            {},
            ScoreRecord("eval", 48, IDS, REF.domains, IDS, list(row)),
            [],
            [],
            0.0,
        )
        for s, row in zip(SEEDS, scores_SQ, strict=True)
    ]
    return ArmData(name, runs)


def test_the_group_with_the_larger_absolute_effect_moves_the_score_more() -> None:
    """Baseline: each seed solves questions 0-19 of 40. Rewards: one arm also solves
    20-23 (+0.1), one changes nothing (0). Optimizer: one arm solves none (-0.5).
    Spreads: 0.1 against 0.5, difference -0.4; a question draw moves each by about 0.05
    and 0.08 (binomial), far from closing a gap of 0.4, so the optimizer moves pass@1
    more. A spread that took the largest signed effect would read 0.1 against -0.5 and
    say the opposite."""
    base = np.zeros((4, Q))
    base[:, :20] = 1
    better, worse = base.copy(), np.zeros((4, Q))
    better[:, 20:24] = 1
    cols = columns(REF)
    rewards = {
        "noisy": [_arm("exact", base), _arm("flip", better)],
        "chat": [_arm("judge", base), _arm("same", base.copy())],
    }
    optimizer = {"stale": [_arm("tis", base), _arm("none", worse)]}
    r = group_effects(rewards, cols, MEAN, SEEDS)
    o = group_effects(optimizer, cols, "math", SEEDS)
    assert r.names == ["noisy/flip", "chat/same"] and r.d_ASQ.shape == (2, 4, Q)
    res = contrast(("rewards", r), ("optimizer", o))
    assert res is not None
    assert res.first[:3] == ("rewards", 2, "noisy/flip") and res.second[2] == "stale/none"
    assert np.isclose(res.first[3].value, 0.1) and np.isclose(res.second[3].value, 0.5)
    assert np.isclose(res.diff.value, -0.4) and res.diff.hi < 0
    assert verdict(res) == "optimizer move held-out pass@1 more"


def test_no_verdict_when_the_spreads_overlap_or_a_group_is_empty() -> None:
    """Two groups with the same effect (+0.1 each, noisy across seeds) cannot be told
    apart; a group without finished alternatives gives no contrast."""
    rng = np.random.default_rng(0)
    base = (rng.random((4, Q)) < 0.5).astype(float)
    one = np.clip(base + (rng.random((4, Q)) < 0.2), 0, 1)
    two = np.clip(base + (rng.random((4, Q)) < 0.2), 0, 1)
    cols = columns(REF)
    a = group_effects({"x": [_arm("b", base), _arm("one", one)]}, cols, MEAN, SEEDS)
    b = group_effects({"y": [_arm("b", base), _arm("two", two)]}, cols, MEAN, SEEDS)
    res = contrast(("a", a), ("b", b))
    assert res is not None and res.diff.lo < 0 < res.diff.hi
    assert verdict(res).startswith("cannot tell")
    empty = group_effects({"z": [_arm("b", base)]}, cols, MEAN, SEEDS)
    assert contrast(("a", a), ("z", empty)) is None


def test_the_study_report_prints_the_contrast_from_its_rows() -> None:
    """The study report's section for a contrast of the study file: the rows that have
    comparisons, each group's spread and the verdict (the same runs as above); a group
    none of whose rows has finished gives the waiting line instead."""
    from recipe_arena.eval.comparison import paired_comparisons
    from recipe_arena.eval.study_report import RowResult
    from recipe_arena.eval.study_tables import contrasts_section

    base = np.zeros((4, Q))
    base[:, :20] = 1
    better = base.copy()
    better[:, 20:24] = 1
    cols = columns(REF)

    def row(name: str, arms: list[ArmData]) -> RowResult:
        comps = paired_comparisons(arms, cols)
        return RowResult(name, name, "default", Path(name), arms, comps, ["math", MEAN])

    rows = [
        row("noisy", [_arm("exact", base), _arm("flip", better)]),
        row("stale", [_arm("tis", base), _arm("none", np.zeros((4, Q)))]),
    ]
    spec = {
        "contrasts": [
            {
                "claim": "Verifiers matter more",
                "groups": [
                    {"name": "rewards", "rows": ["noisy"]},
                    {"name": "optimizer", "rows": ["stale", "adv"]},
                ],
            },
            {
                "claim": "Nothing yet",
                "groups": [{"name": "a", "rows": ["noisy"]}, {"name": "b", "rows": ["missing"]}],
            },
        ]
    }
    md = "\n".join(contrasts_section(spec, rows))
    assert "| rewards | noisy | 1 | noisy/flip | 0.100 [" in md
    assert "| optimizer | stale | 1 | stale/none | 0.500 [" in md
    assert "optimizer move held-out pass@1 more" in md
    assert md.count("Not enough finished runs") == 1
