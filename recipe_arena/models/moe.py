"""Mixture-of-experts pieces shared by the engine (which records each token's experts)
and the trainer (which replays them): where a model's routers are.

The micro world's MoE variant is transformers' Mixtral (``TinyModelSpec.num_experts``):
each decoder layer's MLP is a sparse block whose router (``mlp.gate``) returns
``(router_logits, top_k_weights, top_k_index)`` for the flattened tokens, with
top_k_weights the softmax probabilities of the chosen experts renormalised to sum to 1.
"""

from __future__ import annotations

from typing import Any

from torch import nn


def moe_routers(model: Any) -> list[nn.Module]:
    """The router of every mixture-of-experts layer, in layer order (empty if dense)."""
    layers = getattr(getattr(model, "model", None), "layers", [])
    return [
        layer.mlp.gate
        for layer in layers
        if hasattr(layer.mlp, "gate") and hasattr(layer.mlp, "experts")
    ]


def is_moe(model: Any) -> bool:
    return bool(moe_routers(model))
