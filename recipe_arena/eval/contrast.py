"""Which group of design choices moves held-out pass@1 more: DeepSeek-V4.1-Flash's
claim that the verifier and the environment matter more than the optimizer, put to a
test across the rows of a study.

A group is a set of study rows (the reward rows; the stale-data and advantage rows).
Its spread is the largest absolute effect among its alternatives (A/A controls left
out): the mean paired difference arm - OLMo 3's choice over seeds and questions, on one
domain or the mean over domains. The two spreads and their difference get percentile
intervals from one crossed bootstrap (``stats.bootstrap_mean``'s scheme): each
replicate draws the seeds and the questions with replacement, the same draw for every
arm of both groups, so the shared baseline runs and the shared questions are resampled
together, as the data were drawn.

Two caveats the report states: the largest of several noisy effects is biased away
from zero, the more so the more arms a group has (the table gives each group's count);
and with 4 seeds a seed bootstrap has only 35 distinct draws, so the interval is
approximate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recipe_arena.eval import stats
from recipe_arena.eval.comparison import ArmData, Columns, domain_columns, paired_runs

N_BOOT = 4000
"""Bootstrap replicates of the contrast."""


@dataclass(frozen=True)
class Effects:
    """Every alternative of a group of rows, as paired differences on one domain."""

    names: list[str]
    """``row/arm`` of each alternative."""
    d_ASQ: np.ndarray
    """arm - baseline per alternative, seed (the seeds all share) and question (those
    that share a source averaged into one, as the paired test does)."""


def group_effects(
    rows: dict[str, list[ArmData]], cols: Columns, domain: str, seeds: list[int]
) -> Effects:
    """The paired differences of every alternative (not A/A controls) of ``rows`` (row
    name -> its arms, OLMo 3's first) on ``domain`` (or ``MEAN``, questions weighted so
    that each domain counts equally), over ``seeds``."""
    names, mats = [], []
    idx, w, clusters = domain_columns(cols, domain)
    for row, arms in rows.items():
        base = arms[0]
        for arm in arms[1:]:
            if arm.control:
                continue
            a, b = paired_runs(arm, base)
            by_a = {r.seed: r for r in a}
            by_b = {r.seed: r for r in b}
            if not set(seeds) <= set(by_a) & set(by_b):
                continue
            a_SQ = np.array([by_a[s].final.scores for s in seeds])[:, idx]
            b_SQ = np.array([by_b[s].final.scores for s in seeds])[:, idx]
            names.append(f"{row}/{arm.name}")
            mats.append(stats.paired_differences(a_SQ, b_SQ, w, clusters, "contrast"))
    return Effects(names, np.array(mats) if mats else np.zeros((0, len(seeds), 1)))


@dataclass(frozen=True)
class Contrast:
    first: tuple[str, int, str, stats.Estimate]
    """(group name, alternatives, the alternative with the largest |effect|, the
    spread: that |effect| with its bootstrap interval)."""
    second: tuple[str, int, str, stats.Estimate]
    diff: stats.Estimate
    """First spread minus second, with its bootstrap interval."""


def contrast(
    first: tuple[str, Effects], second: tuple[str, Effects], seed: int = 0
) -> Contrast | None:
    """The two groups' spreads and their difference; None when a group is empty or
    they do not share their seeds and questions."""
    (n1, e1), (n2, e2) = first, second
    if not e1.names or not e2.names or e1.d_ASQ.shape[1:] != e2.d_ASQ.shape[1:]:
        return None
    d = np.concatenate([e1.d_ASQ, e2.d_ASQ])
    k = len(e1.names)
    _, s, q = d.shape
    rng = np.random.default_rng(seed)
    w_s = rng.multinomial(s, np.full(s, 1.0 / s), size=N_BOOT).astype(np.float64)
    w_q = rng.multinomial(q, np.full(q, 1.0 / q), size=N_BOOT).astype(np.float64)
    means_BA = np.einsum("bs,asq,bq->ba", w_s, d, w_q) / (s * q)
    point = d.mean(axis=(1, 2))
    spread1, spread2 = np.abs(means_BA[:, :k]).max(1), np.abs(means_BA[:, k:]).max(1)

    def est(point_value: float, boot: np.ndarray) -> stats.Estimate:
        lo, hi = np.quantile(boot, [stats.ALPHA / 2, 1 - stats.ALPHA / 2])
        return stats.Estimate(point_value, float(lo), float(hi))

    p1, p2 = float(np.abs(point[:k]).max()), float(np.abs(point[k:]).max())
    top1 = e1.names[int(np.abs(point[:k]).argmax())]
    top2 = e2.names[int(np.abs(point[k:]).argmax())]
    return Contrast(
        (n1, k, top1, est(p1, spread1)),
        (n2, len(e2.names), top2, est(p2, spread2)),
        est(p1 - p2, spread1 - spread2),
    )


def verdict(c: Contrast) -> str:
    """Which group's spread is larger: by the difference's interval excluding 0."""
    if c.diff.lo > 0:
        return f"{c.first[0]} move held-out pass@1 more"
    if c.diff.hi < 0:
        return f"{c.second[0]} move held-out pass@1 more"
    return "cannot tell which moves it more (the interval of the difference holds 0)"
