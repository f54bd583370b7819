"""Latin letters' look-alikes from the Cyrillic and Greek scripts, for IFEval instructions
that forbid something.

NFKC keeps ``о`` (Cyrillic o) apart from ``o``, so ``lоve`` written with it passed "do not
use the word love" while a reader sees "love". Folding these letters into Latin ones for
every check would break honest answers in those scripts (langdetect would no longer read
a Russian answer as Russian), so the folded text is read only as a second reading by the
instructions that forbid a word or cap a count (``FORBIDDING``): the answer must follow
them both as shown and with look-alikes read as the Latin letters they look like.
"""

from __future__ import annotations

from typing import Any

_LATIN = str.maketrans(
    "аеһіјӏорсѕухԁԛԝүАВЕЅІЈКМНОРСТХҮԚԜӀονιακρυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aehijlopcsyxdqwyABESIJKMHOPCTXYQWloviakpuxABEZHIKMNOPTYX",
)
"""Cyrillic and Greek letters drawn as a Latin letter (``о`` as ``o``, ``Р`` as ``P``,
the palochka ``Ӏ`` as ``l``), each to that letter."""

FORBIDDING = frozenset(
    {"keywords:forbidden_words", "keywords:frequency", "keywords:letter_frequency"}
)
"""Instructions whose checkers forbid a word (``forbidden_words``) or cap how often a
word or letter occurs (the frequency ones, under the relation "less than"): a look-alike
hides what they count."""


def latin_lookalikes(text: str) -> str:
    """``text`` with Cyrillic and Greek look-alikes of Latin letters read as those
    letters (``lоve`` -> ``love``); other characters as they are."""
    return text.translate(_LATIN)


def forbids(iid: str, args: dict[str, Any] | None) -> bool:
    """Whether instruction ``iid`` with its built arguments ``args`` forbids or caps what
    it counts (``FORBIDDING``; a frequency one only under "less than")."""
    if iid not in FORBIDDING:
        return False
    if iid == "keywords:forbidden_words":
        return True
    relation = (args or {}).get("relation") or (args or {}).get("let_relation")
    return relation == "less than"
