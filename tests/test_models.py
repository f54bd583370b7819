"""Micro model and tokenizer factory; safetensors checkpoints round-trip exactly."""

from __future__ import annotations

from pathlib import Path

import torch

from recipe_arena.models.factory import TinyModelSpec, build_micro, load_checkpoint, save_checkpoint


def test_char_tokenizer_round_trips_text_and_keeps_specials_whole() -> None:
    _, tok = build_micro()
    text = "<think>12+30=42</think> The answer is \\boxed{42}.\n```python\nx = 1\n```"
    ids = tok(text)["input_ids"]
    assert tok.decode(ids) == text
    # <think> and </think> are one token each; every other character is one token.
    assert len(ids) == len(text) - len("<think>") - len("</think>") + 2
    assert tok.convert_tokens_to_ids("<think>") in ids


def test_chat_template_is_chatml() -> None:
    _, tok = build_micro()
    ids = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=True
    )["input_ids"]
    assert tok.decode(ids) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_model_shape_follows_spec() -> None:
    """Head size = hidden / heads = 64, as vLLM's CPU attention requires."""
    spec = TinyModelSpec(hidden_size=128, num_heads=2, num_layers=3)
    model, tok = build_micro(spec)
    assert model.config.hidden_size // model.config.num_attention_heads == 64
    assert model.config.num_hidden_layers == 3
    assert model.config.vocab_size == len(tok)


def test_checkpoint_round_trip_is_exact(tmp_path: Path) -> None:
    model, tok = build_micro(seed=7)
    path = save_checkpoint(model, tok, tmp_path / "ckpt")
    assert (path / "model.safetensors").exists()
    assert not (tmp_path / "ckpt.tmp").exists()
    loaded, tok2 = load_checkpoint(path)
    for (name, a), (_, b) in zip(
        model.state_dict().items(), loaded.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name
    ids = torch.tensor([tok("abc")["input_ids"]])
    assert torch.equal(model(ids).logits, loaded(ids).logits)
    assert tok2.decode(ids[0]) == "abc"
