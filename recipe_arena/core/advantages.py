"""Group-relative advantages (OlmoRL, seed 'GRPO' and 'OLMoRL').

One scalar per rollout, broadcast later to every token of that rollout.

Deviation from vanilla GRPO: the default is ``centered`` (no division by the group's
standard deviation), as in OLMo 3 and Dr.GRPO; ``standard`` keeps GRPO's division.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

AdvantageFn = Callable[[torch.Tensor, float], torch.Tensor]


def centered_advantages(rewards_G: torch.Tensor, std_eps: float = 1e-6) -> torch.Tensor:
    """A_i = r_i - mean(r)  (OLMo 3; Liu et al. 2025, Dr.GRPO). ``std_eps`` is unused."""
    del std_eps
    return rewards_G - rewards_G.mean()


def standard_advantages(rewards_G: torch.Tensor, std_eps: float = 1e-6) -> torch.Tensor:
    """A_i = (r_i - mean(r)) / (std(r) + eps)  (Shao et al. 2024, GRPO; population std)."""
    centred_G = rewards_G - rewards_G.mean()
    return centred_G / (rewards_G.std(unbiased=False) + std_eps)


ADVANTAGES: dict[str, AdvantageFn] = {
    "centered": centered_advantages,
    "standard": standard_advantages,
}


def compute_advantages(
    rewards_G: torch.Tensor, name: str, reward_scale: float = 1.0, std_eps: float = 1e-6
) -> torch.Tensor:
    """Advantages of one group after scaling rewards by ``reward_scale``."""
    if name not in ADVANTAGES:
        raise ValueError(f"unknown advantage {name!r}; allowed: {sorted(ADVANTAGES)}")
    return ADVANTAGES[name](rewards_G.float() * reward_scale, std_eps)
