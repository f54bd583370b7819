"""Model and tokenizer factory, and checkpoint I/O in safetensors.

The micro model is a ``transformers`` Llama built from a config, so loading a real
checkpoint (SmolLM2, OLMo 3) later goes through the same ``AutoModelForCausalLM`` path.
"""

from __future__ import annotations

from pathlib import Path

import torch
from pydantic import BaseModel, ConfigDict, Field
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from recipe_arena.models.tokenizer import build_char_tokenizer


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


def build_tiny_model(
    spec: TinyModelSpec, tokenizer: PreTrainedTokenizerBase, seed: int = 0
) -> LlamaForCausalLM:
    """A randomly initialised Llama sized by ``spec`` for ``tokenizer``'s vocabulary."""
    vocab = len(tokenizer)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_heads,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        rope_theta=10000.0,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def build_micro(
    spec: TinyModelSpec | None = None, seed: int = 0
) -> tuple[LlamaForCausalLM, PreTrainedTokenizerBase]:
    tok = build_char_tokenizer()
    return build_tiny_model(spec or TinyModelSpec(), tok, seed), tok


def save_checkpoint(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: str | Path
) -> Path:
    """Save model (safetensors) and tokenizer to ``path`` atomically: written to a
    sibling temporary directory, then renamed, so a crash never leaves half a checkpoint."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    if tmp.exists():
        import shutil

        shutil.rmtree(tmp)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    if path.exists():
        import shutil

        shutil.rmtree(path)
    tmp.rename(path)
    return path


def load_checkpoint(
    path: str | Path, dtype: torch.dtype = torch.float32
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    path = Path(path)
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no checkpoint at {path} (config.json missing)")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    tok = AutoTokenizer.from_pretrained(path)
    return model, tok
