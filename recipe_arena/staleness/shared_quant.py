"""Kimi K3's shared quantisation (Kimi Team 2026, "Kimi K3", arXiv:2607.24653; seed
Table 9.2, row "Stale data": "runs rollout and training under one quantization scheme
so the two engines match").

    logp_engine = log pi_{Q(W)},   logp_trainer = log pi_{Q(W)}   (same Q on both sides)

with Q the int8 per-channel quantise-dequantise of ``staleness.quant`` (its docstring
has the formula); the trainer's forward takes the straight-through gradient. The loss
correction is Kimi's per-token regulariser (``kimi_regularizer``:
extra_t = tau/2 (logp_theta - logp_behavior)^2), so this strategy is Kimi K3's whole
stale-data row; ``regularizer: null`` keeps the shared quantisation alone (w_t = 1).

Deviations: Kimi K3 quantises for deployment (its report describes low-bit inference);
here int8 fake quantisation stands in for it, and the held-out evaluation runs the
full-precision weights.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from recipe_arena.core.strategy import StrategyParams
from recipe_arena.staleness.base import StalenessInput, StalenessResult
from recipe_arena.staleness.kimi_regularizer import KimiRegularizerParams, kimi_regularizer
from recipe_arena.staleness.none import NoCorrectionParams, no_correction


class SharedQuantParams(StrategyParams):
    name: Literal["shared_quant"] = "shared_quant"
    quant_bits: int = Field(8, ge=2, le=8)
    """Bits of the symmetric per-channel quantisation both sides run (2-8; 8 = int8)."""
    regularizer: KimiRegularizerParams | None = KimiRegularizerParams()
    """Kimi's per-token regulariser on top (its tau); null: the quantisation alone."""


def shared_quant(inp: StalenessInput, params: SharedQuantParams) -> StalenessResult:
    """The loss side of shared quantisation: Kimi's regulariser, or nothing; the forward
    side (both engines on Q(W)) is applied by the actor and the learner."""
    if params.regularizer is None:
        return no_correction(inp, NoCorrectionParams())
    return kimi_regularizer(inp, params.regularizer)
