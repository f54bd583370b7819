"""A prompt row to token ids and a completion's token ids back to text, the way every
part of the harness does it (RL actors, the prompt filter, the evaluation)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recipe_arena.data.schema import PromptRow


def encode_prompt(tokenizer: Any, row: PromptRow) -> tuple[int, ...]:
    """The row's conversation through the chat template, with the assistant turn opened."""
    msgs = [m.model_dump() for m in row.messages]
    enc = tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
    ids = enc if isinstance(enc, list) else enc["input_ids"]
    return tuple(int(i) for i in ids)


def decode_response(tokenizer: Any, tokens: Sequence[int]) -> str:
    """Completion text as verifiers see it: special tokens kept (``</think>`` matters),
    the end-of-turn and padding markers removed."""
    text = str(tokenizer.decode(list(tokens), skip_special_tokens=False))
    for marker in (tokenizer.eos_token, tokenizer.pad_token):
        if marker:
            text = text.replace(marker, "")
    return text
