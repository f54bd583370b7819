"""The policy loss's clip metrics by hand: shares of the trained tokens, and zeros (not
0/0) when nothing is trained."""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch

from recipe_arena.policy_loss import LossConfig, OlmoParams, PolicyLossInput, apply_policy_loss

policy_loss = partial(apply_policy_loss, OlmoParams())
"""The default policy loss (OlmoRL's), as the learner applies it."""


def _inp(mask: list[float]) -> PolicyLossInput:
    return PolicyLossInput(
        logprobs_BL=torch.tensor([[math.log(1.5) - 1.0, -1.0, 0.0]]),
        old_logprobs_BL=torch.tensor([[-1.0, -1.0, 0.0]]),
        advantages_BL=torch.tensor([[1.0, 1.0, 0.0]]),
        mask_BL=torch.tensor([mask]),
        cfg=LossConfig(),
        constant_len=3,
    )


def test_clip_fractions_are_shares_of_the_trained_tokens() -> None:
    """Two trained tokens with A = +1, ratios 1.5 (above 1 + 0.272: the clipped branch
    is active) and 1: clip_high_frac = 1 / 2, clip_low_frac 0, ratio_mean (1.5 + 1) / 2
    = 1.25. Nothing trained: every fraction 0 and the loss 0."""
    m = policy_loss(_inp([1.0, 1.0, 0.0])).metrics
    assert m["loss/clip_high_frac"] == pytest.approx(0.5)
    assert m["loss/clip_low_frac"] == 0.0
    assert m["loss/ratio_mean"] == pytest.approx(1.25)
    empty = policy_loss(_inp([0.0, 0.0, 0.0]))
    assert empty.loss.item() == 0.0
    for k in ("loss/clip_high_frac", "loss/clip_low_frac", "loss/ratio_mean"):
        assert empty.metrics[k] == 0.0, k


def test_zero_advantage_tokens_are_never_clipped_and_the_policy_metric_is_a_mean() -> None:
    """Four trained tokens, token normalisation, clip range [0.8, 1.272]:

        token  A      ratio  -min(r A, clip(r) A)
        0      0      2.0    0      (above 1.272, but A = 0: no clip acts)
        1      0      0.5    0      (below 0.8, A = 0 likewise)
        2      +1     1.0    -1
        3      -0.5   1.0    +0.5

    A clip fraction counts tokens whose clipped branch is the active one, which needs a
    non-zero advantage: clip_high_frac = clip_low_frac = 0. ratio_mean = (2 + 0.5 + 1 +
    1) / 4 = 1.125. loss/policy and the loss are the token mean (0 + 0 - 1 + 0.5) / 4 =
    -0.125 (not the sum, -0.5)."""
    inp = PolicyLossInput(
        logprobs_BL=torch.tensor([[math.log(2.0), math.log(0.5), -1.0, -2.0]]),
        old_logprobs_BL=torch.tensor([[0.0, 0.0, -1.0, -2.0]]),
        advantages_BL=torch.tensor([[0.0, 0.0, 1.0, -0.5]]),
        mask_BL=torch.ones(1, 4),
        cfg=LossConfig(),
        constant_len=4,
    )
    res = policy_loss(inp)
    m = res.metrics
    assert (m["loss/clip_high_frac"], m["loss/clip_low_frac"]) == (0.0, 0.0)
    assert m["loss/ratio_mean"] == pytest.approx(1.125)
    assert m["loss/policy"] == pytest.approx(-0.125)
    assert res.loss.item() == pytest.approx(-0.125)
