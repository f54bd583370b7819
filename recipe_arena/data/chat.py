"""A prompt row to token ids and a completion's token ids back to text, the way every
part of the harness does it (RL actors, the prompt filter, the evaluation)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recipe_arena.data.schema import PromptRow
from recipe_arena.data.templates import encode_messages


def encode_prompt(tokenizer: Any, row: PromptRow, template: str = "chat") -> tuple[int, ...]:
    """The row's conversation through the prompt template (``data.templates``: the run's
    ``prompt_template``), with the assistant turn opened, as token ids."""
    return encode_messages(tokenizer, [m.model_dump() for m in row.messages], template)


def decode_response(tokenizer: Any, tokens: Sequence[int]) -> str:
    """Completion text as verifiers see it: special tokens kept (``</think>`` matters),
    the end-of-turn and padding markers removed."""
    text = str(tokenizer.decode(list(tokens), skip_special_tokens=False))
    for marker in (tokenizer.eos_token, tokenizer.pad_token):
        if marker:
            text = text.replace(marker, "")
    return text


def conversation(row: PromptRow, response: str) -> list[dict[str, str]]:
    """The row's messages followed by ``response`` as the assistant's turn."""
    return [*(m.model_dump() for m in row.messages), {"role": "assistant", "content": response}]
