"""Per-token log-probabilities of a causal LM, aligned so position l scores token l."""

from __future__ import annotations

import torch
from torch import nn


def sequence_logprobs(
    model: nn.Module,
    tokens_BL: torch.Tensor,
    attention_mask_BL: torch.Tensor | None = None,
    temperature: float = 1.0,
) -> torch.Tensor:
    """log p(tokens_BL[b, l] | tokens_BL[b, :l]) at ``temperature``; position 0 holds 0.

    Rows are right-padded (``attention_mask_BL`` 0 on padding). Dividing logits by the
    sampling temperature makes these comparable with the engine's behaviour logprobs,
    which are taken after temperature.
    """
    if tokens_BL.dim() != 2:
        raise ValueError(
            f"tokens_BL must be 2-D (batch, length), got shape {tuple(tokens_BL.shape)}"
        )
    if attention_mask_BL is None:
        attention_mask_BL = torch.ones_like(tokens_BL)
    logits_BLV = model(input_ids=tokens_BL, attention_mask=attention_mask_BL).logits
    logits_BLV = logits_BLV[:, :-1].float() / temperature
    targets_BL = tokens_BL[:, 1:]
    # log_softmax then gather: exact and memory-light enough at the sizes run here.
    logp_BL = torch.log_softmax(logits_BLV, dim=-1).gather(-1, targets_BL.unsqueeze(-1)).squeeze(-1)
    zeros_B1 = torch.zeros_like(logp_BL[:, :1])
    return torch.cat([zeros_B1, logp_BL], dim=1) * attention_mask_BL.to(logp_BL.dtype)
