"""An independent implementation of what every policy loss shares, written as plain
loops, for the reference checks of the ``policy_loss`` entries.

A test supplies the published per-row objective (the policy term of each trained token
of one row, from Python floats and scalar tensors); this module adds the staleness
weight w, beta * k3 to the reference policy and the extra loss token by token, reduces
under the three normalisation rules by explicit sums, and compares value and gradient
in logp_theta with the entry's on random batches over every combination of the shared
switches: normalisation (token, sample, constant), staleness weights (none, random),
reference KL (beta 0, 0.1) and extra loss (none, random).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from recipe_arena.policy_loss.base import LossConfig, PolicyLossInput

RowTerms = Callable[[Sequence[torch.Tensor], Sequence[float], float, Any], list[torch.Tensor]]
"""(logp_theta of the row's trained tokens (scalar leaves' views), their logp_old, the
row's advantage, params) -> the policy term of each of those tokens."""

CONSTANT_LEN = 7


def reference_loss(
    row_terms: RowTerms,
    params: Any,
    cfg: LossConfig,
    logp: torch.Tensor,
    old: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    weights: torch.Tensor | None,
    ref: torch.Tensor | None,
    extra: torch.Tensor | None,
) -> torch.Tensor:
    """The loss as loops over rows and tokens (module docstring)."""
    B, T = mask.shape
    row_sums, row_counts = [], []
    for b in range(B):
        trained = [t for t in range(T) if mask[b, t] > 0]
        if not trained:
            row_sums.append(torch.zeros(()))
            row_counts.append(0)
            continue
        a_b = sum(float(adv[b, t]) for t in trained) / len(trained)
        terms = row_terms(
            [logp[b, t] for t in trained], [float(old[b, t]) for t in trained], a_b, params
        )
        total = torch.zeros(())
        for t, pg in zip(trained, terms, strict=True):
            tok = pg * (1.0 if weights is None else float(weights[b, t]))
            if cfg.kl_beta > 0:
                assert ref is not None
                d = float(ref[b, t]) - logp[b, t]
                tok = tok + cfg.kl_beta * (torch.exp(d) - d - 1.0)
            if extra is not None:
                tok = tok + float(extra[b, t])
            total = total + tok
        row_sums.append(total)
        row_counts.append(len(trained))
    if cfg.normalisation == "token":
        return sum(row_sums, torch.zeros(())) / max(sum(row_counts), 1)
    if cfg.normalisation == "sample":
        per_row = [s / n for s, n in zip(row_sums, row_counts, strict=True) if n > 0]
        return sum(per_row, torch.zeros(())) / max(len(per_row), 1)
    return sum(row_sums, torch.zeros(())) / (B * CONSTANT_LEN)


def check_against_reference(
    fn: Callable[[PolicyLossInput, Any], Any],
    row_terms: RowTerms,
    params_list: Sequence[Any],
    seed: int = 0,
    old_spread: float = 0.3,
) -> None:
    """``fn`` equals the loop reference in value and gradient on random batches (4 rows
    of 5 tokens, one row untrained, log pi_old = log pi_theta + N(0, old_spread^2) so
    ratios leave every clip range, advantages of both signs) over every combination of
    the shared switches and each of ``params_list``."""
    gen = torch.Generator().manual_seed(seed)
    switches = itertools.product(
        ("token", "sample", "constant"), (False, True), (0.0, 0.1), (False, True)
    )
    for (how, use_w, beta, use_extra), params in itertools.product(switches, params_list):
        B, T = 4, 5
        base = -torch.rand(B, T, generator=gen) * 3 - 0.05
        old = base + torch.randn(B, T, generator=gen) * old_spread
        adv = torch.randn(B, 1, generator=gen).expand(B, T).clone()
        mask = (torch.rand(B, T, generator=gen) > 0.3).float()
        mask[1] = 0.0
        mask[0, 0] = 1.0
        weights = torch.rand(B, T, generator=gen) * 1.5 + 0.5 if use_w else None
        ref = base + torch.randn(B, T, generator=gen) * 0.2
        extra = torch.rand(B, T, generator=gen) if use_extra else None
        cfg = LossConfig(normalisation=how, kl_beta=beta)

        x = base.clone().requires_grad_(True)
        out = fn(PolicyLossInput(x, old, adv, mask, cfg, CONSTANT_LEN, weights, extra, ref), params)
        out.loss.backward()
        y = base.clone().requires_grad_(True)
        expected = reference_loss(row_terms, params, cfg, y, old, adv, mask, weights, ref, extra)
        expected.backward()
        case = f"{how=} {use_w=} {beta=} {use_extra=} {params!r}"
        assert math.isclose(
            float(out.loss.detach()), float(expected.detach()), rel_tol=1e-5, abs_tol=1e-6
        ), case
        assert x.grad is not None and y.grad is not None
        assert torch.allclose(x.grad, y.grad, rtol=1e-4, atol=1e-6), case
        # the numerator / count split the learner accumulates over micro-batches
        assert math.isclose(
            float(out.numerator.detach()) / max(out.count, 1.0),
            float(out.loss.detach()),
            rel_tol=1e-6,
        )
