"""OlmoRL's loss (``policy_loss=olmo``, the default) against a loop of its documented
formula, values and gradients, over every combination of the shared switches and three
clip ranges: the move to the ``policy_loss`` axis left it numerically as it was."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from policy_loss_reference import check_against_reference

from recipe_arena.policy_loss import LossConfig, OlmoParams, apply_policy_loss


class _Clip:
    """The clip range the reference reads (olmo takes it from ``loss.*``)."""

    def __init__(self, low: float, high: float) -> None:
        self.clip_low, self.clip_high = low, high

    def __repr__(self) -> str:
        return f"clip({self.clip_low}, {self.clip_high})"


def _row_terms(
    logp: Sequence[torch.Tensor], old: Sequence[float], adv: float, p: Any
) -> list[torch.Tensor]:
    """PPO's clipped surrogate per token: -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A)."""
    out = []
    for lp, lo in zip(logp, old, strict=True):
        r = torch.exp(lp - lo)
        c = torch.clamp(r, 1.0 - p.clip_low, 1.0 + p.clip_high)
        out.append(-torch.minimum(r * adv, c * adv))
    return out


def test_olmo_matches_its_formula_on_random_batches() -> None:
    """The reference reads the clip range from ``_Clip``; the loss from ``loss.clip_*``,
    so each range runs as its own LossConfig through a thin adapter."""
    for low, high in ((0.2, 0.272), (0.1, 0.1), (0.5, 2.0)):

        def olmo(inp: Any, clip: _Clip, low: float = low, high: float = high) -> Any:
            cfg = LossConfig(
                normalisation=inp.cfg.normalisation,
                kl_beta=inp.cfg.kl_beta,
                clip_low=low,
                clip_high=high,
            )
            return apply_policy_loss(OlmoParams(), type(inp)(**{**vars(inp), "cfg": cfg}))

        check_against_reference(olmo, _row_terms, [_Clip(low, high)], seed=6)
