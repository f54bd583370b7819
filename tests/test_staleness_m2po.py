"""M2PO (``staleness=m2po``): the fewest tokens of largest squared log-ratio
d_t = log(p_old / p_behaviour) are masked so that the rest have mean d^2 <= tau.
Hand-derived, against a greedy loop of the published procedure, and wrong variants the
checks must reject."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from recipe_arena.staleness.base import StalenessInput, StalenessResult
from recipe_arena.staleness.m2po import M2POParams, m2po
from tests.wrong_variants import assert_fails_a_check

Fn = Callable[[StalenessInput, M2POParams], StalenessResult]


def _inp(d: list[list[float]], mask: list[list[float]]) -> StalenessInput:
    """Behaviour logprobs -1 everywhere, p_old = behaviour + d."""
    beh_BL = torch.full((len(d), len(d[0])), -1.0)
    old_BL = beh_BL + torch.tensor(d)
    return StalenessInput(
        logprobs_BL=beh_BL,  # the current policy: M2PO must read pi_old, not this
        old_logprobs_BL=old_BL,
        behavior_logprobs_BL=beh_BL,
        advantages_BL=torch.ones_like(old_BL),
        mask_BL=torch.tensor(mask),
        versions_BL=torch.zeros_like(old_BL, dtype=torch.long),
        learner_version=0,
    )


def _hand() -> StalenessInput:
    """d = (0.1, -0.3, 0.2, 0.5 | 0.0, 0.4, pad 3.0): d^2 = (.01, .09, .04, .25 | 0, .16)
    on the 6 trained tokens, sum 0.55."""
    return _inp([[0.1, -0.3, 0.2, 0.5], [0.0, 0.4, 3.0, 0.0]], [[1, 1, 1, 1], [1, 1, 0, 0]])


def _check_hand(fn: Fn) -> None:
    """tau 0.04. M2 = 0.55/6 = 0.0917 > tau. Mask the largest, 0.25: 0.30/5 = 0.06 > tau;
    the next, 0.16: 0.14/4 = 0.035 <= tau. Masked: (0, 3) and (1, 1); kept M2 0.035,
    masked fraction 2/6, weights 1. tau 0.1: nothing masked (0.0917 <= 0.1). tau 0: only
    the d = 0 token stays."""
    out = fn(_hand(), M2POParams())
    assert out.mask_BL.tolist() == [[1, 1, 1, 0], [1, 0, 0, 0]]
    assert torch.equal(out.token_weights_BL, torch.ones(2, 4))
    assert out.metrics["staleness/m2"] == pytest.approx(0.55 / 6, rel=1e-5)
    assert out.metrics["staleness/m2_kept"] == pytest.approx(0.035, rel=1e-4)
    assert out.metrics["staleness/m2po_masked_frac"] == pytest.approx(2 / 6)
    loose = fn(_hand(), M2POParams(m2_threshold=0.1))
    assert loose.mask_BL.tolist() == [[1, 1, 1, 1], [1, 1, 0, 0]]
    strict = fn(_hand(), M2POParams(m2_threshold=0.0))
    assert strict.mask_BL.tolist() == [[0, 0, 0, 0], [1, 0, 0, 0]]


def _reference(inp: StalenessInput, p: M2POParams) -> list[list[float]]:
    """The published procedure as a loop: while the kept tokens' mean d^2 exceeds tau,
    mask the kept token of largest d^2 (first in row-major order on ties)."""
    B, T = inp.mask_BL.shape
    d2 = {
        (b, t): (float(inp.old_logprobs_BL[b, t]) - float(inp.behavior_logprobs_BL[b, t])) ** 2
        for b in range(B)
        for t in range(T)
        if inp.mask_BL[b, t] > 0
    }
    kept = dict(d2)
    while kept and sum(kept.values()) / len(kept) > p.m2_threshold:
        worst = max(kept, key=lambda k: (kept[k], -k[0], -k[1]))
        del kept[worst]
    return [[1.0 if (b, t) in kept else 0.0 for t in range(T)] for b in range(B)]


def _check_random(fn: Fn) -> None:
    """Random batches (d ~ N(0, s^2), s in 0.05 / 0.2 / 0.5, a quarter of tokens
    untrained) over four thresholds: the mask equals the greedy loop's."""
    gen = torch.Generator().manual_seed(2)
    for tau in (0.0, 0.01, 0.04, 0.2):
        for scale in (0.05, 0.2, 0.5):
            d = torch.randn(5, 6, generator=gen) * scale
            mask = (torch.rand(5, 6, generator=gen) > 0.25).float()
            inp = _inp(d.tolist(), mask.tolist())
            out = fn(inp, M2POParams(m2_threshold=tau))
            assert out.mask_BL.tolist() == _reference(inp, M2POParams(m2_threshold=tau))


def test_m2po_by_hand() -> None:
    _check_hand(m2po)


def test_m2po_matches_the_published_procedure_on_random_batches() -> None:
    _check_random(m2po)


def _wrong_per_token_threshold(inp: StalenessInput, p: M2POParams) -> StalenessResult:
    """Wrong: masks every token with d^2 > tau (a per-token clip, not the batch moment)."""
    d2_BL = (inp.old_logprobs_BL - inp.behavior_logprobs_BL).square()
    keep_BL = inp.mask_BL * (d2_BL <= p.m2_threshold).float()
    return StalenessResult(
        torch.ones_like(keep_BL), torch.zeros_like(keep_BL), keep_BL, m2po(inp, p).metrics
    )


def _wrong_padding_counted(inp: StalenessInput, p: M2POParams) -> StalenessResult:
    """Wrong: the moment is taken over every position, padding included."""
    out = m2po(
        StalenessInput(
            inp.logprobs_BL,
            inp.old_logprobs_BL,
            inp.behavior_logprobs_BL,
            inp.advantages_BL,
            torch.ones_like(inp.mask_BL),
            inp.versions_BL,
            inp.learner_version,
        ),
        p,
    )
    keep_BL = out.mask_BL * inp.mask_BL
    return StalenessResult(out.token_weights_BL, out.extra_loss_BL, keep_BL, out.metrics)


def _wrong_current_policy(inp: StalenessInput, p: M2POParams) -> StalenessResult:
    """Wrong: d from the current policy's logprobs instead of pi_old's."""
    return m2po(
        StalenessInput(
            inp.logprobs_BL,
            inp.logprobs_BL,
            inp.behavior_logprobs_BL,
            inp.advantages_BL,
            inp.mask_BL,
            inp.versions_BL,
            inp.learner_version,
        ),
        p,
    )


@pytest.mark.parametrize(
    "wrong", [_wrong_per_token_threshold, _wrong_padding_counted, _wrong_current_policy]
)
def test_wrong_variants_fail_the_checks(wrong: Fn) -> None:
    """Each named wrong variant fails the hand-derived check or the reference check."""
    assert_fails_a_check(wrong, _check_hand, _check_random)


def test_nothing_trained_masks_nothing() -> None:
    """No trained token: M2 is 0 by convention, the mask stays empty, nothing is dropped."""
    out = m2po(_inp([[0.5, 0.5]], [[0, 0]]), M2POParams())
    assert out.mask_BL.tolist() == [[0, 0]]
    assert out.metrics["staleness/m2"] == 0.0
    assert out.metrics["staleness/m2_kept"] == 0.0
