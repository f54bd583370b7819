"""The record every micro-world generator returns: a problem with its reference response.

Kept apart from ``micro.py`` so the per-domain generators do not import the dispatcher.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recipe_arena.data.schema import Effort


@dataclass(frozen=True)
class Problem:
    canonical: str
    """The problem with surface variation removed; its hash decides the split."""
    prompt: str
    """The user message."""
    ground_truth: Any
    """What the domain's verifier checks (``PromptRow.ground_truth``, data/schema.py)."""
    answer: str
    """The reference final answer, the text a verifier reads after ``</think>``."""
    thought: str
    """A short reasoning trace, the content of the think block."""
    effort: Effort

    @property
    def response(self) -> str:
        """The reference assistant turn: a think block, then the answer."""
        return f"<think>{self.thought}</think>{self.answer}"

    @property
    def quick_response(self) -> str:
        """The same answer with an empty think block: the quick shortcut."""
        return f"<think></think>{self.answer}"
