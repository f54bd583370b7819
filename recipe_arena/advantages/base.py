"""The shape every advantage strategy shares: a pure function over a learner batch.

In: each row's reward, the group (prompt) it belongs to, the completion-token mask, the
engine's behaviour logprobs and, when a teacher scored the rollouts (on-policy
distillation), the teacher's logprobs of the sampled tokens. Out: per-token advantages
``advantages_BL`` (0 off the mask) and metrics. Group-relative RLVR advantages broadcast
one value per row; teacher-based ones (clip(logp_teacher - logp_student, -c, c), Kimi
K3's MOPD) differ per token: both are entries of the one registry, so the loop and the
batch builder do not change when distillation lands. The input and result types are
the core's (``core.hooks``): the loop hands the configured strategy, bound to its
parameters, to the batch builder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recipe_arena.core.hooks import AdvantageInput as AdvantageInput
from recipe_arena.core.hooks import AdvantageResult as AdvantageResult
from recipe_arena.core.lazy import torch

AdvantageFn = Callable[[AdvantageInput, Any], AdvantageResult]
"""An advantage strategy's function: (input, its parameters) -> result."""


def group_mean(values_B: torch.Tensor, group_B: torch.Tensor) -> torch.Tensor:
    """Each row's group mean of ``values``, per row."""
    n_groups = int(group_B.max()) + 1 if group_B.numel() else 0
    sums_G = torch.zeros(n_groups, dtype=values_B.dtype).index_add_(0, group_B, values_B)
    counts_G = torch.zeros(n_groups, dtype=values_B.dtype).index_add_(
        0, group_B, torch.ones_like(values_B)
    )
    return (sums_G / counts_G.clamp(min=1.0))[group_B]


def broadcast(adv_B: torch.Tensor, mask_BL: torch.Tensor) -> AdvantageResult:
    """One advantage per row on every completion token of the row."""
    adv_BL = adv_B[:, None] * mask_BL
    return AdvantageResult(adv_BL, {"advantage/abs_mean": float(adv_B.abs().mean())})
