"""Metrics of the sampled groups, with stable names (reward/…, length/…)."""

from __future__ import annotations

import collections
import statistics
from collections.abc import Sequence

import torch

from recipe_arena.core.types import Rollout, RolloutGroup

PASS_THRESHOLD = 1.0 - 1e-6
"""A rollout passes when its verifier score is 1 (all-or-nothing verifiers)."""

LENGTH_PERCENTILES = {25: 4, 50: 9, 75: 14, 90: 17}
"""Percentile -> index among the 19 cut points of ``statistics.quantiles(n=20)``."""


def length_percentiles(lengths: Sequence[int]) -> dict[int, float]:
    """The ``LENGTH_PERCENTILES`` of ``lengths`` (linear interpolation between order
    statistics); every one is the value itself when there is only one."""
    if len(lengths) == 1:
        return {pct: float(lengths[0]) for pct in LENGTH_PERCENTILES}
    q = statistics.quantiles(lengths, n=20, method="inclusive")
    return {pct: float(q[i]) for pct, i in LENGTH_PERCENTILES.items()}


def group_metrics(groups: Sequence[RolloutGroup]) -> dict[str, float]:
    """Reward per domain and overall, pass rate, response length (mean, p50, p95),
    fraction truncated at the response cap, over every group the learner received; and
    the scorer's counters of those groups (``reward/<domain>/checks``, ``.../timeout``,
    ``reward/chat/judge_unparsable``, ``reward/chat/tournament_games``, ...; the actor
    records each group's in ``RolloutGroup.metrics``), summed over them
    (``group_counters``)."""
    out: dict[str, float] = group_counters(groups, "reward/")
    rollouts = [r for g in groups for r in g.rollouts]
    if not rollouts:
        return out
    by_domain: dict[str, list[float]] = collections.defaultdict(list)
    for r in rollouts:
        by_domain[r.domain].append(r.reward)
    for d, rs in sorted(by_domain.items()):
        out[f"reward/{d}/mean"] = sum(rs) / len(rs)
        out[f"reward/{d}/pass_rate"] = sum(x >= PASS_THRESHOLD for x in rs) / len(rs)
    verified = [r for r in rollouts if r.verifier_reward is not None]
    if verified:  # spurious rewards or flipped labels: what the verifiers would have paid
        out.update(_verifier_metrics(verified))
    rewards = [r.reward for r in rollouts]
    out["reward/mean"] = sum(rewards) / len(rewards)
    out["reward/pass_rate"] = sum(x >= PASS_THRESHOLD for x in rewards) / len(rewards)
    lengths = torch.tensor([len(r.completion_tokens) for r in rollouts], dtype=torch.float32)
    out["length/mean"] = float(lengths.mean())
    out["length/p50"] = float(torch.quantile(lengths, 0.5))
    out["length/p95"] = float(torch.quantile(lengths, 0.95))
    out["length/truncated_frac"] = sum(r.finish_reason == "length" for r in rollouts) / len(
        rollouts
    )
    return out


def _verifier_metrics(rollouts: Sequence[Rollout]) -> dict[str, float]:
    """``reward/verifier/mean`` and ``reward/<domain>/verifier_mean``: the verifiers' mean
    score of rollouts trained on another reward (spurious-reward control, label flips)."""
    by_domain: dict[str, list[float]] = collections.defaultdict(list)
    for r in rollouts:
        assert r.verifier_reward is not None
        by_domain[r.domain].append(r.verifier_reward)
    out = {f"reward/{d}/verifier_mean": sum(v) / len(v) for d, v in sorted(by_domain.items())}
    scores = [v for vs in by_domain.values() for v in vs]
    out["reward/verifier/mean"] = sum(scores) / len(scores)
    return out


def length_metrics(
    received: Sequence[RolloutGroup], trained: Sequence[RolloutGroup]
) -> dict[str, float]:
    """Sampled against trained response lengths, and what length control counted.

    ``length/sampled_*``: every completion of every group the learner received (stale,
    zero-variance and length-control-dropped ones too); ``length/trained_*``: the
    rollouts of the groups it trained on. Means and counts, so runs can be pooled, and
    the 25th, 50th, 75th and 90th percentiles (tokens, linear interpolation between order
    statistics), so the shapes can be compared too. What length control reports per
    group (``length/budget_violations``, ``length/discarded_short``,
    ``length/budget_violation_frac``, ...) is combined over the received groups as
    ``group_counters`` says: counts summed, fractions and values averaged."""
    out: dict[str, float] = {}
    sampled = [n for g in received for n in (g.sampled_lengths or _lengths(g))]
    kept = [n for g in trained for n in _lengths(g)]
    for name, lengths in (("sampled", sampled), ("trained", kept)):
        if lengths:
            out[f"length/{name}_mean"] = sum(lengths) / len(lengths)
            out[f"length/{name}_n"] = float(len(lengths))
            for pct, q in length_percentiles(lengths).items():
                out[f"length/{name}_p{pct}"] = q
    out.update(group_counters(received, "length/"))
    return out


FRACTION_SUFFIX = "_frac"
"""A per-group metric named ``..._frac`` is a share of the group's sampled rollouts (0-1)."""
VALUE_SUFFIXES = ("_steps",)
"""Per-group metrics named so are values of the group (``length/horizon_steps``: decode
steps), not counts."""


def group_counters(groups: Sequence[RolloutGroup], prefix: str) -> dict[str, float]:
    """The per-group metrics (``RolloutGroup.metrics``) under ``prefix`` of ``groups``,
    combined into one value each:

        count     (any other name)   sum over the groups
        fraction  (``..._frac``)      sum_g f_g n_g / sum_g n_g over the groups reporting
                                     it, n_g the group's sampled rollouts: the share of
                                     all their rollouts, in [0, 1]
        value     (``..._steps``)     mean over the groups reporting it

    Why: summing a fraction over 4 groups reads as up to 4 (a budget violation share
    of 2.5 was logged that way), and summing a per-group value multiplies it by the
    group count."""
    sums: dict[str, float] = collections.defaultdict(float)
    weights: dict[str, float] = collections.defaultdict(float)
    for g in groups:
        n = float(len(g.sampled_lengths) or len(g.rollouts) or 1)
        for k, v in g.metrics.items():
            if not k.startswith(prefix):
                continue
            if k.endswith(FRACTION_SUFFIX):
                sums[k] += float(v) * n
                weights[k] += n
            elif k.endswith(VALUE_SUFFIXES):
                sums[k] += float(v)
                weights[k] += 1.0
            else:
                sums[k] += float(v)
    return {k: v / weights[k] if k in weights else v for k, v in sums.items()}


def _lengths(group: RolloutGroup) -> list[int]:
    return [len(r.completion_tokens) for r in group.rollouts]
