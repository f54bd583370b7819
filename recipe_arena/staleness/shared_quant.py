"""Kimi K3's shared quantisation (Kimi Team 2026, "Kimi K3", arXiv:2607.24653; seed
Table 9.2, row "Stale data": "runs rollout and training under one quantization scheme
so the two engines match").

    logp_engine = log pi_{Q(W)},   logp_trainer = log pi_{Q(W)}   (same Q on both sides)

with Q the int8 per-channel quantise-dequantise below; the trainer's forward takes the
straight-through gradient. The loss
correction is Kimi's per-token regulariser (``kimi_regularizer``:
extra_t = tau/2 (logp_theta - logp_behavior)^2), so this strategy is Kimi K3's whole
stale-data row; ``regularizer: null`` keeps the shared quantisation alone (w_t = 1).

Deviations: Kimi K3 quantises for deployment (its report describes low-bit inference);
here int8 fake quantisation stands in for it, and the held-out evaluation runs the
full-precision weights.

The fake quantisation, shared by the rollout engine and the trainer: Symmetric, per output channel (per row of a weight matrix; per expert and row for a
mixture of experts' stacked weights), with b bits:

    s_r = max_j |W_rj| / (2^(b-1) - 1),   Q(W)_rj = s_r * clamp(round(W_rj / s_r), -(2^(b-1) - 1), 2^(b-1) - 1)

Applied to the decoder layers' projection weights (attention q/k/v/o, MLP gate/up/down,
experts); embeddings, norms, the LM head and MoE routers stay in full precision. The
engine receives Q(W) (``quantise_state_dict``); the trainer's forward runs Q(W) with a
straight-through gradient, W + (Q(W) - W).detach(), so the full-precision weights
still learn (``straight_through``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from recipe_arena.core.hooks import ActorHooks, ForwardHooks, RunFacts
from recipe_arena.core.lazy import torch
from recipe_arena.staleness.base import StalenessInput, StalenessResult
from recipe_arena.staleness.kimi_regularizer import KimiRegularizerParams, kimi_regularizer
from recipe_arena.staleness.none import NoCorrectionParams, no_correction
from recipe_arena.strategy import Strategy, StrategyParams

if TYPE_CHECKING:
    from torch import nn


class SharedQuantParams(StrategyParams):
    name: Literal["shared_quant"] = "shared_quant"
    quant_bits: int = Field(8, ge=2, le=8, examples=[4])
    """Bits of the symmetric per-channel quantisation both sides run (2-8; 8 = int8)."""
    regularizer: KimiRegularizerParams | None = KimiRegularizerParams()
    """Kimi's per-token regulariser on top (its tau); null: the quantisation alone."""


def shared_quant(inp: StalenessInput, params: SharedQuantParams) -> StalenessResult:
    """The loss side of shared quantisation: Kimi's regulariser, or nothing; the forward
    side (both engines on Q(W)) is applied by the actor and the learner."""
    if params.regularizer is None:
        return no_correction(inp, NoCorrectionParams())
    return kimi_regularizer(inp, params.regularizer)


def is_quantised(name: str, tensor: torch.Tensor) -> bool:
    """Whether parameter ``name`` is one of the decoder's linear weights."""
    if tensor.dim() < 2:
        return False
    return name.endswith("_proj.weight") or name.endswith(
        ("experts.gate_up_proj", "experts.down_proj")
    )


def fake_quant(w: torch.Tensor, bits: int) -> torch.Tensor:
    """Q(w): symmetric per-output-channel quantise-dequantise (module docstring)."""
    qmax = 2 ** (bits - 1) - 1
    scale: torch.Tensor = w.detach().abs().amax(dim=-1, keepdim=True).clamp(min=1e-12) / qmax
    q: torch.Tensor = torch.clamp(torch.round(w / scale), -qmax, qmax)
    return q * scale


def quantise_state_dict(
    state_dict: Mapping[str, torch.Tensor], bits: int
) -> dict[str, torch.Tensor]:
    """The weights an engine runs: Q(W) for the linear weights, the rest unchanged."""
    with torch.no_grad():
        return {k: fake_quant(v, bits) if is_quantised(k, v) else v for k, v in state_dict.items()}


def straight_through(
    named: Iterable[tuple[str, torch.Tensor]], bits: int
) -> dict[str, torch.Tensor]:
    """The trainer's replacements: W + (Q(W) - W).detach() for each linear weight (the
    value of Q(W), the gradient of W)."""
    return {k: w + (fake_quant(w, bits) - w).detach() for k, w in named if is_quantised(k, w)}


def quant_error(named: Iterable[tuple[str, torch.Tensor]], bits: int) -> float:
    """Relative error of the quantised weights, ||Q(W) - W|| / ||W|| over all of them."""
    num = den = 0.0
    with torch.no_grad():
        for k, w in named:
            if is_quantised(k, w):
                num += float((fake_quant(w, bits) - w).square().sum())
                den += float(w.square().sum())
    return (num / den) ** 0.5 if den > 0 else 0.0


def engine_hooks(params: SharedQuantParams, facts: RunFacts) -> ActorHooks:
    """Before sampling: the engine runs Q(W) of the trainer's weights."""
    del facts
    return ActorHooks(engine_weights=partial(quantise_state_dict, bits=params.quant_bits))


def trainer_hooks(params: SharedQuantParams) -> ForwardHooks:
    """The trainer's forward on Q(W) with the straight-through gradient, and the
    relative quantisation error ``staleness/quant_error`` after each step."""
    bits = params.quant_bits

    @contextmanager
    def quantised(model: nn.Module, batch: Any) -> Iterator[dict[str, torch.Tensor]]:
        del batch
        yield straight_through(model.named_parameters(), bits)

    def error(model: nn.Module) -> dict[str, float]:
        return {"staleness/quant_error": quant_error(model.named_parameters(), bits)}

    return ForwardHooks(forward=(quantised,), on_update=error)


STRATEGY = Strategy(
    SharedQuantParams, shared_quant, actor_hooks=engine_hooks, learner_hooks=trainer_hooks
)
