"""Latin letters' look-alikes from the Cyrillic and Greek scripts, for IFEval instructions
that forbid something, and small capitals, for the one that forbids capitals.

NFKC keeps ``о`` (Cyrillic o) apart from ``o``, so ``lоve`` written with it passed "do not
use the word love" while a reader sees "love". Folding these letters into Latin ones for
every check would break honest answers in those scripts (langdetect would no longer read
a Russian answer as Russian), so the folded text is read only as a second reading by the
instructions that forbid a word or cap a count (``FORBIDDING``): the answer must follow
them both as shown and with look-alikes read as the Latin letters they look like (and so
must two responses asked to differ). So must an answer in lowercase, or one capped in
capitalised words, with small capitals (``ᴛʜᴇ``, lowercase letters to Unicode, drawn as
capitals) read as capitals (``second_reading``). The instructions that forbid a word
or cap a count, and two responses asked to differ, also read the answer without the
diacritics drawn on Latin letters (``bare_letters``): ``lo\u0334ve`` with an overlaid
tilde, ``lọve`` and ``löve`` are "love" under their marks.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

_LATIN = str.maketrans(
    "аеһіјӏорсѕухԁԛԝүАВЕЅІЈКМНОРСТХҮԚԜӀονιακρυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aehijlopcsyxdqwyABESIJKMHOPCTXYQWloviakpuxABEZHIKMNOPTYX",
)
"""Cyrillic and Greek letters drawn as a Latin letter (``о`` as ``o``, ``Р`` as ``P``,
the palochka ``Ӏ`` as ``l``), each to that letter, and the Lisu letters drawn as Latin
capitals (``_LISU``)."""

_LISU = str.maketrans("ꓐꓑꓓꓔꓖꓗꓙꓚꓜꓝꓟꓠꓡꓢꓣꓦꓧꓪꓫꓬꓮꓰꓲꓳꓴ", "BPDTGKJCZFMNLSRVHWXYAEIOU")
"""The Lisu (Fraser) letters drawn as Latin capitals (``ꓡꓳꓦꓰ`` shows "LOVE"), each to that
capital; Lisu has no case, so ``the ꓚꓮꓔ`` passed "all lowercase" and ``ꓡꓳꓦꓰ`` "do not
use the word love". The turned and reversed ones (``ꓕ``, ``ꓘ``) are read as they are."""

FORBIDDING = frozenset(
    {"keywords:forbidden_words", "keywords:frequency", "keywords:letter_frequency"}
)
"""Instructions whose checkers forbid a word (``forbidden_words``) or cap how often a
word or letter occurs (the frequency ones, under the relation "less than"): a look-alike
hides what they count."""


_CONFUSABLE = str.maketrans(
    (
        "ıƄƍƖƦƽǀɑɡɣɩɪɯʋʏͿγσϜϳϺУЬгѡѴѵҽԌՍՏՕագզհոռսց"
        "քօᎠᎡᎢᎥᎩᎪᎫᎬᎳᎷᎻᎽᏀᏂᏃᏏᏒᏔᏕᏙᏚᏞᏟᏢᏦᏧᏳᏴᐯᑌᑭᑯᑲᒍᒪᕁᕼᕽ"
        "ᖇᖯᖴᗅᗞᗪᗰᗷᚷᛁᛕᛖᴄᴏᴑᴜᴠᴡᴢᴦᶃᶌẝỿⲅⲎⲒⲔⲘⲚⲞⲟⲢⲣⲤⲥⲦⲨⲬⳐ"
        "ꙇꜱꞘꞙꞟꞲꞳꞴꬲꬵꬽꭇꭈꭎꭒꭚꭵꮁꮃꮓꮩꮪꮯ𐊂𐊆𐊇𐊊𐊐𐊒𐊕𐊖𐊗𐊠𐊡𐊢𐊥𐊫𐊰𐊱𐊲"
        "𐊴𐋏𐌁𐌂𐌉𐌑𐌕𐌗𐐄𐐕𐐛𐐠𐐬𐐽𐑈𐒴𐓂𐓎𐓪𐓶𐔓𐔖𐔘𐔜𐔝𐔥𐔦𐔧𑢠𑢢𑢣𑢤𑢦𑢩𑢮𑢲𑢵𑢸𑢼𑣀"
        "𑣁𑣂𑣃𑣄𑣈𑣗𑣘𑣜𖼈𖼊𖼖𖼨𖼵𖼺𖽀𖽂𖽃"
    ),
    (
        "ibglRslagyiiwuyJyoFjMYbrwVveGUSOwqqhnnug"
        "foDRTiYAJEWMHYGhZbRWSVSLCPKdGBVUPdbJLxHx"
        "RbFADDMBXlKMcoouvwzrgyfyrHlKMNOoPpCcTYXL"
        "isFfuJXBeforruuyirwzvscBEFlXOPSTABCFOMTY"
        "XHBClMTXOCLSocsROUouNOKCVFLXVFLYEZELOUTv"
        "sFizoouyVTLlRSAUY"
    ),
)
"""The other letters that Unicode's confusables (UTS #39, ``confusables.txt`` as the
``confusable-homoglyphs`` package 3.3.1 holds it) list as confusable with one Latin
letter, and that NFKC keeps apart, from the Latin, Greek, Cyrillic, Armenian, Cherokee,
Canadian syllabics, Coptic and historic scripts (runic, Old Italic, Deseret, Osage,
Lycian, Carian, Elbasan, Warang Citi, Miao): the script ``ɡ``, the Latin alpha ``ɑ``,
the dental click ``ǀ`` drawn as ``l``, the izhitsa ``ѵ``, the Armenian ``օ``, the
Cherokee ``Ꮮ Ꮩ Ꭼ`` and the Canadian syllabics ``ᒪ ᐯ``, each to that letter (``I ᏞOᏙᎬ
the sea`` and ``I ᒪOᐯE the sea`` passed "do not use the word love"). Letters of the
living scripts of other languages that merely resemble a Latin one (the Myanmar ``ဝ``,
the Georgian ``ყ``, the Ethiopic ``ዐ``) are left as they are; ``_LATIN`` keeps its own
reading where the two differ (the Greek ``Ι`` is ``I``, not ``l``)."""


_CHEROKEE_SMALL = {
    c: ord(chr(_CONFUSABLE[ord(chr(c).upper())]).lower())
    for c in [*range(0xAB70, 0xABC0), *range(0x13F8, 0x13FE)]
    if ord(chr(c).upper()) in _CONFUSABLE
}
"""The Cherokee small letters whose capitals are confusable with a Latin letter (``ꮮ``,
small ``Ꮮ``), each to that letter in lowercase: drawn as small capitals of the same
shapes, ``I ꮮove the sea`` passed "do not use the word love"."""


def latin_lookalikes(text: str) -> str:
    """``text`` with look-alikes of Latin letters read as those letters: Cyrillic and
    Greek ones (``lоve`` -> ``love``), Lisu ones (``_LISU``), the other confusable
    letters (``_CONFUSABLE``, ``_CHEROKEE_SMALL``) and the Latin small capitals as
    capitals (``ʟove`` -> ``Love``); other characters as they are."""
    return text.translate(_AS_LATIN)


_MARKED_LATIN = re.compile(
    "([A-Za-z])[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+"
)
"""A Latin letter and the diacritics drawn on it: combining marks of the blocks that
Latin, Greek and Cyrillic share (combining diacritical marks, their extended and
supplement blocks, those for symbols, half marks). Marks of other scripts (the
Devanagari virama, Arabic vowel signs) are parts of their letters and stay."""


def bare_letters(text: str) -> str:
    """``text`` with look-alikes read as Latin letters (``latin_lookalikes``) and the
    diacritics on Latin letters dropped: ``lo\u0334ve`` (an overlaid tilde), ``lọve``,
    ``löve`` -> ``love``. A reader sees the word under its marks, as under a Cyrillic
    ``о``; NFKC composes ``o`` and a dot below into ``ọ``, another letter to the
    checkers, and keeps marks no letter is composed with beside the letter, so either
    way "love" was not found. Decomposed first (NFD), so composed letters lose their
    marks too; recomposed after (NFC), so other scripts read as before."""
    text = latin_lookalikes(unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFC", _MARKED_LATIN.sub(r"\1", text))


_CAPITALS = str.maketrans("ɢɪɴʀʏʙʜʟᴀᴄᴅᴇᴊᴋᴍᴏᴘᴛᴜᴠᴡᴢꜰꜱꞯ", "GINRYBHLACDEJKMOPTUVWZFSQ")
"""The Latin small capitals (``ᴛ``, ``ʜ``, ``ᴇ``; Unicode files them as lowercase
letters), each to its capital."""


_REGIONAL = {0x1F1E6 + k: ord("A") + k for k in range(26)}
"""The regional indicator symbols ``🇦``-``🇿``, each to its capital: symbols to Unicode,
drawn as boxed capitals where two of them make no flag or a character drawn as nothing
(dropped by ``shown_text``) parts them, so ``I 🇱🇴🇻\u200b🇪 the sea`` passed "do not
use the word love". Here a flag's two are read as capitals too (``🇺🇸`` is "US" to "do
not use the word us"); the case checks keep flags (``small_capitals``)."""

_BOXED = {base + k: ord("A") + k for base in (0x1F150, 0x1F170) for k in range(26)}
"""The negative circled and negative squared Latin capitals (``🅛``, ``🅻``), symbols to
Unicode with no compatibility form (NFKC folds the plain circled and squared ones to
letters), each to its capital: ``I 🅻🅾🆅🅴 the sea`` passed "do not use the word love".
The case checks need no reading of them: Unicode counts them as capitals
(Other_Uppercase), and so does ``str.isupper``."""

_DRAWN_LATIN = str.maketrans("ɛєεвнт", "eeeBHT")
"""Letters drawn as a Latin letter that Unicode's confusables do not list with one: the
open e ``ɛ``, the Ukrainian ``є`` and the Greek ``ε``, drawn as a round ``e`` (``I lovɛ
the sea`` passed "do not use the word love"); and the Cyrillic ``в н т``, which it lists
with the small capitals ``ʙ ʜ ᴛ`` (``_CAPITALS``), as those capitals."""


_AS_LATIN = {**_CAPITALS, **_CHEROKEE_SMALL, **_CONFUSABLE, **_LISU, **_LATIN}
_AS_LATIN |= {**_REGIONAL, **_BOXED, **_DRAWN_LATIN}
"""Every look-alike ``latin_lookalikes`` reads, in one table: where two tables read a
character, the later one's reading (``_LATIN`` first)."""


_UNCASED = {k: v for k, v in _CONFUSABLE.items() if not (chr(k).islower() or chr(k).isupper())}
"""The confusable letters that have no case (the Canadian syllabics ``ᗰ ᗅ ᗪ`` drawn as
``M A D``, ``ᑲ`` drawn as ``b``, the historic scripts' ones): the case checks skip them,
so ``the sea is ᗰᗅᗪ`` passed "all lowercase", ``THE SEA IS ᑲIG`` "all capitals" and
``ᗰᗅᗪ and ᗷᒪᑌᗴ`` "less than 2 capitalised words"."""


def small_capitals(text: str) -> str:
    """``text`` with Latin small capitals and the Lisu letters drawn as capitals read as
    capitals (``ᴛʜᴇ`` -> ``THE``, ``ꓚꓮꓔ`` -> ``CAT``), regional indicators that make no
    flag as capitals (``_letters_or_flag``: ``the sea is 🇧🇮🇬``, the flag of Burundi
    and a boxed ``G``, passed "all lowercase"), the confusable letters without
    case as the Latin letters they are drawn as (``_UNCASED``), and without the combining
    ypogegrammeni (U+0345), the one combining mark Unicode counts as a lowercase letter:
    drawn as a small iota under a capital, it made ``SEA\u0345`` no capitalised word,
    so four capitalised words passed "less than 2"."""
    drawn = text.translate(_CAPITALS).translate(_LISU).translate(_UNCASED)
    return _REGIONAL_RUN.sub(_letters_or_flag, drawn.replace("\u0345", ""))


_FLAG_CODES = """
    AC AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM
    BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CP CR CU CV CW CX
    CY CZ DE DG DJ DK DM DO DZ EA EC EE EG EH ER ES ET EU FI FJ FK FM FO FR GA GB GD GE
    GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU IC ID IE IL IM IN IO
    IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU
    LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE
    NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS
    RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TA TC TD TF TG
    TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM UN US UY UZ VA VC VE VG VI VN VU WF WS
    XK YE YT ZA ZM ZW
"""
_FLAGS = frozenset(_FLAG_CODES.split())
"""The pairs of regional indicators drawn as a flag (Unicode's emoji flag sequences: the
ISO 3166 regions and AC, CP, DG, EA, EU, IC, TA, UN, XK)."""

_REGIONAL_RUN = re.compile("[\U0001f1e6-\U0001f1ff]{1,2}")


def _letters_or_flag(m: re.Match[str]) -> str:
    """Two regional indicators (or a last one alone) as they are drawn: a flag as it is,
    else as capitals (``🇧🇮🇬`` shows the flag of Burundi and a boxed ``G``)."""
    letters = m.group().translate(_REGIONAL)
    return m.group() if letters in _FLAGS else letters


_SPACES = re.compile(r"[^\S\n]+")
_LINE_END_SPACES = re.compile(r" ?\n ?")


def same_spacing(text: str) -> str:
    """``text`` with each run of spaces and tabs as one space and none beside a line
    break: two responses that differ only there (``The sea is big.`` and ``The sea  is
    big.``) are one response drawn twice."""
    return _LINE_END_SPACES.sub("\n", _SPACES.sub(" ", text))


_PLAIN_MARKS = str.maketrans(
    dict.fromkeys("\u2018\u2019\u201b\u2032\u02bc", "'")
    | dict.fromkeys("\u201c\u201d\u201f\u2033", '"')
    | dict.fromkeys("\u2010\u2212", "-")
    | {"\u2026": "..."}
)
"""Marks drawn as an ASCII one: the curly quotes, the prime and the modifier apostrophe
as ``'`` and ``"``, the hyphen ``‐`` and the minus sign ``−`` as ``-``, the ellipsis
``…`` as ``...``. Two responses that differ only by them (``It's big.`` and ``It’s
big.``) are one response drawn twice."""


def _two_responses(text: str) -> str:
    """How ``combination:two_responses`` reads an answer a second time: look-alikes as
    Latin letters, without diacritics (``bare_letters``), marks drawn as ASCII ones as
    those (``_PLAIN_MARKS``), spacing made one (``same_spacing``), and case folded: the
    same words in capitals (``The sea is big.`` and ``THE SEA IS BIG.``) are one response
    written twice, not two different ones."""
    return same_spacing(bare_letters(text).translate(_PLAIN_MARKS)).casefold()


def second_reading(iid: str, args: dict[str, Any] | None) -> Callable[[str], str] | None:
    """How instruction ``iid`` (built with ``args``) reads an answer a second time, which it
    must follow too: with look-alikes as Latin letters and without the diacritics on
    Latin letters (``bare_letters``), and words hyphenated across a line joined
    (``_forbidding``), when it forbids a word or caps a count (``forbids``); the first
    two when it asks for two different responses (``А`` and ``A`` are one answer
    drawn twice, and so are ``small`` and ``smal\u0301l``, and two responses that differ
    only in their spacing: ``same_spacing``); with small capitals as capitals and
    uncased look-alikes as the letters they are drawn as (``small_capitals``) under a
    cap on capitalised words (``capital_word_frequency``, "less than"), and so with the
    Cyrillic small capitals too (``_one_case``) under ``change_case:english_lowercase``
    and ``english_capital``; None for the others."""
    relation = (args or {}).get("capital_relation")
    if iid in _CASE_CHECKS:
        return _one_case
    if relation == "less than":
        return small_capitals
    if iid == "combination:two_responses":
        return _two_responses
    if forbids(iid, args):
        return _forbidding
    return None


_LINE_HYPHEN = re.compile("(?<=[^\\W\\d_])[-\u2010]\n[^\\S\n]*(?=[^\\W\\d_])")
"""A hyphen that ends a line between two letters, and the line break (and indent) after
it: a word hyphenated across the line, one word to a reader."""


def _forbidding(text: str) -> str:
    """How an instruction that forbids a word or caps a count reads an answer a second
    time: look-alikes as Latin letters, without diacritics (``bare_letters``), and a word
    hyphenated across a line break as one word (``_LINE_HYPHEN``): ``I lo-\\nve the sea``
    passed "do not use the word love"."""
    return _LINE_HYPHEN.sub("", bare_letters(text))


_CYRILLIC_SMALL_CAPITALS = str.maketrans("внт", "BHT")
"""The Cyrillic small letters that Unicode's confusables list with the Latin small
capitals ``ʙ ʜ ᴛ``, drawn as those, as capitals."""


def _one_case(text: str) -> str:
    """How ``change_case:english_lowercase`` and ``english_capital`` read an answer a second
    time: as ``small_capitals`` does, and with the Cyrillic ``в н т`` as the capitals
    they are drawn as (``the sea is вig`` passed "all lowercase"). Only these checks read
    them so, as both want English (langdetect), which a Russian answer is not; the cap
    on capitalised words, asked of any language, does not."""
    return small_capitals(text).translate(_CYRILLIC_SMALL_CAPITALS)


_CASE_CHECKS = frozenset({"change_case:english_lowercase", "change_case:english_capital"})
"""The instructions that want every letter in one case: read a second time with letters
drawn as capitals or small letters read as those (``small_capitals``)."""


def forbids(iid: str, args: dict[str, Any] | None) -> bool:
    """Whether instruction ``iid`` with its built arguments ``args`` forbids or caps what
    it counts (``FORBIDDING``; a frequency one only under "less than")."""
    if iid not in FORBIDDING:
        return False
    if iid == "keywords:forbidden_words":
        return True
    relation = (args or {}).get("relation") or (args or {}).get("let_relation")
    return relation == "less than"
