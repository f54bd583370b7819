"""The verdict replication check (``eval.replication``, ``study ... replicates=DIR``): every
published verdict beyond its MDE is looked up in the rerun on other seeds and reported as
holding or not; verdicts inside their MDE are not put to the test.

Runs are not trained: run folders are written as a finished run writes them
(``tests.test_speed._write_run``: 20 math and 2 ifeval questions, a held-out curve at RL
steps 0 and 10, the final evaluation equal to step 10), so each effect below follows by
hand from which questions each arm solves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipe_arena.eval.replication import main, replications
from recipe_arena.study import row_plan
from recipe_arena.study_export import STUDY_FILE
from recipe_arena.study_spec import StudySpec
from tests.test_speed import _write_run

SOLVES = {"base": range(2, 20), "broken": range(0), "fragile": range(17, 20), "tiny": range(2, 20)}
"""Arm -> the math questions it solves at RL step 10 in the published study (seeds 0-3)."""


def _study(
    root: Path,
    seeds: list[int],
    solves: dict[str, range],
    tiny_extra: int,
    fragile_from: int | None = None,
) -> Path:
    """A study of one row (OLMo 3's arm ``base`` and three alternatives) at ``seeds``:
    every arm solves nothing at step 0 and ``solves[arm]`` at step 10; ``tiny`` also
    solves math question 0 on ``tiny_extra`` of the seeds; with ``fragile_from``,
    ``fragile`` solves what ``base`` solves on the seeds from that index on."""
    spec = StudySpec.model_validate(
        {
            "name": "rep",
            "seeds": seeds,
            "common": ["budget=smoke"],
            "rows": [
                {
                    "name": "row",
                    "arms": {
                        "base": [],
                        "broken": ["rl.lr=0"],
                        "fragile": ["rl.lr=2e-6"],
                        "tiny": ["rl.lr=3e-6"],
                    },
                }
            ],
        }
    )
    plan = row_plan(spec, spec.rows[0], "default")
    where = root / "rows" / "row.default"
    where.mkdir(parents=True)
    (where / "comparison.json").write_text(json.dumps(plan.to_json()))
    (root / STUDY_FILE).write_text(json.dumps(spec.model_dump(mode="json")))
    rl = {"rlvr": [{"throughput/trained_tokens": 100.0}] * 10}
    for arm in plan.arms:
        for i, seed in enumerate(seeds):
            name = arm.name
            if name == "fragile" and fragile_from is not None and i >= fragile_from:
                name = "base"
            solved = set(solves[name]) | ({0} if name == "tiny" and i < tiny_extra else set())
            final = [float(q in solved) for q in range(20)] + [0.0, 0.0]
            curve = {0: [0.0] * 22, 10: final}
            args = [*plan.common, *arm.overrides]
            _write_run(where / "runs", args, f"{arm.name}-s{seed}", seed, curve, rl, "rlvr")
    return root


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The published study (seeds 0-3) and its rerun on seeds 4-7, where ``fragile`` solves
    what the baseline solves (its loss was not real) and ``broken`` again nothing."""
    tmp = tmp_path_factory.mktemp("replication")
    published = _study(tmp / "published", [0, 1, 2, 3], SOLVES, tiny_extra=1)
    rerun = _study(tmp / "rerun", [4, 5, 6, 7], {**SOLVES, "fragile": SOLVES["base"]}, tiny_extra=0)
    return published, rerun


def test_each_verdict_beyond_its_mde_is_looked_up_in_the_rerun(studies: tuple[Path, Path]) -> None:
    """``broken`` loses the baseline's 18 math questions on every seed: -18/20 = -0.900 on
    final math and, the curve rising from 0 at step 0, half that on the area (trapezoid
    average of steps 0 and 10): -0.450. ``fragile`` loses 15 of them: -0.750 and -0.375.
    With the seeds alike only the question term is noise: for ``fragile`` SE =
    sqrt(4 x var_q / (4 x 20)) with var_q = 0.75 x 0.25 x 20/19, 0.099 on final math, so
    t = 7.6 on 3 degrees of freedom (p 0.005, below 0.05 after Holm's correction) and an
    MDE near (3.18 + 0.98) x 0.099 = 0.41: beyond it. On the rerun ``broken`` is worse
    again and ``fragile`` is not. ``tiny`` gains one question on one seed (+1/80 = +0.013
    on math): inside the noise, so it makes no claim and is not tested."""
    published, rerun = studies
    found = {(f.arm, f.domain, f.measure): f for f in replications(published, rerun)}
    expected = {("broken", "final"): -0.9, ("broken", "area"): -0.45}
    expected |= {("fragile", "final"): -0.75, ("fragile", "area"): -0.375}
    for (arm, measure), effect in expected.items():
        f = found[(arm, "math", measure)]
        assert f.published.test.diff.value == pytest.approx(effect)
        assert f.published.test.mde < abs(effect)
        assert f.rerun is not None and f.holds is (arm == "broken")
    fragile = found[("fragile", "math", "final")]
    assert fragile.published.test.se == pytest.approx((0.75 * 0.25 * 20 / 19 / 20) ** 0.5)
    assert fragile.rerun.test.diff.value == 0.0  # type: ignore[union-attr]
    assert not any(arm == "tiny" for arm, _, _ in found)
    for f in found.values():  # every line listed is a directional verdict beyond its MDE
        assert f.published.p_holm < 0.05 and abs(f.published.test.diff.value) > f.published.test.mde


def test_the_command_counts_what_holds_and_fails_when_one_does_not(
    studies: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Against itself every verdict holds (exit 0); against the rerun ``fragile``'s do not
    (exit 1), each printed with both effects, and the count says how many held."""
    published, rerun = studies
    n = len(replications(published, published))
    assert main([str(published), str(published)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"replicates: {n} of {n} ")
    assert main([str(published), str(rerun)]) == 1
    out = capsys.readouterr().out.splitlines()
    differs = [line for line in out if line.startswith("DIFFERS")]
    assert differs and all(" fragile, " in line for line in differs)
    assert "row (default) fragile, math final: -0.750" in differs[0] and "-> +0.000" in differs[0]
    held = n - len(differs)
    assert out[-1].startswith(f"replicates: {held} of {n} verdicts beyond their MDE hold")
    # the rerun's fragile is 0.000 on every seed and question: an interval [0, 0] that
    # excludes -0.750, so each miss contradicts the published effect
    assert all(line.endswith("its interval excludes the published effect") for line in differs)
    assert out[-1].endswith(
        f"of the {len(differs)} that do not, {len(differs)} contradict the "
        "published effect (the rerun's interval excludes it)"
    )


def test_a_miss_whose_interval_holds_the_published_effect_does_not_contradict_it(
    studies: tuple[Path, Path], tmp_path: Path
) -> None:
    """A rerun where ``fragile`` loses its 15 questions on seed 4 alone and matches the
    baseline on seeds 5-7: per-seed differences on final math -0.75, 0, 0, 0, mean
    -0.1875. MS_S = 20 x var(-0.75, 0, 0, 0) = 20 x 0.140625 = 2.8125; the residuals
    (-0.1875 and +0.5625 on seed 4, +0.0625 and -0.1875 on the others, on the 15 and the
    5 other questions) give SSE 2.8125 on 57 degrees of freedom, MS_E = 0.0493, and MS_Q
    = 4 x 0.2344 / 19 = 0.0493 as well, so the question term is 0 and the seed term,
    far above MS_E, stands: SE = sqrt(MS_S / 80) = 0.1875, and the
    interval -0.1875 +- 3.182 x 0.1875 = [-0.784, +0.409]: not significant, so the verdict
    does not hold, but it holds -0.750, so the rerun does not contradict it."""
    published, _ = studies
    rerun = _study(tmp_path / "noisy", [4, 5, 6, 7], SOLVES, tiny_extra=0, fragile_from=1)
    found = {(f.arm, f.domain, f.measure): f for f in replications(published, rerun)}
    f = found[("fragile", "math", "final")]
    assert f.rerun is not None and not f.holds and f.contradicted is False
    d = f.rerun.test.diff
    assert d.value == pytest.approx(-0.1875)
    assert (d.lo, d.hi) == pytest.approx(
        (-0.1875 - 3.1824 * 0.1875, -0.1875 + 3.1824 * 0.1875), abs=1e-3
    )
    assert found[("broken", "math", "final")].contradicted is None  # it holds


def test_a_row_the_rerun_lacks_is_said_not_rerun(
    studies: tuple[Path, Path], tmp_path: Path
) -> None:
    """A rerun directory without the row's comparison (``rows=`` chose others): every
    verdict is listed as not rerun, and none counts as failing."""
    published, _ = studies
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / STUDY_FILE).write_text((published / STUDY_FILE).read_text())
    found = replications(published, empty)
    assert found and all(f.rerun is None and f.holds is None for f in found)
    assert main([str(published), str(empty)]) == 0


def test_the_replication_rate_of_a_study_without_noise_is_certain(
    studies: tuple[Path, Path],
) -> None:
    """``benchmarks/replication_rate.py`` on the published study: its seeds are alike and
    its residuals zero (each arm solves the same questions on every seed), so every
    simulated rerun draws the published differences again and gives every tested verdict
    again: probability 1 each, the expected count the number tested. A simulation that
    keyed its verdicts apart from the tested ones, or drew the wrong arm's differences,
    would give 0 for some."""
    from benchmarks.replication_rate import plugin_probabilities

    published, _ = studies
    probs = plugin_probabilities(published, sims=5, seed=0)
    tested = {
        (f.row, f.regime, f.measure, f.arm, f.domain) for f in replications(published, published)
    }
    assert set(probs) == tested and all(p == 1.0 for p in probs.values())
