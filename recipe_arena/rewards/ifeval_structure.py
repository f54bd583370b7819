"""How a reader finds an answer's parts where lm-eval's IFEval checkers find them
otherwise: its paragraphs, and what follows a repeated request.

Each function reads the answer as ``ifeval`` gives it to the checkers (shown, line breaks
as ``\\n``) and serves only the instruction it names: the paragraphs are what that
checker reads, and the answer after a repeated request is asked beside its checker
(``ifeval._follows``), so an answer must satisfy both.
"""

from __future__ import annotations

from recipe_arena.rewards.text import is_blank


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


def answers_after_request(text: str, request: str, prompt: str) -> bool:
    """Whether ``text``, which starts with the ``request`` to repeat (the checker of
    ``combination:repeat_prompt`` has found it there, case aside), gives an answer after
    it, for that instruction ("first repeat the request word for word, then give your
    answer"): something shown after the request and, where the ``prompt`` goes on past
    the request (the instruction to repeat it) and the answer copies that too, after
    that copy. The checker asks only that the answer start with the request, so the
    request alone, or the whole prompt copied, passed with no answer given."""
    said = text.strip().lower()
    asked = request.strip().lower()
    rest = said[len(asked) :].strip() if said.startswith(asked) else said
    whole = prompt.strip().lower()
    if whole.startswith(asked):
        tail = whole[len(asked) :].strip()
        if tail and rest.startswith(tail):
            rest = rest[len(tail) :]
    return not is_blank(rest)
