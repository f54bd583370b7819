"""Helpers shared by the verifiers: where the answer starts, result type."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from recipe_arena.rewards.text_bidi import visual_order

THINK_CLOSE = "</think>"
_BLANK_SIGNS = frozenset("\u2800\u3164\u115f\u1160\uffa0\U0001d159")
"""Characters drawn as nothing that Unicode files under letters or symbols: the braille
blank, the Hangul fillers and the musical null notehead (an invisible notehead, drawn
as blank space: ``<<\U0001d159>>`` passed "a title in double angular brackets", and an
answer of it was judged)."""
_IGNORABLE = frozenset(
    chr(c)
    for lo, hi in (
        (0x034F, 0x034F),  # combining grapheme joiner
        (0x17B4, 0x17B5),  # Khmer inherent vowels
        (0x180B, 0x180F),  # Mongolian variation selectors (and its vowel separator)
        (0x2065, 0x2065),
        (0xFE00, 0xFE0F),  # variation selectors
        (0xFFF0, 0xFFF8),
        (0xE0000, 0xE0FFF),  # tags, variation selectors 17-256, unassigned
    )
    for c in range(lo, hi + 1)
)
"""Unicode's default-ignorable code points (drawn as nothing) that are not format
characters (``Cf``): combining marks such as the combining grapheme joiner and the
variation selectors, and code points kept for more of them. The blank signs are
default-ignorable too."""


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
    base, control characters, default-ignorable code points and blank signs. Such an
    answer is empty to every verifier."""
    return all(
        c.isspace() or c in _BLANK_SIGNS or unseen(c) or unicodedata.category(c) in ("Mn", "Me")
        for c in text
    )


def unseen(c: str) -> bool:
    """Whether ``c`` is drawn as nothing and parts nothing: a format character (but for
    the drawn ones, ``_DRAWN_FORMAT``), a control character other than whitespace
    (``\\x01``, ``\\x7f``, and the information separators ``\\x1c``-``\\x1f``, which
    Python's ``isspace`` counts as space but Unicode does not), or another
    default-ignorable code point (the combining grapheme joiner, a variation
    selector)."""
    cat = unicodedata.category(c)
    if cat == "Cf":
        return c not in _DRAWN_FORMAT
    return (cat == "Cc" and c not in _CONTROL_SPACE) or c in _IGNORABLE


_DRAWN_FORMAT = frozenset(
    "\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\u070f\u0890\u0891\u08e2\U000110bd\U000110cd"
)
"""The format characters that are drawn (Unicode's prepended concatenation marks: the
Arabic number sign and end of ayah ``۝``, the Syriac abbreviation mark, the Kaithi
number sign): kept as shown, so ``The end.۝۝۝``, which shows three ornaments after the
end phrase, no longer passes "end with The end.", and an answer of them is not
empty."""


_CONTROL_SPACE = frozenset("\t\n\x0b\x0c\r\x85")
"""The control characters Unicode counts as white space (tab, line feed, vertical tab,
form feed, carriage return, next line): drawn as a space or a line break, they part
words. The information separators ``\\x1c``-``\\x1f`` are drawn as nothing, so
``lo\\x1fve`` is the forbidden "love" and 26 letters parted by ``\\x1f`` one word."""


_SHOWN_AS = str.maketrans({"\u201a": ",", **{c: " " for c in _BLANK_SIGNS}})
"""What a character that compatibility folding leaves alone is read as: the low single
quotation mark is drawn as a comma, and the blank signs as a space (the Hangul fillers
are letters to a regex's ``\\w``, so they would join the words they part)."""


def shown_text(text: str) -> str:
    """``text`` as a reader sees it, for checks that look for characters or count words:
    compatibility forms folded to their plain letters and signs (NFKC: fullwidth ``ｌｏｖｅ``
    and ``，``, the one-dot leader ``․`` as ``.``), a low quotation mark ``‚`` as a comma,
    the blank signs as spaces, and what is drawn as nothing (``unseen``: zero-width
    spaces and joiners, soft hyphens, control characters, the combining grapheme joiner,
    variation selectors) dropped. Without it ``lo\\u200bve`` passes a check that forbids "love",
    ``big‚ blue`` one that forbids commas, and words joined by a Hangul filler count as
    one. The ellipsis ``…`` is kept: folded to ``...``, prose that uses it would count as
    more sentences. Spans that a bidirectional override draws right to left are read in
    the order they are drawn (``text_bidi.visual_order``): ``\\u202eevol`` shows "love"."""
    drawn = visual_order(text)
    folded = "\u2026".join(unicodedata.normalize("NFKC", p) for p in drawn.split("\u2026"))
    folded = folded.translate(_SHOWN_AS)
    return "".join(c for c in folded if not unseen(c))
