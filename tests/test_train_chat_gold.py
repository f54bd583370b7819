"""Training rows read from files (``world.train_path``) whose chat reference is not
written as text. The judge reads a reference only from a string, so such a row was
judged open-ended, with no answer to hold a wrong one to. Read through the world's own
row reader (``build_world`` of an ``olmo3_7b`` world) and scored by the real scorer with
a real OpenAI-compatible endpoint judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.config_world import Olmo3World
from recipe_arena.data.worlds import build_world
from recipe_arena.rewards.scorer import build_scorer
from tests.judge_endpoint import JudgeEndpoint
from tests.test_verify_chat_gold import _judge


def _row(rid: str, gold: object) -> str:
    msg = [{"role": "user", "content": "What is 3 + 4?"}]
    return json.dumps({"id": rid, "messages": msg, "ground_truth": gold, "domain": "chat"})


def test_a_training_chat_reference_written_as_a_number_is_the_reference(tmp_path: Path) -> None:
    """Attack: a training file whose chat reference is the JSON number ``7`` for "What is
    3 + 4?", and the wrong answer ``8``. By hand: the reference is the text ``7``, so the
    judge (10 for an answer equal to the reference, 0 otherwise, 10 for anything asked
    open-ended) gives ``8`` 0 (0.0) and ``7`` 10 (1.0); a text reference ``"7"`` reads
    the same. Before, the number was no reference, the row was judged open-ended and
    ``8`` scored 1.0."""
    path = tmp_path / "train.jsonl"
    path.write_text(_row("n", 7) + "\n" + _row("t", "7") + "\n")
    rows = build_world(Olmo3World(train_path=str(path)))["train"]["chat"]
    assert [r.ground_truth for r in rows] == ["7", "7"]
    srv = JudgeEndpoint(_judge)
    sc = build_scorer(RewardsConfig(judge_model=srv.url, workers=1))
    try:
        got = sc.score([rows[0], rows[0], rows[1], rows[1]], ["8", "7", "8", "7"])
    finally:
        sc.close()
        srv.close()
    assert [r.score for r in got] == [0.0, 1.0, 0.0, 1.0], [r.reason for r in got]


@pytest.mark.parametrize("gold", [["7"], {"answer": "7"}, True])
def test_a_training_chat_reference_naming_no_one_answer_fails_at_load(
    tmp_path: Path, gold: object
) -> None:
    """A list, an object or a boolean names no one answer: reading the file fails before
    a run starts, naming the file, the line (2) and the row's id (``bad``). Before, the
    row loaded and was judged open-ended (``8`` for "What is 3 + 4?" scored 1.0)."""
    path = tmp_path / "train.jsonl"
    path.write_text(_row("ok", "7") + "\n" + _row("bad", gold) + "\n")
    with pytest.raises(ValueError, match=r"train\.jsonl:2: row 'bad': chat ground_truth must"):
        build_world(Olmo3World(train_path=str(path)))
