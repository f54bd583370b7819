"""Model and tokenizer factory, and checkpoint I/O in safetensors.

The micro model is a ``transformers`` Llama built from a config, so loading a real
checkpoint (SmolLM2, OLMo 3) later goes through the same ``AutoModelForCausalLM`` path.
With ``num_experts > 0`` it is a Mixtral instead: the same attention, and a sparse
mixture-of-experts MLP in every layer (what MoE routing replay acts on).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from recipe_arena.integrity import CHECKSUMS, seal, verify
from recipe_arena.models.spec import TinyModelSpec
from recipe_arena.models.tokenizer import build_char_tokenizer

__all__ = ["TinyModelSpec", "build_micro", "build_tiny_model", "load_checkpoint", "save_checkpoint"]


def build_tiny_model(
    spec: TinyModelSpec, tokenizer: PreTrainedTokenizerBase, seed: int = 0
) -> PreTrainedModel:
    """A randomly initialised Llama (or, with ``spec.num_experts``, Mixtral) sized by
    ``spec`` for ``tokenizer``'s vocabulary."""
    shape: dict[str, Any] = {
        "vocab_size": len(tokenizer),
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_hidden_layers": spec.num_layers,
        "num_attention_heads": spec.num_heads,
        "num_key_value_heads": spec.num_heads,
        "max_position_embeddings": spec.max_position_embeddings,
        "tie_word_embeddings": True,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "rope_theta": 10000.0,
    }
    torch.manual_seed(seed)
    model: PreTrainedModel
    if spec.num_experts:
        moe = MixtralConfig(
            **shape,
            num_local_experts=spec.num_experts,
            num_experts_per_tok=spec.experts_per_token,
            sliding_window=None,
        )
        model = MixtralForCausalLM(moe)
    else:
        model = LlamaForCausalLM(LlamaConfig(**shape))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def build_micro(
    spec: TinyModelSpec | None = None, seed: int = 0
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    tok = build_char_tokenizer()
    return build_tiny_model(spec or TinyModelSpec(), tok, seed), tok


def save_checkpoint(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: str | Path
) -> Path:
    """Save model (safetensors) and tokenizer to ``path`` atomically: written to a
    sibling temporary directory, sealed (every file fsynced, its SHA-256 listed in
    ``checksums.json``), then renamed, so a crash never leaves half a checkpoint and
    ``load_checkpoint`` can tell a corrupt one."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    if tmp.exists():
        import shutil

        shutil.rmtree(tmp)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    seal(tmp)
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
    if (path / CHECKSUMS).exists():  # written by save_checkpoint; others load unchecked
        problem = verify(path)
        if problem is not None:
            raise ValueError(f"checkpoint {path} is corrupt: {problem}")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    tok = AutoTokenizer.from_pretrained(path)
    return model, tok
