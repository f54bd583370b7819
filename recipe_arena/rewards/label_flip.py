"""Noisy verifiers: each training reward flipped, r -> 1 - r, with probability p.

A verifier whose verdicts are wrong at a rate p, false positives and false negatives
alike: a correct response paid 0 and a wrong one paid 1, each with probability p. This
is the reward noise of the noisy-reward RLVR studies (Lv et al. 2025, "The Climb Carves
Wisdom Deeper Than the Summit: On the Noisy Rewards in Learning to Reason", which flip
a share of a math verifier's outputs). Partial credit (code's
``pass_fraction``, IFEval's ``ifeval_partial_credit``) flips the same way, r -> 1 - r,
an inverted verdict; the verifiers' scores are in [0, 1] (``RewardResult``), a timeout
or error scores 0 and flips like any 0. A reward outside [0, 1] or not a number, which
no verifier returns, is left as it is.

The flips are drawn like the spurious-reward control's bits (``rewards.spurious``): one
uniform draw per rollout, in sample order, from a generator of their own seeded by the
draw's sampling seed (``ActorTask.seed``, fixed by the run seed and the prompt cursor)
and a salt. A rerun flips the same labels, under the deterministic schedule the run is
bitwise reproducible, and which rollouts flip cannot correlate with their tokens. The
actor applies it where the scorer's reward enters the group, before length control, at
training only: held-out evaluation scores with the exact verifiers.
"""

from __future__ import annotations

import math
import random

import torch

LABEL_FLIP_SALT = "label-flip"
"""Mixed into the seed so the flip stream is neither the sampling stream nor the
spurious-reward stream of the same seed."""


def flip_mask(seed: int, n: int, p: float) -> torch.Tensor:
    """bool (n,): which of ``n`` rollouts have their label flipped, each with probability
    ``p`` in [0, 1], fixed by ``seed`` (rollout i flips when the i-th uniform draw is
    below p: p = 0 flips none, p = 1 all)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"label flip probability p={p} is not in [0, 1]")
    rng = random.Random(f"{LABEL_FLIP_SALT}/{seed}")
    return torch.tensor([rng.random() < p for _ in range(n)], dtype=torch.bool)


def flip_labels(seed: int, rewards_G: torch.Tensor, p: float) -> tuple[torch.Tensor, int]:
    """``rewards_G`` with each reward in [0, 1] drawn by ``flip_mask(seed, G, p)``
    replaced by 1 - r (others as they are), and how many were flipped."""
    finite = [not math.isnan(r) and 0.0 <= r <= 1.0 for r in rewards_G.tolist()]
    flip = flip_mask(seed, rewards_G.shape[0], p) & torch.tensor(finite, dtype=torch.bool)
    return torch.where(flip, 1.0 - rewards_G, rewards_G), int(flip.sum())
