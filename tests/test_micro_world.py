"""The micro world's generators: determinism, disjoint splits, and reference answers
that the real checkers accept (sympy for math, Python for code, lm-eval's IFEval
checkers for ifeval)."""

from __future__ import annotations

import re

import pytest

from recipe_arena.config_world import MicroWorld
from recipe_arena.data.micro import (
    HELDOUT_FRACTION,
    build_world,
    generate_examples,
    generate_split,
    split_of,
    token_budget,
)
from recipe_arena.data.schema import DOMAINS, PromptRow


def _answer(response: str) -> str:
    assert response.startswith("<think>") and response.count("</think>") == 1
    return response.split("</think>", 1)[1]


@pytest.mark.parametrize("domain", DOMAINS)
def test_same_seed_same_rows_other_seed_other_rows(domain: str) -> None:
    a = generate_split(domain, "train", 50, seed=7)  # type: ignore[arg-type]
    b = generate_split(domain, "train", 50, seed=7)  # type: ignore[arg-type]
    c = generate_split(domain, "train", 50, seed=8)  # type: ignore[arg-type]
    assert [r.model_dump() for r in a] == [r.model_dump() for r in b]
    assert [r.prompt_text for r in a] != [r.prompt_text for r in c]
    assert all(isinstance(r, PromptRow) and r.domain == domain for r in a)


@pytest.mark.parametrize("domain", DOMAINS)
def test_heldout_never_overlaps_train_across_seeds(domain: str) -> None:
    """Split membership is a function of the problem alone, so held-out prompts drawn
    with one seed never appear in train drawn with any other seed."""
    train = {r.prompt_text for s in (0, 1, 2) for r in generate_split(domain, "train", 400, s)}  # type: ignore[arg-type]
    heldout = {r.prompt_text for s in (0, 3) for r in generate_split(domain, "heldout", 100, s)}  # type: ignore[arg-type]
    assert heldout and train
    assert not train & heldout


def test_split_hash_is_stable_and_sized() -> None:
    """The bucket is a fixed hash: a pinned problem keeps its split, and over 4000
    distinct canonical strings the held-out share is HELDOUT_FRACTION (0.15) within
    4 standard errors, sqrt(0.15 * 0.85 / 4000) = 0.0056."""
    shares = [split_of("math", f"{a}+{b}") == "heldout" for a in range(80) for b in range(50)]
    assert abs(sum(shares) / len(shares) - HELDOUT_FRACTION) < 4 * 0.0056
    assert split_of("math", "2+2") == split_of("math", "2+2")


def test_rows_are_unique_while_the_space_allows() -> None:
    rows = generate_split("math", "heldout", 300, seed=0)
    assert len({r.prompt_text for r in rows}) == 300
    assert len({r.id for r in rows}) == 300


def test_code_reference_passes_its_tests_and_a_wrong_body_fails() -> None:
    for ex in generate_examples("code", "train", 100, seed=1):
        tests = ex.row.ground_truth
        assert 2 <= len(tests) <= 4 and all(t.startswith("assert ") for t in tests)
        code = _answer(ex.response).removeprefix("```python\n").removesuffix("\n```")
        name = code.split("(")[0].removeprefix("def ")
        assert f"`{name}(" in ex.row.prompt_text
        env: dict[str, object] = {}
        exec(code + "\n" + "\n".join(tests), env)  # noqa: S102 - our generated code
        wrong: dict[str, object] = {}
        exec(f"def {name}(*a):\n    return None", wrong)  # noqa: S102
        with pytest.raises(AssertionError):
            exec("\n".join(tests), wrong)  # noqa: S102


def test_ifeval_reference_follows_every_instruction_with_lm_eval_checkers() -> None:
    from lm_eval.tasks.ifeval import instructions_registry

    for ex in generate_examples("ifeval", "train", 200, seed=2):
        gt = ex.row.ground_truth
        assert 1 <= len(gt["instruction_id_list"]) <= 3
        assert len(gt["kwargs"]) == len(gt["instruction_id_list"])
        for iid, kwargs in zip(gt["instruction_id_list"], gt["kwargs"], strict=True):
            checker = instructions_registry.INSTRUCTION_DICT[iid](iid)
            checker.build_description(**kwargs)
            assert checker.check_following(_answer(ex.response)), (iid, ex.response)
            assert checker.check_following("") is False or iid == "punctuation:no_comma"


def test_chat_reference_answer_appears_in_the_response() -> None:
    for ex in generate_examples("chat", "train", 200, seed=4):
        assert ex.row.ground_truth in _answer(ex.response)
    plural = [
        e
        for e in generate_examples("chat", "train", 400, seed=4)
        if "plural of city" in e.row.prompt_text
    ]
    assert all(e.row.ground_truth == "cities" for e in plural)


def test_effort_and_token_budget() -> None:
    """Budget = 2 * len(response) rounded up to a multiple of 8: a 45-character
    response gets ceil(90 / 8) * 8 = 96."""
    assert token_budget("x" * 45) == 96
    assert token_budget("x") == 16
    rows = generate_split("math", "train", 200, seed=0)
    assert {r.effort for r in rows} == {"low", "medium", "high"}
    assert all(r.token_budget is not None and r.token_budget >= 16 for r in rows)


def test_build_world_shape_and_bad_input() -> None:
    world = build_world(MicroWorld(train_per_domain=30, heldout_per_domain=10, data_seed=5))
    assert set(world) == {"train", "heldout"}
    assert {d: len(world["heldout"][d]) for d in DOMAINS} == dict.fromkeys(DOMAINS, 10)
    assert all(len(world["train"][d]) == 30 for d in DOMAINS)
    with pytest.raises(ValueError, match="domain='poetry' is not one of"):
        generate_split("poetry", "train", 1, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="split='test' is not one of"):
        generate_split("math", "test", 1, 0)  # type: ignore[arg-type]


def test_digit_steps_by_hand() -> None:
    """38, take away 7, three times: last digit 8; 8-7=1; 1<7 borrows: 11-7=4; 4<7
    borrows: 14-7=7 -> 7 (38 - 21 = 17). 25, add 9, twice: 5+9=14, then 4+9=13 -> 3
    (25 + 18 = 43)."""
    from recipe_arena.data.micro_math import digit_steps

    assert digit_steps(38, "-", 7, 3) == (["38->8", "3:8-7=1", "2:11-7=4", "1:14-7=7"], 7)
    assert digit_steps(25, "+", 9, 2) == (["25->5", "2:5+9=14", "1:4+9=13"], 3)


def test_answers_are_the_last_digit_and_effort_is_the_repeats() -> None:
    """The answer is the last digit of start +- k * d; the careful think block has the
    start's step plus k steps; effort is low for 1-2 repeats, medium for 3-4, high for
    5-7; the careful and the quick response end in the same boxed answer."""
    effort = {1: "low", 2: "low", 3: "medium", 4: "medium", 5: "high", 6: "high", 7: "high"}
    for ex in generate_examples("math", "train", 300, seed=5):
        m = re.fullmatch(r"What is the last digit of (\d+)([+-])(\d)\*(\d)\?", ex.row.prompt_text)
        assert m is not None, ex.row.prompt_text
        start, sign, d, k = int(m[1]), m[2], int(m[3]), int(m[4])
        value = start + d * k if sign == "+" else start - d * k
        assert value >= 0
        assert ex.row.ground_truth == str(value % 10)
        answer = "\\boxed{" + str(ex.row.ground_truth) + "}"
        assert ex.quick_response == "<think></think>" + answer
        assert ex.response.endswith("</think>" + answer)
        thought = ex.response.removeprefix("<think>").split("</think>")[0]
        assert len(thought.split(", ")) == k + 1
        assert ex.row.effort == effort[k]


def test_chat_labels_are_exact() -> None:
    """An answer is right iff its final word is the reference word, case aside."""
    from recipe_arena.data.micro_chat import is_right

    assert is_right("green", "Grass is green.")
    assert is_right("green", "GREEN")
    assert not is_right("green", "Grass is green or red.")
    assert not is_right("green", "Grass is")
    assert not is_right("3", "The number of letters in cat is 4.")
    assert not is_right("cities", "")


def test_subtraction_share_and_no_negative_results() -> None:
    """About ``SUBTRACT_SHARE`` of math problems subtract (within four binomial standard
    errors over 2,000 draws), and a subtraction never goes below zero (start >= d * k)."""
    from recipe_arena.data.micro_math import SUBTRACT_SHARE

    rows = generate_split("math", "train", 2000, 11)
    subs = [r for r in rows if "-" in r.prompt_text]
    se = (SUBTRACT_SHARE * (1 - SUBTRACT_SHARE) / len(rows)) ** 0.5
    assert abs(len(subs) / len(rows) - SUBTRACT_SHARE) < 4 * se
    for r in subs:
        start, rest = r.prompt_text.removeprefix("What is the last digit of ").split("-")
        d, k = rest.rstrip("?").split("*")
        assert int(start) - int(d) * int(k) >= 0
