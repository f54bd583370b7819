"""Spurious-reward control (Shao et al. 2025, "Spurious Rewards: Rethinking Training
Signals in RLVR"; OLMo 3 used it to check its decontamination).

Every rollout's reward is replaced by a random bit, 1 with probability ``p``, drawn
independently of the response: real learning cannot occur, so a held-out score that
rises anyway points to an evaluation set the model saw before (contamination) or to a
gain that comes from the training format rather than from correctness.

The bits are seeded by the draw's sampling seed (``ActorTask.seed``, itself fixed by the
run seed and the prompt cursor), through a generator of their own: a rerun draws the
same rewards, and they cannot correlate with the sampled tokens. The actor applies the
control where the scorer's reward enters the group, so every recipe and strategy can use
it; length control then acts on the random rewards as it would on the verifier's.
"""

from __future__ import annotations

import random

import torch

SPURIOUS_SALT = "spurious-reward"
"""Mixed into the seed so the reward stream is not the sampling stream of the same seed."""


def spurious_rewards(seed: int, n: int, p: float) -> torch.Tensor:
    """``n`` rewards in {0.0, 1.0}, each 1 with probability ``p``, fixed by ``seed``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"spurious reward probability p={p} is not in [0, 1]")
    rng = random.Random(f"{SPURIOUS_SALT}/{seed}")
    return torch.tensor([1.0 if rng.random() < p else 0.0 for _ in range(n)])
