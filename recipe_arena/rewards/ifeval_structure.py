"""How a reader finds an answer's parts where lm-eval's IFEval checkers find them
otherwise: its paragraphs.

Each function reads the answer as ``ifeval`` gives it to the checkers (shown, line breaks
as ``\\n``) and serves only the instruction it names.
"""

from __future__ import annotations


def paragraphs_shown(text: str) -> str:
    """``text`` with the empty paragraphs between ``\\n\\n`` breaks left out, for
    ``length_constraints:nth_paragraph_first_word``. Its checker counts only the
    paragraphs that hold something but takes the nth one from the list that still holds
    the empty ones, so an answer opened by a blank line, or holding three blank lines
    in a row, had the first word of another paragraph read as the nth's:
    ``\\n\\nDog runs.\\n\\nCats nap.`` passed "2 paragraphs, the second starting with
    dog" (its second starts with Cats), and ``Cats nap.\\n\\n\\n\\nDog runs.\\n\\nBirds
    fly.`` "3 paragraphs, the third starting with dog". The paragraphs kept are the
    checker's own pieces, each as it was, so their count and their first words are
    those it read; only which is the nth changes."""
    return "\n\n".join(p for p in text.split("\n\n") if p.strip())
