"""Helpers shared by the verifiers: where the answer starts, result type."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

THINK_CLOSE = "</think>"
_BLANK_SIGNS = frozenset("\u2800\u3164\u115f\u1160\uffa0")
"""Characters drawn as nothing that Unicode files under letters or symbols: the braille
blank and the Hangul fillers."""


@dataclass(frozen=True)
class RewardResult:
    """A verifier's verdict: ``score`` in [0, 1] and a short human-readable reason."""

    score: float
    reason: str

    def __post_init__(self) -> None:
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"RewardResult.score must lie in [0, 1], got {self.score}")


def answer_text(response: str) -> str:
    """The text after the last ``</think>``; the whole response if there is none.

    A response that opens a think block and never closes it has no answer: the
    model ran out of tokens while thinking, and its scratch work must not be graded.
    """
    cut = response.rfind(THINK_CLOSE)
    if cut >= 0:
        return response[cut + len(THINK_CLOSE) :]
    if "<think>" in response:
        return ""
    return response


def is_blank(text: str) -> bool:
    """True when ``text`` shows nothing: only whitespace, format characters (zero-width
    spaces and joiners, the byte-order mark, soft hyphens), combining marks without a
    base, and blank signs. Such an answer is empty to every verifier."""
    return all(
        c.isspace() or c in _BLANK_SIGNS or unicodedata.category(c) in ("Cf", "Mn", "Me")
        for c in text
    )
