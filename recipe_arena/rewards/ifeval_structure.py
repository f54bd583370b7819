"""How a reader finds an answer's parts where lm-eval's IFEval checkers find them
otherwise: its paragraphs, bullets, highlights, placeholders, and what follows a
repeated request.

Each function reads the answer as ``ifeval`` gives it to the checkers (shown, line breaks
as ``\\n``) and serves only the instruction it names: the paragraphs, bullets,
highlights and placeholders are what that checker reads, and the answer after a
repeated request is asked beside its checker (``ifeval._follows``), so an answer must
satisfy both.
"""

from __future__ import annotations

import re

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


_NOT_A_BULLET = re.compile(r"^([^\S\n]*)(?:\*(?=[^\s*])|-(?=\S))", re.M)
"""A line opened by ``*`` or ``-`` with a character drawn against it: emphasis
(``*Note*: ...``), a negative number (``-5 degrees``) or a rule (``---``), no bullet."""


def bullets_shown(text: str) -> str:
    """``text`` for ``detectable_format:number_bullet_lists`` with the lines that open with
    ``*`` or ``-`` glued to what follows marked as no bullet (``\\`` for the marker): its
    checker counts every line opened by ``*`` then anything but ``*``, and every line
    opened by ``-``, so ``* one\\n*Note*: two\\n*Also* three``, one bullet drawn, and
    ``* a\\n-1 degrees\\n-2 degrees`` passed "exactly 3 bullet points". A marker then
    white space, or alone on its line, is a bullet as before (markdown's empty item)."""
    return _NOT_A_BULLET.sub(r"\1\\", text)


_LONE_STAR = re.compile(r"(?<!\S)\*+(?!\S)")
"""A ``*``, or a run of them, with white space, a line's edge or the text's on both
sides: markdown opens and closes no emphasis there (it is neither left- nor
right-flanking)."""


def highlights_shown(text: str) -> str:
    """``text`` for ``detectable_format:number_highlighted_sections`` with each lone ``*``
    or ``**`` (``_LONE_STAR``) read as the literal star it is to markdown, a mark of no
    highlight (``·``): its checker counts any two ``*`` or ``**`` on a line with
    something between them, so the products ``5 * 4 = 20, 3 * 2 = 6, 7 * 1 = 7, 8 * 2 =
    16``, the lines ``* one *`` and ``** one ** and ** two **`` passed "at least 2
    highlighted sections", none drawn. ``*word*``, ``*a b*`` and ``**word**``
    are read as before."""
    return _LONE_STAR.sub(lambda m: "\u00b7" * len(m.group()), text)


_LINK = re.compile(r"\[([^\[\]\n]*)\]\(([^()\n]*)\)")
"""A markdown link or image, ``[text](target)``: drawn as its text, without brackets."""
LINK_DEPTH = 4
"""How many levels of links inside links are read as drawn (an image inside a link is
two); a bound, since each level is one more pass over the answer."""


def placeholders_shown(text: str) -> str:
    """``text`` for ``detectable_content:number_placeholders`` with each markdown link
    (``_LINK``, an image's and one around an image too) as its text and its target in
    parentheses, as it is drawn: its checker counts every ``[...]`` as a placeholder, so
    ``See [the docs](http://x) and [here](http://y).``, two links and no square bracket
    drawn, passed "at least 2 placeholders represented by square brackets, such as
    [address]". ``[name] ([email])``, a placeholder and one in parentheses, is read as
    before. Links nested deeper than ``LINK_DEPTH`` keep their outer brackets: each
    level is one pass over the text, and a hostile answer nesting 20,000 of them in
    100 KB took 12 s, past the check's deadline."""
    for _ in range(LINK_DEPTH):
        if (shown := _LINK.sub(r"\1 (\2)", text)) == text:
            break
        text = shown
    return text


SHAPES = {
    "detectable_format:number_bullet_lists": bullets_shown,
    "detectable_format:number_highlighted_sections": highlights_shown,
    "detectable_content:number_placeholders": placeholders_shown,
}
"""Instruction id -> how its checker is given the answer, after ``ifeval._as_checked``'s
other readings."""
