"""IFEval answers whose checker counts what a reader sees drawn alike as different:
two "different" responses that differ only in their spacing or by marks drawn as ASCII
ones, bullets drawn by another dash, asterisk or bullet sign or by markdown's ``+``
beside the ``-`` and ``*`` ones the bullet count looks for, paragraph dividers drawn by
other asterisks, blank lines that hold a space, capitalised words hidden from the
capital count by the combining ypogegrammeni (U+0345), which Unicode counts as a
lowercase letter, capitals or small letters drawn by letters without case, which the
case checks skip, and format characters that are drawn, which were read as nothing.
Each is scored by lm-eval's real checkers through ``check_ifeval``, beside a plain
answer that follows the instruction (1)."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.ifeval import check_ifeval
from tests.hostile_tally import record
from tests.test_ifeval_other_scripts import FEW_CAPS, LOWER, TWO, instruction

TWO_BULLETS = instruction("detectable_format:number_bullet_lists", num_bullets=2)
UPPER = instruction("change_case:english_capital")
THE_END = instruction("startend:end_checker", end_phrase="The end.")
SECOND_DOG = instruction(
    "length_constraints:nth_paragraph_first_word",
    num_paragraphs=2,
    nth_paragraph=2,
    first_word="dog",
)
ONE_PARAGRAPH = instruction("length_constraints:number_paragraphs", num_paragraphs=1)

HOSTILE = [
    # (instruction, hostile answer, plain answer that follows it)
    (TWO, "The sea is big.\n******\nThe sea  is big.", "The sea is big.\n******\nIt is blue."),
    (TWO, "The sea is big.\n******\nThe sea is\tbig. ", "The sea is big.\n******\nIt is blue."),
    (TWO, "Sea.\nBig.\n******\nSea. \nBig.", "Sea.\nBig.\n******\nSea.\nBlue."),
    (TWO, "It's big...\n******\nIt\u2019s big\u2026", "It's big.\n******\nIt\u2019s blue."),
    (TWO, '"Big-ish."\n******\n\u201cBig\u2010ish.\u201d', '"Big."\n******\n\u201cBlue.\u201d'),
    (TWO_BULLETS, "* a\n* b\n\u2013 c\n\u2022 d", "* a\n* b"),  # en dash, bullet
    (TWO_BULLETS, "- a\n- b\n\u2212 c\n\u2217 d\n\u2010 e", "- a\n- b"),  # minus, asterisk op
    (TWO_BULLETS, "- a\n- b\n+ c\n+ d", "- a\n- b"),  # markdown's + bullets
    (ONE_PARAGRAPH, "One.\n\n\u2217\u2217\u2217\n\nTwo.\n\n\u204e\u204e\u204e\n\nThree.", "One."),
    (SECOND_DOG, "Cats nap.\n \nBirds fly.\n\nDog runs.", "Cats nap.\n\nDog runs."),
    (SECOND_DOG, "Cats nap.\n\t\nBirds fly.\n\nDog runs.", "Cats nap.\n\nDog runs."),
    (THE_END, "Hi. The end.\u06dd\u06dd\u06dd", "Hi. The end."),  # end of ayah
    (THE_END, "Hi. The end.\u0600\U000110bd", "Hi. The end."),  # number signs
    (FEW_CAPS, "THE\u0345 SEA\u0345 IS\u0345 BIG\u0345.", "The sea is BIG."),
    (FEW_CAPS, "The sea is \u15f0\u15c5\u15ea and \u15f7\u14aa\u144c\u15f4.", "The sea is BIG."),
    (LOWER, "the sea is \u15f0\u15c5\u15ea and blue today.", "the sea is big and blue today."),
    (UPPER, "THE SEA IS \u1472IG AND \u1472LUE TODAY.", "THE SEA IS BIG AND BLUE TODAY."),
]


@pytest.mark.parametrize(("gt", "hostile", "plain"), HOSTILE)
def test_what_is_drawn_alike_is_counted_alike(
    gt: dict[str, object], hostile: str, plain: str
) -> None:
    """The hostile answer fails: one response drawn twice (a doubled space, a tab, a
    space before a line break, a curly apostrophe or quote, a hyphen ``‐``, an ellipsis
    ``…``); four bullets for "exactly 2"; three paragraphs parted by
    dividers drawn ``∗∗∗`` and ``⁎⁎⁎`` for "exactly 1"; three paragraphs, two parted by
    a line holding a space or a tab, for "2 paragraphs, the second starting with dog";
    four capitalised words (under
    the ypogegrammeni) and two (``ᗰᗅᗪ``, ``ᗷᒪᑌᗴ``: Canadian syllabics, letters without
    case drawn as ``MAD`` and ``BLUE``) for "less than 2"; ``ᗰᗅᗪ`` in "all lowercase";
    ``ᑲIG``, a syllabic drawn as ``b``, in "all capitals"; ``The end.`` followed by
    ornaments drawn by format characters (the Arabic end of ayah ``۝``, number signs),
    which were read as nothing, for "end with The end.". Before, each scored 1. The
    plain answer passes."""
    score = check_ifeval(gt, hostile)[0]
    record("ifeval: drawn alike, counted apart", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(gt, plain)[0] == 1.0, plain


def test_bullets_drawn_otherwise_count_and_other_lines_do_not() -> None:
    """Two bullets drawn ``•`` now make "exactly 2" (before, 0: no bullet to the
    checker); a line opened by a minus sign glued to a number (``−5 degrees``) or by an
    en dash in a word is no bullet, as a reader sees it; two responses that differ in a
    word still differ."""
    assert check_ifeval(TWO_BULLETS, "\u2022 a\n\u2022 b")[0] == 1.0
    assert check_ifeval(TWO_BULLETS, "* a\n* b\n\u22125 degrees\n\u2013ish")[0] == 1.0
    assert check_ifeval(TWO, "The sea  is big.\n******\nThe sea  is blue.")[0] == 1.0
