"""LaTeX in a math answer that math-verify drops or reads otherwise than it is drawn.

Three kinds, all refused by ``math_answer.check_math`` (the answer scores 0):

- A unit that is more than a unit. math-verify reads a ``\\text{}`` or ``\\mbox{}`` group
  (``\\mathrm``, ``\\mathbf``, ``\\textbf`` and kin count as ``\\text``) as a unit and drops
  it together with everything after it up to a closing brace at the end, so
  ``9\\text{00}`` and ``9\\mathbf{00}`` (shown 900), ``9\\text{.5}`` (9.5), ``9\\text{!}``
  (9 factorial) and ``9\\text{ m} \\cdot 5\\text{ m}`` (45 m) were all read as 9. A
  dropped span must be one group of letters, spaces and the unit signs ``/ . - ( ) , ~``
  and the degree sign, with a power after a letter (``\\text{ m/s}^2``, ``\\text{m²}``)
  and no word that scales, bounds or negates a value (``\\text{ thousand}``,
  ``\\text{ or more}``), in look-alike letters too.
- Markup the parser does not read as drawn (``_MARKUP``): ``9\\phantom{0}`` shows 9 and
  was read as 9*0 = 0; ``9\\underline{00}``, ``9\\color{white}{00}``, ``9\\smash{00}`` and
  ``9\\operatorname{00}`` show 900 and were read as 9 (the LaTeX parser stopped there and
  math-verify took the first number). A reference holding the same command allows it.
  An empty group between two digits is such markup (``9{}00``, shown 900, was 9).
- LaTeX the parser cannot read at all (``_UNREAD``): an answer holding more than one
  number, a command with a braced argument, a spacing primitive or an ellipsis, and no
  spelling the parser reads, was judged by one number math-verify picked out of its
  text (``9\\ul{00}`` as 9, ``\\{3, 9, \\ldots\\}`` as 9).

The micro world's answers hold no LaTeX command but ``\\boxed`` (its junk, a backslash
before a letter or two), so none of its verdicts depends on this module.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from recipe_arena.rewards.ifeval_lookalikes import bare_letters, small_capitals
from recipe_arena.rewards.math_unicode import ascii_shown, read_as_latex
from recipe_arena.rewards.text import shown_text

_READ_BEFORE = re.compile(r"\\mathrm\{([dT])\}|\{\\rm (d)\}|\\mathrm\{th\}|\\text\s*\{\s*\}")
"""What math-verify rewrites before it looks for units: an upright d or T is the letter
(``\\mathrm{d}x``), ``\\mathrm{th}`` and an empty ``\\text{}`` go."""
_TEXT_FONTS = re.compile(r"\\math(?:rm|it|bf)|\\text(?:normal|bf|it|rm)")
"""Font commands math-verify then turns into ``\\text``."""
_EMPTY_TEXT = re.compile(r"\\text\s*\{\s*\}")
_MODULUS = re.compile(r"\(?\s*\\?[bp]?mod(?![a-zA-Z]).*", re.IGNORECASE | re.DOTALL)
"""A modulus clause in a unit's text (``\\text{ (mod 10)}``), left to ``check_math``."""
_DROPPED = re.compile(r"(\\(?:text|mbox){.*?})(\^\d|\{\^\d\})?$")
"""math-verify's unit pattern: from the first ``\\text{`` or ``\\mbox{`` to the end."""
_UNIT_GROUP = re.compile(r"\\(?:text|mbox)\{([^{}]*)\}(?:\^\{?\d+\}?|\{\^\d\})?")
_UNIT_POWER = re.compile(r"(?<=[^\W\d_])(?:\^\{?\d+\}?|[\u00b2\u00b3])")
"""A power after a letter of a unit: ``m^2``, ``s^{2}``, ``m²``."""
_UNIT_SIGNS = frozenset(" \t\n~/.-(),\u00b0")
_SCALING_WORDS = re.compile(
    r"(?<![a-zA-Z])(?:hundred|thousand|million|billion|trillion|dozen|squared|cubed|factorial)"
    r"|(?<![a-zA-Z])(?:(?-i:k)|bn|mn|thou|grand|lakhs?|crores?|myriads?|half|halves|thirds?|(?:fif"
    r"|six|seven|eigh|nin|ten)ths?|(?:hundred|thousand|million|billion)ths?|zero|one|two"
    r"|three|four|five|six|seven|eight|nine|ten|eleven|twelve|(?:thir|four|fif|six|seven"
    r"|eigh|nine)teen|(?:twen|thir|for|fif|six|seven|eigh|nine)ty|tens|minus|reciprocal|twice)"
    r"(?![a-zA-Z-])",
    re.IGNORECASE,
)
"""Words that change the value of the number before them: not a unit (``9\\text{ k}``
is 9000, ``9\\text{ and a half}`` 9.5, ``9\\text{ tenths}`` 0.9, ``9\\text{ zero zero}``
900, ``9\\text{ reciprocal}`` 1/9). They are read with look-alike letters as the Latin
letters they look like, without the marks on letters and without format characters
(``_shown_words``): ``9\\text{ th\\u043eusand}``, with a Cyrillic o, shows 9 thousand.
Percent (``9\\text{ percent}``) is read as ``9\\%`` is; units that are numbers
(``K``, ``M``, ``quarters``, ``times``, ``square feet``), and words that qualify a noun
(``one-digit``, ``half-lives``, ``negative numbers``), are units."""
_CLAIM_WORDS = re.compile(
    r"(?<![a-zA-Z])(?:not|never|or|least|most|than|bound|maybe|perhaps|possibly)(?![a-zA-Z])",
    re.IGNORECASE,
)
"""Words that say the value is not the number, only bound it or hedge it: ``9\\text{ or
more}``, ``9\\text{ at least}`` and ``9\\text{ (not)}`` were read as 9 (a unit), where
``\\ge 9`` and ``\\neq 9`` score 0 (``math_answer._CLAIMS``)."""
_MARKUP = re.compile(
    r"\\(?:[hv]?phantom|smash|color|textcolor|colorbox|fcolorbox|underline|underbrace"
    r"|overbrace|emph|[hv]box|text(?:sf|tt|up|sc|sl)|math(?:sf|tt)|[bx]?cancel|cancelto|sout"
    r"|[lr]lap|math[lr]lap|raisebox|overset|underset|stackrel|tag|href|url|verb|ensuremath"
    r"|mathchoice|pmb|permil|(?:text)?per(?:ten)?thousand)(?![a-zA-Z])"
    r"|\\operatorname\*?\s*\{[^{}]*[^a-zA-Z\s{}][^{}]*\}"
)
"""Commands the LaTeX parser does not read as drawn: invisible or overlaid content
(``\\phantom``, ``\\smash``, a colour, a strike-out, ``\\rlap``), decoration, boxes,
links and fonts it does not know (``\\underline``, ``\\raisebox``, ``\\overset``,
``\\tag``, ``\\url``, ``\\textsf``), an operator name that is not a name, ``\\pmb``
(bold), which the parser reads as ``\\pm b`` (``9\\pmb{00}``, shown 900, was 9 plus or
minus 0), and ``\\permil`` (``9\\permil``, 0.009, was 9).

Commands it cannot read at all are ``_UNREAD``'s."""
_UNREAD = re.compile(
    r"\\([a-zA-Z]{2,})\*?\s*(?:\[[^\]]*\]\s*)?\{"
    r"|\\(kern|mkern|hskip|mskip|char|mathchar|let|[gex]?def|[lcv]?dots[bcimo]?)"
    r"(?![a-zA-Z])"
)
"""A command with a braced argument, a spacing or character primitive, a definition or
an ellipsis. Where the LaTeX parser cannot read an answer holding one, math-verify took
a number out of its text, the value before the command: ``9\\ul{00}``,
``9\\mathcolor{white}{00}``, ``9\\textstyle{00}``, ``9\\label{00}``, ``9\\kern1em00``,
``9\\char48`` and ``9\\unicode{x30}`` (shown 900 or 90) were 9, and the sets
``\\{3, 9, \\ldots\\}`` and ``\\{1, 3, 5, 7, 9, \\ldots\\}`` were their last number. A
command name needs two letters (or is named) and, but for the primitives, a brace after
it: the micro world's junk answers that score 1 hold a backslash before a letter or two
(``7\\eu5``), not such a command."""
_DIMENSION = re.compile(
    r"\\(?:hspace\*?\s*\{[^{}]*\}|(?:[hm]?kern|[hm]skip)\s*[-+]?[\d.]+\s*[a-z]{2})"
)
"""A spacing command with its length, whose digits are no number of the answer."""
_EMPTY_GROUP = re.compile(r"\d\s*\{(?:\s|~|\\[,;:! ]|\\q?quad(?![a-zA-Z]))*\}\s*\d")
"""A group holding nothing but space between two digits: ``9{}00`` and ``9{\\,}00`` show
900 and were read as 9 (the parser stopped at the group). ``3{,}000``, TeX's thousands
comma, is read as 3000."""


def _unit_char(c: str) -> bool:
    """Whether ``c`` may stand in a unit's text: a cased letter (any script), a combining
    mark, a space, a format character (drawn as nothing) or one of ``_UNIT_SIGNS``; not a
    digit, an operator or a letter of another kind (``\\u01c3`` is a letter drawn as
    ``!``)."""
    return c in _UNIT_SIGNS or unicodedata.category(c) in ("Lu", "Ll", "Lt", "Mn", "Zs", "Cf")


def _shown_words(text: str) -> str:
    """``text`` as a reader reads its words: as IFEval's checks see it (``shown_text``:
    NFKC, so fullwidth letters as letters, and what is drawn as nothing dropped), marks
    dropped and look-alikes as Latin letters (``bare_letters``: ``th\\u00f3usand``,
    ``t\\u029cousand`` and ``th\\u043eusand`` are "thousand")."""
    return small_capitals(bare_letters(shown_text(text)))


def dropped_unit(pred: str) -> str | None:
    """The span of ``pred`` that math-verify drops as a unit when that span holds more
    than a unit (see the module's docstring), or None."""
    text = _READ_BEFORE.sub(lambda m: m.group(1) or m.group(2) or "", pred.strip())
    text = _EMPTY_TEXT.sub("", _TEXT_FONTS.sub(r"\\text", text))
    m = _DROPPED.search(text)
    if not m or not text[: m.start()].strip():  # nothing before it: math-verify keeps it
        return None
    unit = _UNIT_GROUP.fullmatch(m.group(0))
    words = _UNIT_POWER.sub("", _MODULUS.sub("", unit.group(1))) if unit else ""
    shown = _shown_words(words)
    if unit and all(_unit_char(c) for c in words) and not _SCALING_WORDS.search(shown):
        return None if not _CLAIM_WORDS.search(_shown_words(unit.group(1))) else m.group(0)
    return m.group(0)


def unread_command(pred: str, gold: str, spellings: Sequence[str]) -> str | None:
    """The first command of ``_UNREAD`` in ``pred`` that ``gold`` does not hold, when
    ``pred`` holds more than one number and the LaTeX parser reads a value in none of its
    ``spellings`` (``math_answer.normalise``'s): math-verify then picked one of the
    numbers out of its text. None otherwise (``9\\hspace{1mm}\\text{cm}`` is 9)."""
    names = [m.group(1) or m.group(2) for m in _UNREAD.finditer(pred)]
    names = [n for n in names if not re.search(rf"\\{n}(?![a-zA-Z])", gold)]
    names = [n for n in names if not re.fullmatch("[bp]?mod|boxed|fbox", n)]  # read elsewhere
    if not names or len(re.findall(r"\d+", _DIMENSION.sub(" ", pred))) < 2:
        return None
    for spelling in spellings:
        if any(not isinstance(x, str) for x in read_as_latex(ascii_shown(spelling))):
            return None
    return f"\\{names[0]}"


def unread_markup(pred: str, gold: str, spellings: Sequence[str] = ()) -> str | None:
    """Why ``pred`` holds LaTeX that is not read as it is drawn and ``gold`` does not, or
    None: a unit that is more than a unit, a command of ``_MARKUP``, an empty group between
    digits (``_EMPTY_GROUP``), or one of ``_UNREAD`` in an answer none of whose
    ``spellings`` the parser can read."""
    unit = dropped_unit(pred)
    if unit and not dropped_unit(gold):
        return "text the parser drops as a unit"
    markup = _MARKUP.search(pred)
    if markup and not _MARKUP.search(gold):
        return f"markup the parser does not read ({markup.group().split('{')[0]})"
    if _EMPTY_GROUP.search(pred) and not _EMPTY_GROUP.search(gold):
        return "an empty group between digits"
    unread = unread_command(pred, gold, spellings or [pred])
    return f"LaTeX the parser cannot read ({unread})" if unread else None
