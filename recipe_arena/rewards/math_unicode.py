"""How the math verifier reads an answer's spelling that holds characters outside ASCII.

math-verify reads a spelling as LaTeX and, where the LaTeX parser fails, takes a number
out of the text instead. The parser stops at a sign it does not know, so a sign outside
ASCII made the answer the number before it (or the last one): ``9\\u00b75`` (9 times 5,
drawn with a middle dot) was 9, ``2\\u221a3`` (2 root 3) 2, ``9\\u2030`` (per mille) 9,
``9 \\u00bd`` (9 and a half) 9, ``9\\u01c3`` (a letter drawn as ``!``) 9. Such a spelling
is read as LaTeX only (``read_as_latex``): what the parser reads counts, never a number
picked out of it. Before that, what is drawn as nothing or as a space is made ASCII
(``ascii_shown``), so ``9\\u200b`` and ``9\\u00a0`` are read as 9 and ``9\\u00b9`` as
``9^{1}`` as before. The micro world writes ASCII only: its readings do not change.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any

_SUPERSCRIPTS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
_SUPERSCRIPT_RUN = re.compile(f"[{_SUPERSCRIPTS}]+")
_SUPERSCRIPT_DIGITS = str.maketrans(_SUPERSCRIPTS, "0123456789")


def ascii_shown(s: str) -> str:
    """``s`` with its format characters (drawn as nothing) dropped, spaces outside ASCII
    as a space and superscript digits as a power (``\\u00b2`` as ``^{2}``). A digit with a
    power or a format character after it is refused before this (``marked_digit``). An
    ASCII ``s`` is returned as it is."""
    if s.isascii():
        return s
    shown = "".join(
        " " if c.isspace() and not c.isascii() else c for c in s if unicodedata.category(c) != "Cf"
    )
    return _SUPERSCRIPT_RUN.sub(lambda m: f"^{{{m.group().translate(_SUPERSCRIPT_DIGITS)}}}", shown)


@functools.lru_cache(maxsize=256)
def read_as_latex(s: str) -> tuple[Any, ...]:
    """math-verify's reading of the spelling ``s`` as LaTeX only, without its fallback
    that picks a number out of text the LaTeX parser could not read (remembered per
    worker, as ``math_answer._parsed`` is)."""
    from math_verify import LatexExtractionConfig, parse

    return tuple(parse(f"${s}$", [LatexExtractionConfig()], parsing_timeout=None))
