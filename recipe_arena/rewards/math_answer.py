"""Math verifier: extract the final answer, normalise it, decide equivalence with SymPy.

Equivalence is decided by math-verify (built on SymPy) with its own signal-based
timeouts switched off (``parsing_timeout=None``, ``timeout_seconds=None``): this
module runs inside a ``WorkerPool`` process whose deadline is enforced from the
parent, which works from any thread. With math-verify's defaults the same calls
raise outside the main thread, which some pipelines swallow as "wrong answer".

Deviations from OLMo 3's math verifier (open-instruct): several *different*
``\\boxed{}`` answers in one response score 0 (hedging across options is a known
reward hack; the reference takes the last one), and an extracted answer longer
than ``MAX_ANSWER_CHARS``, or holding control characters (other than tab and
newline) or bidirectional overrides, scores 0 without being parsed, and without being
shown in the reason. An answer that leaves a floor or ceiling, a sum, product,
integral, limit or derivative for SymPy to compute scores 0 unless the reference holds
the same kind (``_COMPUTING``), and one right only with its modulus clause scores 0:
copied from the question, such an expression is the answer without the work
(``(38+7 \\cdot 3) \\bmod 10`` for the last digit of 38+7*3). For the same reason an
answer that is arithmetic on numbers copied from the question scores 0 unless it is
written as the reference is (``math_copies``). An answer holding a character outside
ASCII is read as LaTeX only (``_read_answer``), never as a number picked out of it, and
one holding LaTeX the parser drops or does not read as drawn scores 0 (``math_markup``).
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from recipe_arena.rewards.math_copies import copies_question
from recipe_arena.rewards.math_markup import unread_markup
from recipe_arena.rewards.math_unicode import ascii_shown, read_as_latex
from recipe_arena.rewards.text import answer_text

# math-verify warns on every call that its own timeout is off; that is deliberate here.
logging.getLogger("math_verify").setLevel(logging.ERROR)

MAX_ANSWER_CHARS = 1000
"""Longer extracted answers are rejected unparsed (no real answer is that long)."""
SHORT_ANSWER_CHARS = 80
"""``short_answer`` fallback: a one-line answer section up to this length is the answer."""
TAIL_CHARS = 4000
"""``final_answer_is`` and ``last_number`` only search this many trailing characters."""

EXTRACTORS = ("boxed", "final_answer_is", "short_answer", "last_number")
DEFAULT_EXTRACTORS = ("boxed", "final_answer_is", "short_answer")

_FINAL_RE = re.compile(
    r"(?:final answer|the answer)\s*(?:is|:)\s*:?\s*(.+?)\s*(?:$|\n|\.\s|\.$)", re.IGNORECASE
)
_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")
_SCI_RE = re.compile(r"^([-+]?\d+(?:\.\d+)?)[eE]([-+]?\d+)$")
_UNIT_RE = re.compile(r"^([-+]?[\d.,/]+)\s*([a-zA-Z][a-zA-Z ]*)$")
_THOUSANDS_RE = re.compile(r"^-?\d{1,3}(,\d{3})+(\.\d+)?$")
_SPACED_THOUSANDS_RE = re.compile(r"^-?\d{1,3}(?:\s*\\[,;: ]\s*\d{3})+(?:\.\d+)?$")
_THOUSANDS_SPACE_RE = re.compile(r"\s*\\[,;: ]\s*")
"""``3\\,000``: one number. As written it was 3·000 = 0, a right 3000 scoring 0 and
scoring 1 for a gold of 0. A plain space (``3 000``) is left to the parser: a character
model may write one in a digit answer, whose verdict must not move."""
_PERCENT_RE = re.compile(r"^(.*?)\s*\\?%$")
_PERCENT_NUMBER = (
    r"[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+|\d*\s*\\frac\{\d+\}\{\d+\}|\d+/\d+)"
)
_PERCENT_OF_RE = re.compile(
    rf"({_PERCENT_NUMBER})|\(({_PERCENT_NUMBER})\)|\{{({_PERCENT_NUMBER})\}}"
)
"""What ``p\\%`` may hold to be read also as ``p`` and ``p/100``: a number or fraction
(in parentheses or braces, spaces and ``\\,`` before the sign aside). Anything else is
read as written only: ``3 \\approx 4\\%``, read as ``3 \\approx 4``, was 3, and 4 as
written."""
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Characters no answer holds: C0/C1 controls but tab and newline, bidi overrides."""
_MARKS = ("Mn", "Me")
"""Unicode categories of combining marks: one drawn on a digit (``9\\u0336`` is 9 struck
out, ``3\\u0338`` is 3 crossed out, ``9\\u20e3`` a keycap) is not the digit a reader
sees, while the parser reads the bare digit. The micro world writes ASCII only."""
_INVISIBLE = "Cf"
"""Unicode category of format characters, drawn as nothing: between two digits
(``1\\u200b9`` shows 19) the parser read the first digit alone (1)."""
_SUPERSCRIPTS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
"""Superscript digits: after a digit they show a power (``3\\u00b2`` is 9, ``10\\u2076`` a
million) that the parser drops (3, 10). A lone ``\\u00b9`` changes no value."""
_CLAIMS = {
    "a negation": re.compile(
        r"\\(?:neq?|not|neg|lnot|notin|n(?:less|gtr|leq|geq|leqslant|geqslant|leqq|geqq|sim"
        r"|cong|equiv|mid|parallel|approx|eqq|prec|succ|preceq|succeq|subset|supset"
        r"|subseteqq?|supseteqq?|[vV]d?ash|[vV]Dash|exists|shortmid|shortparallel|ni|[lrLR]"
        r"ightarrow|[lL]eftarrow|[lL]eftrightarrow|triangle(?:left|right)(?:eq)?)|(?:small)?"
        r"setminus)(?![a-zA-Z])"
        "|[\u00ac\u0338\u20d2\u20e5\u2204\u2209\u220c\u2224\u2226\u2241\u2244\u2247\u2249"
        "\u2260\u2262\u226d-\u2271\u2274\u2275\u2278\u2279\u2280\u2281\u2284\u2285\u2288"
        "\u2289\u22ac-\u22af\u22e0-\u22e3\u22ea-\u22ed]|=(?:\\s*\\\\!)+\\s*/|/(?:\\s*\\\\!)+\\s*="
    ),
    "an order relation": re.compile(
        r"\\(?:lt|gt|leq?|geq?|leqslant|geqslant|leqq|geqq|ll|gg|lll|ggg|lesssim|gtrsim"
        r"|lessapprox|gtrapprox|lneqq?|gneqq?|lnsim|gnsim|prec|succ|preceq|succeq|precsim"
        r"|succsim|lessdot|gtrdot|lesseqq?gtr|gtreqq?less|lessgtr|gtrless|eqslant(?:less|gtr)"
        r"|(?:prec|succ)(?:curlyeq|n?approx|neqq|nsim)|curlyeq(?:prec|succ)|[lg]vertneqq|[lg]neq"
        r"|(?:var)?(?:sq)?su[bp]set(?:n?eqq?)?)(?![a-zA-Z])"
        "|[\u2264\u2265\u2266\u2267\u2272\u2273\u226a\u226b\u227a-\u227f\u22d6\u22d7"
        "\u2a7d\u2a7e\uff1c\uff1e]"
    ),
}
"""Claims an answer may make only where the reference does: that the value is *not*
something (``\\neq 9``, ``x \\not= 9``, ``\\neg 9``) or is bounded by it (``\\lt 9``,
``\\le 9``, ``x \\ll 9``). The parser reads such a relation with one side missing, or one
it does not know, as the number beside it: ``\\boxed{\\neq 9}`` scored 1 for 9. The
ASCII signs ``<``, ``>`` and ``!=`` are left out: the micro world writes ``<`` and ``>``
in its think tags and arrows (``38->8``), and its verdicts must not move."""
_CLAIM_SIGNS = {"a negation": re.compile("!="), "an order relation": re.compile("[<>]")}
"""The ASCII signs of each kind of ``_CLAIMS``, left out there: a reference holding one
holds that kind (``x<3`` is still matched by ``x \\lt 3``)."""
_MODULUS_RE = re.compile(r"(?<![a-zA-Z])[bp]?mod(?![a-zA-Z])", re.IGNORECASE)
_MODULUS_LEAD_RE = re.compile(r"[\s\\(]*(?:\\(?:text|mathrm|operatorname)\s*\{\s*\(?\s*)?$")
"""What opens a modulus clause before its ``mod``: ``\\``, ``(``, ``\\text{ (``."""
_COMPUTING = {
    "a floor or ceiling": re.compile(
        r"(?<![a-zA-Z])[lr]?(?:floor|ceil)(?![a-zA-Z])", re.IGNORECASE
    ),
    "a sum, product, integral or limit": re.compile(
        r"\\(?:sum|prod|o?i{1,3}nt|lim(?:inf|sup)?)(?![a-zA-Z])"
    ),
    "a derivative": re.compile(r"\\partial|\\[dt]?frac\s*\{\s*d[^}]*\}\s*\{\s*d\s*[a-zA-Z]"),
}
"""Operations SymPy carries out for the answer: ``\\boxed{59 - 10\\lfloor 5.9 \\rfloor}`` is
9, the last digit of 59, without the answer having worked it out. An answer holding one
scores 0 unless the reference holds the same kind. A modulus (``\\mod``, ``\\bmod``,
``\\pmod``) may qualify an answer but not compute it: the answer must also be right
with the modulus and what follows it dropped (``x \\equiv 3 \\pmod 7`` as
``x \\equiv 3``), so ``(38+7 \\cdot 3) \\bmod 10``, which is 59 without it, scores 0."""


def marked_digit(pred: str) -> str | None:
    """The first combining mark (``_MARKS``) or power in superscript digits
    (``_SUPERSCRIPTS``) right after a digit of ``pred``, or the first run of format
    characters (``_INVISIBLE``) between two digits, or None: the number a reader sees
    there is not the one the parser reads."""
    for i, digit in enumerate(pred[:-1]):
        if not digit.isdigit():
            continue
        if unicodedata.category(pred[i + 1]) in _MARKS:
            return pred[i + 1]
        power = len(pred) - i - 1 - len(pred[i + 1 :].lstrip(_SUPERSCRIPTS))
        if pred[i + 1 : i + 1 + power] not in ("", "\u00b9"):
            return pred[i + 1]
        j = i + 1
        while j < len(pred) and unicodedata.category(pred[j]) == _INVISIBLE:
            j += 1
        if i + 1 < j < len(pred) and pred[j].isdigit():
            return pred[i + 1]
    return None


def drop_modulus(pred: str) -> str:
    """``pred`` cut before its first modulus clause, and the clause's opening."""
    m = _MODULUS_RE.search(pred)
    return _MODULUS_LEAD_RE.sub("", pred[: m.start()]) if m else pred


_TOKEN_RE = re.compile(r"[^\s$]+")


def boxed_all(text: str) -> list[str]:
    """Contents of every ``\\boxed{...}`` / ``\\fbox{...}`` (balanced braces), in order.
    Braces are matched in one pass: scanning on from each box for its closing brace, a
    response of 6,000 unclosed ``\\boxed{`` (42,000 characters) took over 5 s, the
    verifier's deadline, where it now takes milliseconds."""
    closing: dict[int, int] = {}
    opened: list[int] = []
    for brace in re.finditer(r"[{}]", text):
        if brace.group() == "{":
            opened.append(brace.start())
        elif opened:
            closing[opened.pop()] = brace.start()
    out: list[str] = []
    for m in re.finditer(r"\\(?:boxed|fbox)\s*", text):
        i = m.end()
        if i < len(text) and text[i] == "{":
            if i in closing:
                out.append(text[i + 1 : closing[i]])
        else:  # "\boxed 5"
            tok = _TOKEN_RE.match(text, i)
            if tok:
                out.append(tok.group(0))
    return out


def extract_answer(
    response: str, extractors: Sequence[str] = DEFAULT_EXTRACTORS
) -> tuple[str | None, str]:
    """(answer or None, how it was found / why not). Looks only after ``</think>``."""
    text = answer_text(response)
    for how in extractors:
        if how == "boxed":
            boxes = boxed_all(text)
            if boxes:
                distinct = {re.sub(r"\s+", "", b) for b in boxes}
                if len(distinct) > 1:
                    return None, f"{len(distinct)} different boxed answers"
                return boxes[-1], "boxed"
        elif how == "final_answer_is":
            found = _FINAL_RE.findall(text[-TAIL_CHARS:])
            if found:
                return found[-1], "final answer is"
        elif how == "short_answer":
            s = text.strip()
            if s and len(s) <= SHORT_ANSWER_CHARS and "\n" not in s:
                return s, "short answer"
        elif how == "last_number":
            nums = _NUMBER_RE.findall(text[-TAIL_CHARS:])
            if nums:
                return nums[-1], "last number"
        else:
            raise ValueError(f"unknown math extractor {how!r}; allowed: {', '.join(EXTRACTORS)}")
    return None, "no answer found"


def normalise(ans: str, reference: bool = False) -> list[str]:
    """Spellings of one answer worth trying, most literal first (all LaTeX-ready). A
    number with letters after it is also tried without them, as a unit (``12 cm`` as
    12); in a ``reference`` only where a space parts them, since letters glued to the
    number are part of its value: a gold of ``3x``, ``2n`` or ``4i`` was also 3, 2 or 4,
    so ``\\boxed{3}`` and ``\\boxed{3y}`` (also read as 3) scored 1 for ``3x``."""
    s = ans.strip()
    for a, b in (("\\(", ""), ("\\)", ""), ("\\[", ""), ("\\]", ""), ("$", "")):
        s = s.replace(a, b)
    s = s.strip().rstrip(".").strip()
    s = re.sub(r"\\[dt]frac", r"\\frac", s)
    s = s.replace("^\\circ", "").replace("^{\\circ}", "").replace("°", "").replace("\\!", "")
    s = re.sub(r"\\text\{\s*(degrees?|units?)\s*\}", "", s).strip()
    m = _SCI_RE.match(s)
    # 2e3 is 2000 only: read as written, SymPy takes it for 2*e*3 (6e), a second value
    out = [f"{m.group(1)}\\times 10^{{{m.group(2)}}}"] if m else [s]
    if _SPACED_THOUSANDS_RE.match(s):
        out = [_THOUSANDS_SPACE_RE.sub("", s)]
    if _THOUSANDS_RE.match(s):
        out.append(s.replace(",", ""))
    m = _UNIT_RE.match(s)
    if m and (not reference or s[m.end(1)].isspace()):
        out.append(m.group(1))
    pct = _PERCENT_RE.match(s)
    num = pct and _PERCENT_OF_RE.fullmatch(re.sub(r"(?:\\[,;:! ]|\s)+$", "", pct.group(1)))
    if num:
        p = next(g for g in num.groups() if g)
        out += [p, f"({p})/100"]
    return list(dict.fromkeys(out))


def _parse(s: str) -> list[Any]:
    """math-verify's reading of the spelling ``s`` (a new list each call; its SymPy
    objects are immutable)."""
    return list(_parsed(s))


@functools.lru_cache(maxsize=1024)
def _parsed(s: str) -> tuple[Any, ...]:
    """``_parse``'s value, remembered per worker: a right answer and its gold are read by
    ``equivalent`` and again by ``computed_kinds``, and the micro world's golds repeat
    (parsing is most of a check's time: ``benchmarks/math_parse_cache.py`` measures about
    6.7 times the checks per second with it, the same verdicts)."""
    from math_verify import parse

    return tuple(parse(f"${s}$", parsing_timeout=None))


def _read_answer(s: str) -> list[Any]:
    """The reading of an answer's spelling ``s``: ``_parse``'s, or for one holding a
    character outside ASCII (not drawn as nothing or a space) the LaTeX reading only
    (``math_unicode``): ``9\\u00b75`` (9 times 5) was read as 9."""
    shown = ascii_shown(s)
    return list(_parsed(shown) if shown.isascii() else read_as_latex(shown))


def equivalent(gold: str, pred: str) -> bool:
    """True when some spelling of ``pred`` (read by ``_read_answer``) equals some spelling
    of ``gold`` under SymPy."""
    from math_verify import verify

    golds = [g for g in (_parse(x) for x in normalise(gold, reference=True)) if g]
    for p in normalise(pred):
        parsed = _read_answer(p)
        if parsed and any(verify(g, parsed, timeout_seconds=None) for g in golds):
            return True
    return False


_COMPUTED_NODES = {
    "a floor or ceiling": ("floor", "ceiling"),
    "a sum, product, integral or limit": ("Sum", "Product", "Integral", "Limit"),
    "a derivative": ("Derivative",),
}
"""The SymPy operations of each kind of ``_COMPUTING``, for ``computed_kinds``."""


def computed_kinds(ans: str) -> set[str]:
    """The kinds of ``_COMPUTING`` that SymPy's reading of ``ans`` holds, written in
    any way (``\\frac{\\mathrm{d}}{\\mathrm{d}x}`` is a derivative the regex does not
    see) or named by ``_COMPUTING`` in its text."""
    import sympy

    kinds = {kind for kind, rx in _COMPUTING.items() if rx.search(ans)}
    for spelling in normalise(ans):
        for parsed in _parse(spelling):
            if isinstance(parsed, (sympy.Basic, sympy.MatrixBase)):
                kinds |= {
                    kind
                    for kind, names in _COMPUTED_NODES.items()
                    if parsed.has(*(getattr(sympy, n) for n in names))
                }
    return kinds


_WARM_PAIRS = (
    ("\\frac{1}{2}", "0.5"),
    ("7", "I am not sure."),
    ("\\{1, 2\\}", "[1, 2)"),
    ("x^2 - 1", "\\sin x + \\log 2 + e^{i\\pi}"),
)
"""(gold, answer) pairs ``warm`` compares: a number; words, whose symbolic comparison
runs SymPy's ``simplify``, which imports ``sympy.physics.units`` (34 modules, 0.5 to
0.9 s of CPU where no bytecode of them was written) on its first call; a set and an
interval; functions and constants. Each builds the LaTeX parser's lazy prediction
tables for its kind of answer. Left to a worker's first check, these took up to 0.9 s
of CPU: over 5 s, the default deadline, on a loaded 2-core machine, so that the
audit's ``answer_only_in_think`` probe (``I am not sure.``) scored ``timeout``."""


def warm() -> None:
    """Build SymPy's and the LaTeX parser's lazy state once (worker start-up, in the
    zygote, so that every forked worker starts with it): the modules a comparison
    imports on first use and the parser's tables (``_WARM_PAIRS``). Changes timing only,
    never a verdict."""
    for gold, answer in _WARM_PAIRS:
        equivalent(gold, answer)


def check_math(
    gold: str, response: str, extractors: Sequence[str] = DEFAULT_EXTRACTORS, prompt: str = ""
) -> tuple[float, str]:
    """Worker entry point: (1.0 or 0.0, reason). Runs without any timeout of its own.
    ``prompt`` is the question, read only to refuse an answer that copies its arithmetic."""
    if not isinstance(gold, str) or not gold.strip():
        return 0.0, "error: math ground_truth must be a non-empty string"
    pred, how = extract_answer(response, extractors)
    if pred is None:
        return 0.0, how
    if len(pred) > MAX_ANSWER_CHARS:
        return 0.0, f"answer too long ({len(pred)} chars, {how})"
    bad = _CONTROL_RE.search(pred)
    if bad:
        return 0.0, f"answer holds a control character (U+{ord(bad.group()):04X}, {how})"
    mark = marked_digit(pred)
    if mark:
        return 0.0, f"answer has U+{ord(mark):04X} on or after a digit ({how})"
    claims = [
        kind
        for kind, rx in _CLAIMS.items()
        if rx.search(pred) and not (rx.search(gold) or _CLAIM_SIGNS[kind].search(gold))
    ]
    if claims:
        return 0.0, f"answer states {claims[0]} the reference does not ({how})"
    left = [kind for kind, rx in _COMPUTING.items() if rx.search(pred) and not rx.search(gold)]
    if left:
        return 0.0, f"answer leaves {left[0]} for the verifier to compute ({how})"
    ok = equivalent(gold, pred)
    left = sorted(computed_kinds(pred) - computed_kinds(gold)) if ok else []
    if left:
        return 0.0, f"answer leaves {left[0]} for the verifier to compute ({how})"
    if ok and _MODULUS_RE.search(pred) and not _MODULUS_RE.search(gold):
        bare = drop_modulus(pred)  # a modulus may qualify the answer, never compute it
        ok = bool(bare.strip()) and equivalent(gold, bare)
        how = how if ok else f"{how}, wrong without its modulus"
    if ok and copies_question(drop_modulus(pred), prompt, gold):  # 15-2*3 \mod 10 too
        ok, how = False, f"{how}, the question's arithmetic copied"
    unread = unread_markup(pred, gold, normalise(pred)) if ok else None
    if unread:
        return 0.0, f"answer holds {unread} ({how})"
    short = " ".join(pred.split())
    short = short if len(short) <= 40 else short[:37] + "..."
    return (1.0, f"correct ({how}: {short})") if ok else (0.0, f"wrong ({how}: {short})")


def math_task(row: Any, response: str, cfg: Any) -> tuple[tuple[Any, ...], float]:
    """``check_math``'s arguments for ``response`` to ``row`` (a PromptRow) under ``cfg``
    (RewardsConfig), and its deadline: ``rewards.timeout_s``."""
    return (
        (row.ground_truth, response, tuple(cfg.math_extractors), row.prompt_text),
        cfg.timeout_s,
    )
