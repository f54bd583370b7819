"""Whether a math answer copies the question's arithmetic for SymPy to finish.

"What is the last digit of 15-2*3?" answered ``15-2 \\cdot 3`` is 9 without any work:
SymPy works out the question's own expression. ``copies_question`` finds such an answer
(``math_answer.check_math`` scores it 0) whatever signs, grouping braces, wrappers and
zeros it is written with, and whatever order its numbers are in; plain numbers, lists,
fractions in lowest terms, powers of ten and anything holding a symbol are forms of a
value, not arithmetic. The micro world's copies are its ``\\boxed{s-d*k}``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from decimal import Decimal

_CANON_OPS = re.compile(r"\\(?:cdot|times|ast)(?![a-zA-Z])")
_CANON_DROP = re.compile(
    r"\\(?:left|right|displaystyle)(?![a-zA-Z])|\\[\[\](),;:! $%]|(?<=\\)[dt](?=frac|binom)"
    r"|[\s$()\[\]]"
)
_ARITH_WORDS = re.compile(r"\\(?:frac|binom|choose|over|div|gcd|lcm|min|max)(?![a-zA-Z])")
_POWER_OF_TEN_RE = re.compile(r"(?:[-+]?\d+(?:\.\d+)?\*)?10\^\{?[-+]?\d+\}?")
_LOWEST_FRACTION_RE = re.compile(r"[-+]?\\frac\{(\d+)\}\{(\d+)\}|[-+]?(\d+)/(\d+)")


def canonical(text: str) -> str:
    """``text`` spelt one way for comparing what was written: no spaces, ``$``, brackets,
    ``\\left``/``\\right`` or display sizes, ``\\cdot``/``\\times`` as ``*`` and
    ``\\dfrac``/``\\tfrac`` as ``\\frac``."""
    return _CANON_DROP.sub("", _CANON_OPS.sub("*", text))


_COPY_SIGNS = str.maketrans(
    {"\u2212": "-", "\u2238": "-", "\u2214": "+", "\u2295": "+", "\u229e": "+", "\u00f7": "/"}
    | {"\u2215": "/", **dict.fromkeys("\u00d7\u00b7\u22c5\u2217\u2218\u2219\u2297\u22a0", "*")}
    | dict.fromkeys("\u22a1\u22c4\u22c6\u22c8\u22c9\u22ca", "*")
)
"""The signs outside ASCII that the LaTeX parser reads as ``-``, ``+``, ``/`` and ``*``
(``15-2\u22193`` with the bullet operator is 15-2*3): a copy written with them is a copy."""
_COPY_WRAP = re.compile(
    r"^\+|^[a-zA-Z]=|\\[{}]|^\.|\.$|\^\{?\\circ\}?|\u00b0"
    r"|\\(?:text|mathrm|textrm|mbox)\{[a-zA-Z]*\}$"
)
"""What ``normalise`` or math-verify reads past around a value: a leading ``+`` or
``x=``, set braces, a full stop, a degree sign, a unit in ``\\text{}``."""
_COPY_TEXT = re.compile(r"\\(?:text[a-z]*|math[a-z]+|operatorname|mbox)\{([^{}]*)\}")
_COPY_DECOR = re.compile(
    r"\\(?:[hv]?phantom|hspace\*?|tag\*?|label)\{[^{}]*\}"
    r"|\\(?:q?quad|enspace|[lL]arge|LARGE|small|huge|Huge|bf|it|rm|sf|tt|[lcv]?dots|tilde"
    r"|d?dot|hat|bar|vec|lbrace|rbrace|langle|rangle|[lr]?[vV]ert|[bB]igg?[lr]?|nonumber"
    r"|notag)(?![a-zA-Z])|_\{[^{}]*\}|_\w|[|&~]|^[a-zA-Z]+|(?<![\\a-zA-Z])[a-zA-Z]+$"
)
"""What the parser reads past that is not part of a value: spacing, sizes, fonts,
accents, dots, fences, subscripts (``15-2*3_{10}``), words before or after (``cm``)."""
_COPY_SIDES = re.compile(r"=|\\(?:approx|equiv|simeq|sim|cong)(?![a-zA-Z])")


def _ungroup(text: str) -> str:
    """``text`` without the braces that only group: opened at the start or after an
    operator, ``=``, ``,``, ``(`` or another brace (``{15}-2*{3}``, not ``\\frac{8}{4}``)."""
    drop: set[int] = set()
    stack: list[tuple[int, bool]] = []
    for i, c in enumerate(text):
        if c not in "{}" or (i and text[i - 1] == "\\"):
            continue
        if c == "{":
            stack.append((i, i == 0 or text[i - 1] in "-+*/=,({"))
        elif stack:
            start, group = stack.pop()
            drop |= {start, i} if group else set()
    return "".join(c for i, c in enumerate(text) if i not in drop)


def copy_form(text: str) -> str:
    """``text`` as ``copies_question`` compares it: ``canonical``, with the signs of
    ``_COPY_SIGNS`` as ASCII, without grouping braces or what ``_COPY_WRAP`` names."""
    shown, last = canonical(text.translate(_COPY_SIGNS).replace("\\operatorname{lcm}", "\\lcm")), ""
    while shown != last:
        last, shown = shown, _ungroup(_COPY_WRAP.sub("", shown))
    return shown


def _copy_core(text: str) -> str:
    """One side of ``text`` as ``copies_question`` compares it: ``copy_form`` without what
    ``_COPY_DECOR`` names, a ``\\text{}`` or font holding no digit, or such a wrapper around
    one that does."""
    shown, last = text, ""
    while shown != last:
        last = shown
        shown = _COPY_TEXT.sub(lambda m: m.group(1) if re.search(r"\d", m.group(1)) else "", shown)
        shown = _ungroup(_COPY_WRAP.sub("", _COPY_DECOR.sub("", shown)))
    return shown


_NUMBER_IN_RE = re.compile(r"\d+(?:\.\d+)?")
_ASKED_RUN_RE = re.compile(r"\d+(?:\.\d+)?(?:[-+*/^]\d+(?:\.\d+)?)+")
"""An infix expression of the question (``15-2*3``), whose numbers a rearranged copy uses."""


def _numbers(text: str) -> Counter[str]:
    """The numbers written in ``text``, by value (``015`` and ``15.0`` are 15)."""
    return Counter(str(Decimal(n).normalize()) for n in _NUMBER_IN_RE.findall(text))


def _rearranged(shown: str, asked: str) -> bool:
    """Whether ``shown`` is built of exactly the numbers of one infix expression of the
    question, each as often, zeros aside (``15-3*2``, ``-2*3+15``, ``015-2*3.0``)."""
    return any(_numbers(run) == _numbers(shown) for run in _ASKED_RUN_RE.findall(asked))


def _copied(shown: str, asked: str, ref: str) -> bool:
    """Whether one side ``shown`` is arithmetic on numbers written in ``asked`` (the
    question), as written there or rearranged, and not the reference's own form ``ref``."""
    if not shown or shown == ref or (shown not in asked and not _rearranged(shown, asked)):
        return False
    bare = re.sub(r"[{}]", " ", _ARITH_WORDS.sub(" ", shown)).strip()
    if not re.fullmatch(r"[\d.,+\-*/^!\s]+", bare) or _POWER_OF_TEN_RE.fullmatch(shown):
        return False
    if bare == shown and not re.search(r"[-+*/^!]", bare.lstrip("+-")):
        return False  # plain numbers
    frac = _LOWEST_FRACTION_RE.fullmatch(shown)
    if frac:
        num, den = (int(x) for x in (frac.group(1, 2) if frac.group(1) else frac.group(3, 4)))
        return den == 1 or math.gcd(num, den) != 1
    return True


def copies_question(pred: str, prompt: str, gold: str) -> bool:
    """Whether ``pred`` is arithmetic on numbers (``15-2*3``, ``\\binom{5}{2}``,
    ``\\gcd(8, 12)``) written in the question (``prompt``) and not as the reference
    (``gold``). Its value is the question's own, which SymPy works out: "What is the last
    digit of 15-2*3?" answered ``15-2 \\cdot 3`` is 9 without any work. Plain numbers,
    lists of them, fractions in lowest terms, powers of ten and anything holding a
    symbol, root or constant are forms of a value, not arithmetic. The question's
    expression reordered (``15-3*2``) is a copy; partly worked (``15-6``, a number it does
    not hold) it is not, and is judged by its value."""
    if not prompt or copy_form(pred) == copy_form(gold):
        return False
    asked, ref = _copy_core(copy_form(prompt)), _copy_core(copy_form(gold))
    sides = [c for c in (_copy_core(x) for x in _COPY_SIDES.split(copy_form(pred))) if c]
    return bool(sides) and all(_copied(side, asked, ref) for side in sides)
