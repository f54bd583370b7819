"""IcePop: token masks outside a band of the engine/trainer ratio (Ling Team 2025,
"Every Step Evolves: Scaling Reinforcement Learning for Trillion-Scale Thinking Model",
Ring-1T, arXiv:2510.18855, sec. 3.2; OpenRLHF's and NeMo-RL's ``icepop``).

    k_t = exp(logp_old(y_t) - logp_behavior(y_t))          (pi_train / pi_infer)
    token t masked  iff  k_t < alpha  or  k_t > beta
    w_t = 1 (default),  or  w_t = k_t inside the band with ``reweight``

A token the trainer and the engine disagree on by more than the band is dropped from
the gradient instead of being reweighted: a capped weight (TIS) still pushes on a token
whose engine probability was wrong, a mask does not. The loss normalises over the kept
tokens.

Deviation: the paper's masking function is M(k) = k inside the band (the kept tokens
carry their ratio); the default here keeps weight 1 there, so the arm isolates the
mask from the reweighting that ``tis`` already compares; ``reweight: true`` is the
paper's M(k).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from recipe_arena.staleness.base import StalenessInput, StalenessResult, masked_mean
from recipe_arena.strategy import Strategy, StrategyParams

if TYPE_CHECKING:
    import torch
else:
    from recipe_arena.core.lazy import torch


class IcePopParams(StrategyParams):
    name: Literal["icepop"] = "icepop"
    alpha: float = Field(0.5, gt=0, examples=[0.8])
    """Lower edge of the kept band of k_t (unitless, > 0); 0.5 in the Ring-1T paper."""
    beta: float = Field(5.0, gt=0, examples=[2.5])
    """Upper edge of the kept band of k_t (unitless, > alpha); 5.0 in the Ring-1T paper."""
    reweight: bool = False
    """Kept tokens carry w_t = k_t (the paper's M(k) = k); false: w_t = 1, a pure mask."""

    @model_validator(mode="after")
    def _band(self) -> IcePopParams:
        if self.alpha >= self.beta:
            raise ValueError(f"icepop needs alpha < beta, got {self.alpha} >= {self.beta}")
        return self


def icepop(inp: StalenessInput, params: IcePopParams) -> StalenessResult:
    """Mask tokens whose k_t leaves [alpha, beta]; w_t = 1 or k_t (module docstring)."""
    k_BL = torch.exp((inp.old_logprobs_BL - inp.behavior_logprobs_BL).detach())
    inside_BL = ((k_BL >= params.alpha) & (k_BL <= params.beta)).float()
    keep_BL = inp.mask_BL * inside_BL
    weights_BL = k_BL * keep_BL if params.reweight else torch.ones_like(inp.mask_BL)
    return StalenessResult(
        token_weights_BL=weights_BL,
        extra_loss_BL=torch.zeros_like(inp.mask_BL),
        mask_BL=keep_BL,
        metrics={
            "staleness/icepop_low_frac": masked_mean((k_BL < params.alpha).float(), inp.mask_BL),
            "staleness/icepop_high_frac": masked_mean((k_BL > params.beta).float(), inp.mask_BL),
        },
    )


STRATEGY = Strategy(IcePopParams, icepop)
