"""benchmarks/cadence_check.py: runs that differ in ``rl.eval_every`` alone are paired, and
compared only where both evaluated and logged, with the clock and the judge's memo
counter left out. The run folders are written by hand in the format the RL stage writes
(eval_scores.jsonl, metrics.jsonl, stages.json, config.yaml), so each expected count is
derived below from what the test wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from benchmarks import cadence_check


def _run(
    root: Path,
    name: str,
    every: int,
    scores: dict[int, list[float]],
    loss: dict[int, float],
    seed: int = 0,
    clock: float = 0.0,
    done: bool = True,
) -> Path:
    """A run folder of 12 RL steps evaluated every ``every``: its per-question scores at
    the steps in ``scores`` and its loss at the steps in ``loss``, with a clock time, a
    step time and a memo count that depend on ``clock`` (as they would on the machine)."""
    run = root / name
    run.mkdir(parents=True)
    cfg = {
        "name": name,
        "out_dir": str(root),
        "seed": seed,
        "rl": {"steps": 12, "eval_every": every},
        "pipeline": {"stages": ["rlvr", "eval"]},
    }
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    stages = {"rlvr": 10.0 + clock, **({"eval": 0.0} if done else {})}
    (run / "stages.json").write_text(json.dumps({"done": stages}))
    with open(run / "eval_scores.jsonl", "w") as f:
        for step, s in scores.items():
            rec = {"stage": "rlvr", "step": step, "ids": ["q0", "q1"], "domains": ["math"] * 2,
                   "sources": ["a", "b"], "scores": s}  # fmt: skip
            f.write(json.dumps(rec) + "\n")
    with open(run / "metrics.jsonl", "w") as f:
        for step, value in loss.items():
            rec = {"stage": "rlvr", "step": step, "time": 1e9 + clock, "seconds": clock,
                   "throughput/step_time_s": 0.5 + clock, "reward/chat/judge_memo_hits": clock,
                   "loss": value}  # fmt: skip
            f.write(json.dumps(rec) + "\n")
    return run


def _studies(tmp_path: Path, theirs_12: list[float], theirs_loss_12: float) -> tuple[Path, Path]:
    """MINE evaluated every 12 (steps 0 and 12), THEIRS every 6 (0, 6, 12); both log the
    loss at steps 6 and 12."""
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    _run(mine, "r12-s0", 12, {0: [0.0, 0.0], 12: [1.0, 0.0]}, {6: 0.5, 12: 0.25})
    _run(theirs, "r6-s0", 6, {0: [0.0, 0.0], 6: [1.0, 1.0], 12: theirs_12},
         {6: 0.5, 12: theirs_loss_12}, clock=7.0)  # fmt: skip
    return mine, theirs


def test_a_pair_identical_where_both_evaluated_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Shared evaluations: steps 0 and 12 (THEIRS' step 6 has no partner and is not
    compared, though its scores differ from anything MINE has). Shared metric values:
    ``loss`` at steps 6 and 12 = 2; the clock, the seconds, the step time and the memo
    hits differ by 7 and are not compared. A wrong tool that compared them, or compared
    THEIRS' step 6, would report a difference."""
    mine, theirs = _studies(tmp_path, [1.0, 0.0], 0.25)
    (result,), unpaired = cadence_check.check(mine, theirs)
    assert (result.evaluations, result.values, result.first_difference, unpaired) == (
        2,
        2,
        None,
        [],
    )
    assert cadence_check.main([str(mine), str(theirs)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "cadence_check: 1 of 1 pairs identical (2 evaluations and 2 metric values compared); "
        "0 runs unpaired"
    )


def test_a_score_or_a_metric_that_differs_fails(tmp_path: Path) -> None:
    """One question's score at step 12, or the loss at step 12, differs: the pair differs
    there and the tool exits 1."""
    mine, theirs = _studies(tmp_path / "a", [1.0, 1.0], 0.25)
    (result,), _ = cadence_check.check(mine, theirs)
    assert result.first_difference == "rlvr step 12 scores"
    assert cadence_check.main([str(mine), str(theirs)]) == 1
    mine, theirs = _studies(tmp_path / "b", [1.0, 0.0], 0.3)
    (result,), _ = cadence_check.check(mine, theirs)
    assert result.first_difference == "rlvr step 12 loss: 0.25 against 0.3"


def test_runs_pair_by_every_setting_but_the_cadence(tmp_path: Path) -> None:
    """A run of MINE at another seed has no partner (settings other than the cadence
    differ): unpaired, exit 1. An unfinished run of MINE, and one whose folder THEIRS also
    holds (the same run, shared by both studies), are not checked."""
    mine, theirs = _studies(tmp_path, [1.0, 0.0], 0.25)
    _run(mine, "r12-s1", 12, {0: [0.0, 0.0]}, {}, seed=1)
    _run(mine, "r12-s2", 12, {0: [0.0, 0.0]}, {}, seed=2, done=False)
    _run(mine, "shared-s0", 6, {0: [0.0, 0.0]}, {}, seed=3)
    _run(theirs, "shared-s0", 6, {0: [1.0, 1.0]}, {}, seed=3)
    results, unpaired = cadence_check.check(mine, theirs)
    assert [r.mine for r in results] == ["r12-s0"] and unpaired == ["r12-s1"]
    assert cadence_check.main([str(mine), str(theirs)]) == 1
