"""The per-arm table of what the RL stage did (eval/behaviour.py), from hand-built runs
whose figures are derived by hand."""

from __future__ import annotations

from pathlib import Path

from recipe_arena.eval.behaviour import behaviour_table
from recipe_arena.eval.comparison import ArmData, RunData
from recipe_arena.eval.scores import ScoreRecord


def _run(seed: int, rewards: list[float], trained: tuple[float, float]) -> RunData:
    """Steps 1..4 with these training rewards; each step samples 4 responses of mean 20
    tokens and trains ``trained`` = (responses, their mean length)."""
    rl = [
        {
            "step": i + 1,
            "reward/mean": r,
            "length/sampled_mean": 20.0,
            "length/sampled_n": 4.0,
            "length/trained_n": trained[0],
            "length/trained_mean": trained[1],
        }
        for i, r in enumerate(rewards)
    ]
    final = ScoreRecord("eval", 0, ["q"], ["math"], ["s"], [1.0])
    return RunData(Path(f"run{seed}"), seed, {}, final, [], rl, 0.0)


def test_training_reward_is_the_last_quarter_and_lengths_pool_tokens() -> None:
    """Seed 0's rewards 0.1 0.2 0.3 0.4 end at 0.4 (step 4, the one step after 3/4 of
    4), seed 1's 0.2 0.2 0.2 0.6 at 0.6: mean 0.5, t interval with one degree of freedom
    0.5 +- 12.706 x 0.1414 / sqrt 2 = [-0.771, 1.771] (a whole-stage mean would read
    0.25 and 0.3). Seed 0 trains 2 of 4 responses of 10 tokens each step: 20 / 80 =
    0.25 of the sampled tokens; seed 1 all 4 at 20: 1.0; mean 0.625. Figures no step
    logged (lag, KL) read '-'; an arm without an RL stage has no line."""
    arm = ArmData(
        "a", [_run(0, [0.1, 0.2, 0.3, 0.4], (2, 10.0)), _run(1, [0.2, 0.2, 0.2, 0.6], (4, 20.0))]
    )
    empty = ArmData("distilled", [RunData(Path("d"), 0, {}, arm.runs[0].final, [], [], 0.0)])
    md = behaviour_table([arm, empty])
    (line,) = [x for x in md if x.startswith("| a |")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:3] == ["a", "2", "0.500 [-0.771, 1.771]"]
    assert cells[3] == "20.0 [20.0, 20.0]"
    assert cells[7].startswith("0.625 [")
    assert cells[8:] == ["-", "-"]
    assert not [x for x in md if x.startswith("| distilled |")]
    assert behaviour_table([empty]) == []
