"""Per-token log-probabilities of a causal LM, aligned so position l scores token l."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call


def sequence_logprobs(
    model: nn.Module,
    tokens_BL: torch.Tensor,
    attention_mask_BL: torch.Tensor | None = None,
    temperature: float = 1.0,
    params: Mapping[str, torch.Tensor] | None = None,
) -> torch.Tensor:
    """log p(tokens_BL[b, l] | tokens_BL[b, :l]) at ``temperature``; position 0 holds 0.

    Rows are right-padded (``attention_mask_BL`` 0 on padding). Dividing logits by the
    sampling temperature makes these comparable with the engine's behaviour logprobs,
    which are taken after temperature. ``params`` replaces those of the model's
    parameters it names for this forward only (shared fake quantisation).
    """
    if tokens_BL.dim() != 2:
        raise ValueError(
            f"tokens_BL must be 2-D (batch, length), got shape {tuple(tokens_BL.shape)}"
        )
    if attention_mask_BL is None:
        attention_mask_BL = torch.ones_like(tokens_BL)
    inputs = {"input_ids": tokens_BL, "attention_mask": attention_mask_BL}
    if params:
        out = functional_call(model, dict(params), args=(), kwargs=inputs)
    else:
        out = model(**inputs)
    logits_BLV = out.logits[:, :-1].float() / temperature
    targets_BL = tokens_BL[:, 1:]
    # log_softmax then gather: exact and memory-light enough at the sizes run here.
    logp_BL = torch.log_softmax(logits_BLV, dim=-1).gather(-1, targets_BL.unsqueeze(-1)).squeeze(-1)
    zeros_B1 = torch.zeros_like(logp_BL[:, :1])
    return torch.cat([zeros_B1, logp_BL], dim=1) * attention_mask_BL.to(logp_BL.dtype)


@contextmanager
def fp32_head(model: nn.Module, enabled: bool = True) -> Iterator[None]:
    """Inside the block the model's LM head runs in float32 (float32 input and weight,
    autocast off), whatever autocast the rest of the forward runs under: the logits of
    a bfloat16 or float16 forward come from an unrounded matmul (``rl.lm_head_fp32``).
    The head's current weight is read at each call, so a ``params`` substitution
    (``sequence_logprobs``) still applies."""
    get_head: Any = model.get_output_embeddings  # a transformers model's method
    head = get_head() if enabled else None
    if head is None:
        yield
        return

    def forward(x: torch.Tensor) -> torch.Tensor:
        bias = None if head.bias is None else head.bias.float()
        with torch.autocast(x.device.type, enabled=False):
            return F.linear(x.float(), head.weight.float(), bias)

    head.forward = forward
    try:
        yield
    finally:
        del head.forward
