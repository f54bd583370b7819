"""Prompt templates: how a row's messages become the tokens a model continues.

``chat`` is the tokenizer's own chat template (ChatML for the micro model), with the
assistant turn opened: what SFT, DPO and RL from a post-trained checkpoint use.

``simple`` is plain text with no chat special tokens, for RL straight from a base model
(RL-Zero). OLMo 3 found that such templates beat a post-trained model's chat template when
the base model never saw the chat markers (Team OLMo et al. 2025, sec. 6 "RL-Zero"; Liu et
al. 2025 make the same point for Qwen2.5 and DeepSeek-R1-Zero's template). Every message
becomes ``Role: content`` on its own line (a system message is written as is, then a blank
line), and the generation prompt is ``Assistant:`` followed by a newline, where a ChatML
rendering has ``<|im_start|>assistant`` and a newline.

The run's ``prompt_template`` setting is read by the RL actors, the offline prompt
filter, the DPO pair builder and the held-out evaluation alike, so a model is scored in
the format it was trained in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

PromptTemplate = Literal["chat", "simple"]

SIMPLE_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ message['content'] + '\n\n' }}"
    "{% elif message['role'] == 'user' %}{{ 'User: ' + message['content'] + '\n' }}"
    "{% else %}{{ 'Assistant: ' + message['content'] + '\n' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:\n' }}{% endif %}"
)
"""Jinja, in the form of a tokenizer chat template; contains no special token."""

TEMPLATES: dict[str, str | None] = {"chat": None, "simple": SIMPLE_TEMPLATE}
"""name -> Jinja chat template; None is the tokenizer's own."""


def _render(
    tokenizer: Any, messages: Sequence[dict[str, str]], template: str, tokenize: bool
) -> Any:
    """``tokenizer.apply_chat_template`` with the named template and the assistant turn
    opened; text or token ids."""
    if template not in TEMPLATES:
        raise ValueError(f"prompt_template={template!r}; allowed: {', '.join(TEMPLATES)}")
    return tokenizer.apply_chat_template(
        list(messages),
        chat_template=TEMPLATES[template],
        add_generation_prompt=True,
        tokenize=tokenize,
    )


def prompt_text(tokenizer: Any, messages: Sequence[dict[str, str]], template: str) -> str:
    """``messages`` rendered with ``template`` and the assistant turn opened, as text:
    what ``encode_messages`` tokenises."""
    text = _render(tokenizer, messages, template, tokenize=False)
    assert isinstance(text, str)
    return text


def encode_messages(
    tokenizer: Any, messages: Sequence[dict[str, str]], template: str = "chat"
) -> tuple[int, ...]:
    """``messages`` rendered with ``template`` and the assistant turn opened, as token ids."""
    enc = _render(tokenizer, messages, template, tokenize=True)
    ids = enc if isinstance(enc, list) else enc["input_ids"]
    return tuple(int(i) for i in ids)
