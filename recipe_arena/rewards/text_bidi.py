"""The order in which a reader sees characters that bidirectional overrides reorder.

The right-to-left override (U+202E) draws the characters after it, up to the pop
directional formatting (U+202C) or the paragraph's end, from right to left: written
``I \\u202eevol\\u202c you`` shows "I love you", and ``\\u202eThe end.`` shows ".dne ehT".
A checker that reads the characters in the order they were written sees "evol" or "The
end." instead, so an answer could pass "do not use the word love" while showing it, or
"end with The end." while showing something else. ``visual_order`` puts such spans in
the order they are drawn (the Unicode bidirectional algorithm's explicit levels, rule
L1's reset of tabs and line ends, rule L2, with L4's mirrored brackets); text without an
override is left as written, so right-to-left scripts written without one keep the
logical order lm-eval's checkers read.
"""

from __future__ import annotations

_OVERRIDES = frozenset("\u202d\u202e")
"""Left-to-right and right-to-left override: the only controls that reorder Latin letters."""
_EMBEDDINGS: dict[str, tuple[bool, str | None]] = {
    "\u202a": (False, None),
    "\u202b": (True, None),
    "\u202d": (False, "L"),
    "\u202e": (True, "R"),
}
"""Opener -> (whether it opens a right-to-left level, the direction it forces or None):
left-to-right and right-to-left embedding and override, closed by ``_POP``."""
_ISOLATES = {"\u2066": False, "\u2067": True, "\u2068": False}
"""Isolate opener -> whether it opens a right-to-left level (the first-strong isolate
read as left-to-right), closed by ``_POP_ISOLATE``."""
_POP, _POP_ISOLATE = "\u202c", "\u2069"
_PARAGRAPH_END = frozenset("\n\r\x1c\x1d\x1e\x85\u2029")
"""Characters that end a paragraph (Unicode's bidirectional class B): every open
embedding, override and isolate ends with them."""
_LINE_END = _PARAGRAPH_END | {"\u2028"}
"""Where a line ends: each line is reordered by itself (rule L2)."""
_SEGMENT_END = frozenset("\t\x0b\x1f")
"""Segment separators (class S: tab, vertical tab, unit separator). Rule L1 puts them,
and the white space before them or at a line's end, at the paragraph's level: an
override does not carry its order across a tab."""
_MIRROR = str.maketrans("()<>[]{}«»‹›", ")(><][}{»«›‹")
"""Brackets drawn mirrored at a right-to-left level (rule L4): ``<<`` drawn right to left
reads ``>>``."""
_MAX_DEPTH = 125
"""Unicode's limit on embedding levels (rules X1-X8): an opener whose level would pass
it is ignored, and so is every opener after it until the pops close it, each pop
closing an ignored opener first. Counting openers instead (125 of them, levels up to
250) read ``\u202d`` 63 times then ``\u202elove`` as "evol", which a renderer, ignoring
the override past level 125, draws "love"."""


def _next_level(level: int, rtl: bool) -> int:
    """The least level above ``level`` that is odd (``rtl``) or even."""
    up = level + 1
    return up if (up % 2 == 1) == rtl else up + 1


def _levels(text: str) -> list[int]:
    """Each character's embedding level: a forced right-to-left character's is odd, a
    forced left-to-right one's even, and any other character's the even level at or
    above its embedding's (read as left to right, as written)."""
    out: list[int] = []
    stack: list[tuple[int, str | None, bool]] = []  # (level, forced direction, isolate)
    over_isolates = over_embeddings = 0  # openers past the limit, still open (rule X5)
    for c in text:
        if c in _PARAGRAPH_END:
            stack, over_isolates, over_embeddings = [], 0, 0
        level, forced = (stack[-1][0], stack[-1][1]) if stack else (0, None)
        out.append(level if forced else level + level % 2)
        if c in _EMBEDDINGS or c in _ISOLATES:
            rtl, force = _EMBEDDINGS.get(c, (_ISOLATES.get(c, False), None))
            new = _next_level(level, rtl)
            if new <= _MAX_DEPTH and over_isolates == over_embeddings == 0:
                stack.append((new, force, c in _ISOLATES))
            elif c in _ISOLATES:
                over_isolates += 1
            elif not over_isolates:
                over_embeddings += 1
        elif c == _POP and not over_isolates:
            if over_embeddings:
                over_embeddings -= 1
            elif stack and not stack[-1][2]:
                stack.pop()
        elif c == _POP_ISOLATE and over_isolates:
            over_isolates -= 1
        elif c == _POP_ISOLATE and any(s[2] for s in stack):
            over_embeddings = 0
            while not stack.pop()[2]:
                pass
    return out


def _line(chars: list[str], levels: list[int]) -> str:
    """One line in drawn order: from its highest level down to 1, each run of
    characters at that level or above reversed (rule L2), odd-level brackets mirrored.
    Walked once, as nested runs: a run at a level or above holds characters at that
    level and the runs above it, and is reversed when it closes (inner runs first, as
    L2 reverses the highest level first), so the work is linear in the line's length
    beside the copying of reversed text. Levels are first packed (``_packed``)."""
    runs: list[list[str]] = [[]]  # runs[f]: pieces of the open run at level f or above
    for c, lv in zip(chars, _packed(levels), strict=True):
        while len(runs) - 1 > lv:
            _close(runs)
        while len(runs) - 1 < lv:
            runs.append([])
        runs[-1].append(c.translate(_MIRROR) if lv % 2 else c)
    while len(runs) > 1:
        _close(runs)
    return "".join(runs[0])


def _packed(levels: list[int]) -> list[int]:
    """``levels`` renumbered to the fewest that L2 reads alike: between two levels a line
    holds (and 0), every level in the gap reverses the same runs, so an even gap reverses
    nothing and an odd one as one level. Parity, which mirrors brackets, is kept. A line
    that goes from level 0 to 125 at every tab (rule L1) opened and closed 125 nested runs
    at each; packed, one."""
    packed, prev, new = {}, 0, 0
    for lv in sorted(set(levels)):
        new, prev = new + (lv - prev) % 2, lv
        packed[lv] = new
    return [packed[lv] for lv in levels]


def _close(runs: list[list[str]]) -> None:
    """Close the innermost open run (at level ``len(runs) - 1``, at least 1): reversed,
    it becomes one piece of the run around it."""
    runs[-2].append("".join(runs.pop())[::-1])


def _reset(text: str, levels: list[int]) -> list[int]:
    """``levels`` with rule L1 applied: segment separators, line ends, and the white
    space before them or at the text's end at level 0, so that ``\u202e.dne ehT\txyz``
    is drawn "The end.", a tab, "zyx" rather than "zyx", a tab, "The end."."""
    out = list(levels)
    reset = True  # at the end of the text, as before a line end
    for k in range(len(text) - 1, -1, -1):
        c = text[k]
        if c in _SEGMENT_END or c in _LINE_END:
            out[k], reset = 0, True
        elif reset and c.isspace():
            out[k] = 0
        else:
            reset = False
    return out


def visual_order(text: str) -> str:
    """``text`` with the spans that an override reorders put in the order they are drawn
    (``I \\u202eevol\\u202c you`` -> ``I \\u202elove\\u202c you``; the controls stay, for
    ``shown_text`` to drop). Text without an override is returned as it is."""
    if not _OVERRIDES.intersection(text):
        return text
    levels = _reset(text, _levels(text))
    out, start = [], 0
    for k, c in enumerate(text + "\n"):
        if c in _LINE_END or k == len(text):
            out.append(_line(list(text[start:k]), levels[start:k]))
            out.append(text[k : k + 1])
            start = k + 1
    return "".join(out)
