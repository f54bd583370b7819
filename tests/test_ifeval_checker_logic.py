"""IFEval answers that satisfy a checker's code but not its instruction's words, with no
character trick: the paragraph count that takes the nth paragraph from a list still
holding the empty ones (an answer opened by a blank line, or with three blank lines in
a row, had another paragraph's first word read as the nth's), and the repeated request
with no answer after it (the request alone, or the whole prompt copied). Each hostile
answer scored 1 before; scored by lm-eval's real checkers through ``check_ifeval`` and
through the real scorer and its verifier workers, beside plain answers that follow the
instruction (1)."""

from __future__ import annotations

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.ifeval import check_ifeval
from tests.hostile_tally import record
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

HOSTILE = [
    # (instruction, hostile answer, plain answer that follows it)
    (SECOND_DOG, "\n\nDog runs.\n\nCats nap.", "Cats nap.\n\nDog runs."),
    (THIRD_DOG, "Cats nap.\n\n\n\nDog runs.\n\nBirds fly.", "Cats nap.\n\nBirds fly.\n\nDog runs."),
    (SECOND_DOG, "  \n\nDog runs.\n\nCats nap.", "Cats nap.\n\nDog runs."),
    (REPEAT, REQUEST, REQUEST + " The sea is wide and deep."),
    (REPEAT, REQUEST + "\n\n", REQUEST + "\n\nThe sea is wide and deep."),
    (REPEAT, PROMPT, PROMPT + "\n\nThe sea is wide and deep."),
    (REPEAT, PROMPT.lower() + " \u200b", REQUEST + " Waves."),
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
    give your answer" is half done. The plain answer passes (1)."""
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


def test_the_scorer_refuses_them_through_its_workers() -> None:
    """The same answers scored as training scores them (``build_scorer``, the verifier
    pool's worker processes, the row's prompt the one the request is repeated from):
    every hostile answer 0, every plain one 1."""
    rows = [
        PromptRow(
            id=f"r{k}",
            messages=[{"role": "user", "content": PROMPT}],
            ground_truth=gt,
            domain="ifeval",
        )
        for k, (gt, _, _) in enumerate(HOSTILE)
    ]
    with build_scorer(RewardsConfig(workers=1)) as scorer:
        hostile = scorer.score(rows, [h for _, h, _ in HOSTILE])
        plain = scorer.score(rows, [p for _, _, p in HOSTILE])
    assert [r.score for r in hostile] == [0.0] * len(HOSTILE), [r.reason for r in hostile]
    assert [r.score for r in plain] == [1.0] * len(HOSTILE), [r.reason for r in plain]
