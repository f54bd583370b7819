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
(``(38+7 \\cdot 3) \\bmod 10`` for the last digit of 38+7*3).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

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
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Characters no answer holds: C0/C1 controls but tab and newline, bidi overrides."""
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


def drop_modulus(pred: str) -> str:
    """``pred`` cut before its first modulus clause, and the clause's opening."""
    m = _MODULUS_RE.search(pred)
    return _MODULUS_LEAD_RE.sub("", pred[: m.start()]) if m else pred


def boxed_all(text: str) -> list[str]:
    """Contents of every ``\\boxed{...}`` / ``\\fbox{...}`` (balanced braces), in order."""
    out: list[str] = []
    for m in re.finditer(r"\\(?:boxed|fbox)\s*", text):
        i = m.end()
        if i < len(text) and text[i] == "{":
            depth, j = 0, i
            while j < len(text):
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        out.append(text[i + 1 : j])
                        break
                j += 1
        else:  # "\boxed 5"
            tok = re.match(r"[^\s$]+", text[i:])
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


def normalise(ans: str) -> list[str]:
    """Spellings of one answer worth trying, most literal first (all LaTeX-ready)."""
    s = ans.strip()
    for a, b in (("\\(", ""), ("\\)", ""), ("\\[", ""), ("\\]", ""), ("$", "")):
        s = s.replace(a, b)
    s = s.strip().rstrip(".").strip()
    s = re.sub(r"\\[dt]frac", r"\\frac", s)
    s = s.replace("^\\circ", "").replace("^{\\circ}", "").replace("°", "").replace("\\!", "")
    s = re.sub(r"\\text\{\s*(degrees?|units?)\s*\}", "", s).strip()
    out = [s]
    m = _SCI_RE.match(s)
    if m:
        out.append(f"{m.group(1)}\\times 10^{{{m.group(2)}}}")
    if _THOUSANDS_RE.match(s):
        out.append(s.replace(",", ""))
    m = _UNIT_RE.match(s)
    if m:
        out.append(m.group(1))
    pct = re.match(r"^(.*?)\s*\\?%$", s)
    if pct and pct.group(1):
        out += [pct.group(1), f"({pct.group(1)})/100"]
    return list(dict.fromkeys(out))


def _parse(s: str) -> list[Any]:
    from math_verify import parse

    parsed: list[Any] = parse(f"${s}$", parsing_timeout=None)
    return parsed


def equivalent(gold: str, pred: str) -> bool:
    """True when some spelling of ``pred`` equals some spelling of ``gold`` under SymPy."""
    from math_verify import verify

    golds = [g for g in (_parse(x) for x in normalise(gold)) if g]
    for p in normalise(pred):
        parsed = _parse(p)
        if parsed and any(verify(g, parsed, timeout_seconds=None) for g in golds):
            return True
    return False


def warm() -> None:
    """Build SymPy's and the LaTeX parser's lazy state once (worker start-up)."""
    equivalent("\\frac{1}{2}", "0.5")


def check_math(
    gold: str, response: str, extractors: Sequence[str] = DEFAULT_EXTRACTORS
) -> tuple[float, str]:
    """Worker entry point: (1.0 or 0.0, reason). Runs without any timeout of its own."""
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
    left = [kind for kind, rx in _COMPUTING.items() if rx.search(pred) and not rx.search(gold)]
    if left:
        return 0.0, f"answer leaves {left[0]} for the verifier to compute ({how})"
    ok = equivalent(gold, pred)
    if ok and _MODULUS_RE.search(pred) and not _MODULUS_RE.search(gold):
        bare = drop_modulus(pred)  # a modulus may qualify the answer, never compute it
        ok = bool(bare.strip()) and equivalent(gold, bare)
        how = how if ok else f"{how}, wrong without its modulus"
    short = " ".join(pred.split())
    short = short if len(short) <= 40 else short[:37] + "..."
    return (1.0, f"correct ({how}: {short})") if ok else (0.0, f"wrong ({how}: {short})")


def math_task(row: Any, response: str, cfg: Any) -> tuple[tuple[Any, ...], float]:
    """``check_math``'s arguments for ``response`` to ``row`` (a PromptRow) under ``cfg``
    (RewardsConfig), and its deadline: ``rewards.timeout_s``."""
    return (row.ground_truth, response, tuple(cfg.math_extractors)), cfg.timeout_s
