"""RLOO advantages (leave-one-out baseline) with hand-derived values, through the
registry and the config a run uses."""

from __future__ import annotations

import pytest
import torch

from recipe_arena.advantages import ADVANTAGES, AdvantageInput, CenteredParams, compute_advantages
from recipe_arena.advantages.rloo import RLOOParams
from recipe_arena.compose import load_config


def _inp(rewards: list[float], groups: list[int]) -> AdvantageInput:
    b = len(rewards)
    mask = torch.ones(b, 3)
    mask[:, 0] = 0.0  # the prompt token
    return AdvantageInput(
        rewards_B=torch.tensor(rewards),
        group_B=torch.tensor(groups),
        mask_BL=mask,
        behavior_logprobs_BL=torch.zeros(b, 3),
    )


def test_rloo_by_hand() -> None:
    """Group 0, rewards (1, 0, 0, 1): rollout 0's others average (0 + 0 + 1) / 3 = 1/3,
    so A_0 = 1 - 1/3 = 2/3; rollout 1's others (1 + 0 + 1) / 3 = 2/3, A_1 = -2/3; so
    (2/3, -2/3, -2/3, 2/3). Group 1, rewards (0.5, 0.2): A = (0.5 - 0.2, 0.2 - 0.5) =
    (0.3, -0.3). Group 2, one rollout of reward 1: no other rollout, A = 0. Each value
    on the row's completion tokens (columns 1 and 2), 0 on the prompt token."""
    inp = _inp([1.0, 0.0, 0.0, 1.0, 0.5, 0.2, 1.0], [0, 0, 0, 0, 1, 1, 2])
    out = compute_advantages(RLOOParams(), inp)
    expected = torch.tensor([2 / 3, -2 / 3, -2 / 3, 2 / 3, 0.3, -0.3, 0.0])
    assert torch.allclose(out.advantages_BL[:, 1:], expected[:, None].expand(7, 2), atol=1e-6)
    assert torch.equal(out.advantages_BL[:, 0], torch.zeros(7))
    assert out.metrics["advantage/abs_mean"] == pytest.approx(float(expected.abs().mean()))


def test_rloo_is_the_centred_advantage_times_g_over_g_minus_1() -> None:
    """A_RLOO = G / (G - 1) * A_centred, group by group: G = 4 gives 4/3, G = 2 gives 2;
    reward_scale 10 multiplies both alike."""
    inp = _inp([1.0, 0.0, 0.0, 1.0, 0.5, 0.2], [0, 0, 0, 0, 1, 1])
    rloo = compute_advantages(RLOOParams(reward_scale=10.0), inp).advantages_BL[:, 1]
    centred = compute_advantages(CenteredParams(reward_scale=10.0), inp).advantages_BL[:, 1]
    factor = torch.tensor([4 / 3] * 4 + [2.0] * 2)
    assert torch.allclose(rloo, factor * centred, atol=1e-5)


def test_rloo_is_an_axis_option() -> None:
    """``advantage=rloo`` on the command line resolves to RLOO's parameters, found in the
    registry built from the advantages package."""
    assert ADVANTAGES["rloo"].params is RLOOParams
    cfg = load_config(["advantage=rloo", "advantage.reward_scale=2.0"])
    assert cfg.advantage == RLOOParams(reward_scale=2.0)
