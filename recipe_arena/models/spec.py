"""Shape of the micro world's model, as a config model of its own.

Kept apart from ``models.factory`` (which builds the model with ``transformers``) so
that reading and validating a run's configuration imports pydantic only: a config error
or ``run --help`` answers in about a second instead of after the ML stack has loaded.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)


class TinyModelSpec(BaseModel):
    """Shape of the micro world's decoder-only model (Llama architecture)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    hidden_size: int = Field(128, ge=16, description="residual width")
    num_layers: int = Field(4, ge=1)
    num_heads: int = Field(
        2, ge=1, description="head size = hidden/heads; vLLM-CPU needs 32, 64, 80, ..."
    )
    intermediate_size: int = Field(384, ge=16)
    max_position_embeddings: int = Field(512, ge=32)
    num_experts: int = Field(0, ge=0)
    """Experts per MoE layer; 0 keeps the dense Llama MLP. With E > 0 the model is a
    Mixtral whose every layer routes each token to ``experts_per_token`` of E experts of
    width ``intermediate_size`` (the micro variant for MoE routing replay)."""
    experts_per_token: int = Field(2, ge=1)
    """Top-k experts per token (MoE only; <= num_experts); 2 as in Mixtral."""

    @model_validator(mode="after")
    def _experts_fit(self) -> TinyModelSpec:
        if self.num_experts and self.experts_per_token > self.num_experts:
            raise ValueError(
                f"experts_per_token={self.experts_per_token} exceeds num_experts={self.num_experts}"
            )
        return self

    @model_serializer(mode="wrap")
    def _dense_dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A dense spec dumps without the MoE fields, so the cache keys of dense base
        models (which hash this dump) are what they were before MoE existed."""
        out: dict[str, Any] = handler(self)
        if not self.num_experts:
            out.pop("num_experts", None)
            out.pop("experts_per_token", None)
        return out
