"""IFEval verifier over lm-eval's checkers, offline. Expected values by hand."""

from __future__ import annotations

import subprocess
import sys

import pytest

from recipe_arena.rewards.ifeval import check_ifeval, instruction_ids, registry


def gt(*pairs: tuple[str, dict]) -> dict:
    return {"instruction_id_list": [p[0] for p in pairs], "kwargs": [p[1] for p in pairs]}


CASES = [
    # (instruction, kwargs, passing answer, failing answer)
    ("change_case:english_lowercase", {}, "winter is cold. days are short.", "Winter is cold."),
    ("punctuation:no_comma", {}, "no commas at all here", "one, two"),
    ("keywords:existence", {"keywords": ["snow"]}, "the snow falls", "the rain falls"),
    (
        "startend:end_checker",
        {"end_phrase": "Is there anything else?"},
        "Done. Is there anything else?",
        "Done.",
    ),
    ("startend:quotation", {}, '"all quoted"', "not quoted"),
    ("detectable_format:title", {}, "<<Winter>> it is cold", "Winter: it is cold"),
    (
        "length_constraints:number_words",
        {"relation": "less than", "num_words": 5},
        "four words right here",  # 4 < 5
        "this answer has six words",  # 5 words, not < 5
    ),
    (
        "length_constraints:number_sentences",
        {"relation": "at least", "num_sentences": 2},
        "It snows. It is cold.",  # punkt finds 2 sentences
        "It snows.",
    ),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* a\n* b", "* a"),
    ("change_case:english_capital", {}, "ALL CAPS HERE", "Not caps"),
]


@pytest.mark.parametrize(("iid", "kwargs", "good", "bad"), CASES)
def test_single_instruction_pass_and_fail(iid: str, kwargs: dict, good: str, bad: str) -> None:
    """Each good answer satisfies the instruction (reason in the kwargs comment), each bad
    one breaks it; the think block is never graded."""
    assert (
        check_ifeval(gt((iid, kwargs)), f"<think>Ignore, this; IS NOT graded</think>{good}")[0]
        == 1.0
    )
    assert check_ifeval(gt((iid, kwargs)), bad)[0] == 0.0


def test_all_or_nothing_and_partial_credit() -> None:
    """Lowercase holds, no_comma fails ("a, b"), keyword 'snow' holds: all-or-nothing 0,
    partial credit 2/3."""
    g = gt(
        ("change_case:english_lowercase", {}),
        ("punctuation:no_comma", {}),
        ("keywords:existence", {"keywords": ["snow"]}),
    )
    resp = "snow, and more snow"
    assert check_ifeval(g, resp)[0] == 0.0
    score, reason = check_ifeval(g, resp, partial=True)
    assert score == pytest.approx(2 / 3) and "punctuation:no_comma" in reason


def test_empty_answer_and_bad_ground_truth() -> None:
    """An empty answer (or one cut off inside <think>) follows nothing, even no_comma;
    malformed ground truth and unknown ids are per-row errors."""
    assert check_ifeval(gt(("punctuation:no_comma", {})), "")[0] == 0.0
    assert check_ifeval(gt(("punctuation:no_comma", {})), "<think>no commas")[0] == 0.0
    assert check_ifeval({"kwargs": []}, "x")[1].startswith("error:")
    assert check_ifeval(gt(("made:up", {})), "x")[1].startswith("error:")


def test_covers_the_ifeval_instruction_set_offline() -> None:
    """All 25 IFEval instruction classes are registered; NLTK data is found locally and
    downloading is refused."""
    ids = instruction_ids()
    assert len(ids) == 25 and "language:response_language" in ids
    import nltk

    with pytest.raises(RuntimeError, match="never downloads"):
        nltk.download("punkt_tab")
    assert registry() is registry()


def test_a_fresh_process_loads_the_checkers_alone() -> None:
    """What a verifier worker loads: the checkers run (a sentence count needs NLTK's
    punkt data) with neither scipy nor scikit-learn imported and without the
    ``lm_eval.tasks`` package, which is then imported whole, TaskManager included, as if
    the checkers had never been loaded. A fresh interpreter, since this test process
    may hold any of them already."""
    code = """
import sys
from recipe_arena.rewards.ifeval import check_ifeval
gt = {"instruction_id_list": ["length_constraints:number_sentences"],
      "kwargs": [{"relation": "at least", "num_sentences": 3}]}
print(check_ifeval(gt, "One. Two. Three.")[0], check_ifeval(gt, "One. Two.")[0])
print(sorted(m for m in ("scipy", "sklearn", "pandas", "datasets", "lm_eval.tasks") if m in sys.modules))
import lm_eval.tasks
from lm_eval.tasks.ifeval import instructions_registry
print(lm_eval.tasks.TaskManager.__name__, len(instructions_registry.INSTRUCTION_DICT))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout.splitlines()
    assert out == ["1.0 0.0", "[]", "TaskManager 25"]


AMBIGUOUS = "p.s. yes"
"""A lowercase answer that unseeded langdetect calls English on some calls and Turkish on
others (about 17 and 23 of 40 here), so ``change_case:english_lowercase`` held or failed
by chance before the checkers' langdetect was seeded."""


def test_the_language_check_is_a_function_of_the_text() -> None:
    """The verdict on an answer whose language langdetect finds ambiguous is the same on
    every call and in a fresh process: langdetect is seeded when the checkers load
    (``LANGDETECT_SEED``). Unseeded, 30 calls would all agree with probability about
    0.575**30 + 0.425**30 < 1e-7, so a registry that left it unseeded fails here; the
    probe's ambiguity is checked first, with the seed taken off."""
    from langdetect import DetectorFactory, detect

    g = gt(("change_case:english_lowercase", {}))
    here = {check_ifeval(g, AMBIGUOUS)[0] for _ in range(30)}
    assert len(here) == 1
    seed = DetectorFactory.seed
    DetectorFactory.seed = None
    try:
        assert len({detect(AMBIGUOUS) for _ in range(40)}) > 1
    finally:
        DetectorFactory.seed = seed
    code = (
        "from recipe_arena.rewards.ifeval import check_ifeval\n"
        "g = {'instruction_id_list': ['change_case:english_lowercase'], 'kwargs': [{}]}\n"
        f"print(sorted({{check_ifeval(g, {AMBIGUOUS!r})[0] for _ in range(30)}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(sorted(here))
