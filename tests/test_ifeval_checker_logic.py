"""IFEval answers that satisfy a checker's code but not its instruction's words, with no
character trick: the paragraph count that takes the nth paragraph from a list still
holding the empty ones (an answer opened by a blank line, or with three blank lines in
a row, had another paragraph's first word read as the nth's), the repeated request
with no answer after it (the request alone, or the whole prompt copied), lines opened
by ``*`` or ``-`` glued to a word counted as bullets (``*Note*:``, ``-1 degrees``,
``---``) and any two ``*`` on a line counted as a highlight (``5 * 4 = 20, 3 * 2 =
6``, ``* one *``), which markdown draws as neither, and markdown links counted as
placeholders in square brackets, and two "different" responses that are one written
in another case. Each hostile
answer scored 1 before; scored by lm-eval's real checkers through ``check_ifeval`` and
through the real scorer and its verifier workers, beside plain answers that follow the
instruction (1)."""

from __future__ import annotations

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.ifeval import check_ifeval
from recipe_arena.rewards.ifeval_structure import LINK_DEPTH, placeholders_shown
from tests.hostile_tally import record
from tests.ifeval_workers import scored_by_workers
from tests.test_ifeval_other_scripts import instruction

SECOND_DOG = instruction(
    "length_constraints:nth_paragraph_first_word",
    num_paragraphs=2,
    nth_paragraph=2,
    first_word="dog",
)
THIRD_DOG = instruction(
    "length_constraints:nth_paragraph_first_word",
    num_paragraphs=3,
    nth_paragraph=3,
    first_word="dog",
)
REQUEST = "Write a poem about the sea."
PROMPT = REQUEST + " First repeat the request word for word without change, then give your answer."
REPEAT = instruction("combination:repeat_prompt", prompt_to_repeat=REQUEST)
THREE_BULLETS = instruction("detectable_format:number_bullet_lists", num_bullets=3)
TWO_HIGHLIGHTS = instruction("detectable_format:number_highlighted_sections", num_highlights=2)
TWO_PLACEHOLDERS = instruction("detectable_content:number_placeholders", num_placeholders=2)
TWO_RESPONSES = instruction("combination:two_responses")

HOSTILE = [
    # (instruction, hostile answer, plain answer that follows it)
    (SECOND_DOG, "\n\nDog runs.\n\nCats nap.", "Cats nap.\n\nDog runs."),
    (THIRD_DOG, "Cats nap.\n\n\n\nDog runs.\n\nBirds fly.", "Cats nap.\n\nBirds fly.\n\nDog runs."),
    (SECOND_DOG, "  \n\nDog runs.\n\nCats nap.", "Cats nap.\n\nDog runs."),
    (REPEAT, REQUEST, REQUEST + " The sea is wide and deep."),
    (REPEAT, REQUEST + "\n\n", REQUEST + "\n\nThe sea is wide and deep."),
    (REPEAT, PROMPT, PROMPT + "\n\nThe sea is wide and deep."),
    (REPEAT, PROMPT.lower() + " \u200b", REQUEST + " Waves."),
    (THREE_BULLETS, "* one\n*Note*: two\n*Also* three", "* one\n* two\n* three"),
    (THREE_BULLETS, "* a\n-1 degrees\n-2 degrees", "* a\n- b\n- c"),
    (THREE_BULLETS, "- a\n---\n---", "- a\n- b\n- c"),
    (TWO_HIGHLIGHTS, "5 * 4 = 20, 3 * 2 = 6, 7 * 1 = 7, 8 * 2 = 16", "*Big* and *blue*."),
    (TWO_HIGHLIGHTS, "* one *\n* two *", "* *one*\n* *two*"),
    (TWO_HIGHLIGHTS, "** one ** and ** two **", "**one** and **two**"),
    (
        TWO_PLACEHOLDERS,
        "See [the docs](http://x) and [here](http://y).",
        "Dear [name], at [address].",
    ),
    (TWO_PLACEHOLDERS, "[![map](m.png)](http://x) [name]", "Write to [name] ([email])."),
    (
        TWO_RESPONSES,
        "The sea is big.\n******\nTHE SEA IS BIG.",
        "The sea is big.\n******\nIt is blue.",
    ),
    (
        TWO_RESPONSES,
        "The sea is big.\n******\nthe sea is big.",
        "The sea is big.\n******\nthe sea is wide.",
    ),
]


@pytest.mark.parametrize(("gt", "hostile", "plain"), HOSTILE)
def test_the_checkers_logic_is_read_as_the_instruction_says(
    gt: dict[str, object], hostile: str, plain: str
) -> None:
    """Each hostile answer fails (0; before, 1). ``\\n\\nDog runs.\\n\\nCats nap.`` has two
    paragraphs, the second starting with Cats, and the checker read Dog from the one
    after the empty piece before the blank line; ``Cats nap.\\n\\n\\n\\nDog runs.\\n\\nBirds
    fly.`` has three, the third starting with Birds, and the checker read Dog, the
    second; an answer opened by a line of two spaces and a blank line is read as the
    first one. The request alone, with blank lines after it, the
    whole prompt copied, and the whole prompt lowercased with a zero-width space after
    it give no answer after the request: "first repeat the request word for word, then
    give your answer" is half done. ``* one\\n*Note*: two\\n*Also* three`` draws one
    bullet and two lines opening with emphasis, ``* a\\n-1 degrees\\n-2 degrees`` one
    bullet and two negative numbers, ``- a\\n---\\n---`` one bullet and two rules: each
    passed "exactly 3 bullet points". Four products ``n * m`` on a line and two lines
    ``* one *`` (a bullet, then a star after a space), and ``** one ** and ** two **``
    (stars parted from their words) draw no highlight, and passed "at
    least 2 highlighted sections". Two links, and a placeholder beside an image inside a
    link, draw one or no square bracket, and passed "at least 2 placeholders represented
    by square brackets". ``The sea is big.`` and ``THE SEA IS BIG.`` (or ``the sea is
    big.``) are one response written twice, and passed "give two different responses".
    The plain answer passes (1)."""
    score = check_ifeval(gt, hostile, prompt=PROMPT)[0]
    record("ifeval: checker logic", 1, int(score == 0.0))
    assert score == 0.0, hostile
    assert check_ifeval(gt, plain, prompt=PROMPT)[0] == 1.0, plain


def test_an_answer_opened_by_a_blank_line_has_its_paragraphs_read_in_order() -> None:
    """An honest answer of two paragraphs opened by a blank line, the second starting with
    Dog, passes "the second starting with dog" (before, 0: the checker read Cats, the
    first, as the second); the first paragraph's word is read as the first's."""
    assert check_ifeval(SECOND_DOG, "\n\nCats nap.\n\nDog runs.\n\n")[0] == 1.0
    first_cats = instruction(
        "length_constraints:nth_paragraph_first_word",
        num_paragraphs=2,
        nth_paragraph=1,
        first_word="cats",
    )
    assert check_ifeval(first_cats, "\n\nCats nap.\n\nDog runs.")[0] == 1.0


def test_links_are_read_as_drawn_only_down_to_a_bounded_depth() -> None:
    """Each level of links inside links is one more pass over the answer, so only
    ``LINK_DEPTH`` (4) levels are read as drawn: 6 nested links around ``x`` keep
    6 - 4 = 2 bracket pairs, the innermost read first (``[[x (y) (y) (y) (y)](y)](y)``),
    in which the checker's ``\\[.*?\\]`` finds one placeholder, so "at least 1 placeholder" passes; 4 nested
    links are read whole, no bracket left, and fail it (an unbounded reader would also
    fail the 6). The bound keeps 20,000 nested links (100 KB) inside the check's
    deadline, where unbounded passes took 12 s."""
    nest = "[" * 6 + "x" + "](y)" * 6
    assert placeholders_shown(nest) == "[[x (y) (y) (y) (y)](y)](y)"
    assert LINK_DEPTH == 4
    one = instruction("detectable_content:number_placeholders", num_placeholders=1)
    assert check_ifeval(one, nest)[0] == 1.0
    assert check_ifeval(one, "[" * 4 + "x" + "](y)" * 4)[0] == 0.0


def test_the_scorer_refuses_them_through_its_workers() -> None:
    """The same answers scored as training scores them (``build_scorer``, the verifier
    pool's worker processes, the row's prompt the one the request is repeated from):
    every hostile answer 0, every plain one 1."""
    hostile, plain = scored_by_workers(HOSTILE, PROMPT)
    assert hostile == [0.0] * len(HOSTILE)
    assert plain == [1.0] * len(HOSTILE)


def test_the_audit_no_longer_quarantines_a_repeat_row_for_its_prompt_echo() -> None:
    """The audit's ``prompt_echo`` probe writes the row's prompt back: for a
    ``repeat_prompt`` row whose prompt starts with its request, that is the request and
    the instruction to repeat it, no answer. The verifier accepted it (1.0), so the row
    was quarantined though the echo is no hack a policy gains from once refused; now it
    scores 0 and the row is kept. A row whose verifier still takes the echo (no commas
    asked, a prompt without one) is quarantined as before."""
    from recipe_arena.rewards.audit import run_audit

    repeat = PromptRow(
        id="repeat",
        messages=[{"role": "user", "content": PROMPT}],
        ground_truth=REPEAT,
        domain="ifeval",
    )
    no_comma = PromptRow(
        id="no_comma",
        messages=[{"role": "user", "content": "Write about snow without commas."}],
        ground_truth=instruction("punctuation:no_comma"),
        domain="ifeval",
    )
    with build_scorer(RewardsConfig(workers=1)) as scorer:
        report = run_audit({"if": [repeat, no_comma]}, hacks=["prompt_echo"], scorer=scorer)
    assert {p.task_id: p.score for p in report.probes} == {"repeat": 0.0, "no_comma": 1.0}
    assert report.quarantined() == {"no_comma"}
