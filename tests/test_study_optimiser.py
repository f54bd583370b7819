"""The optimiser study (studies/optimiser.yaml) loads, names every new policy loss and
correction as an arm after OLMo 3's choice, and every one of its runs composes into a
valid configuration (nothing is run)."""

from __future__ import annotations

from pathlib import Path

from recipe_arena.policy_loss import POLICY_LOSS
from recipe_arena.staleness import STALENESS
from recipe_arena.study import prepare
from recipe_arena.study_spec import load_spec

STUDY = Path(__file__).resolve().parent.parent / "studies" / "optimiser.yaml"


def test_optimiser_study_arms_and_runs(tmp_path: Path) -> None:
    spec = load_spec(STUDY)
    rows = {r.name: r for r in spec.rows}
    assert rows["policy_loss"].arms == ["olmo", "gspo", "cispo", "gmpo"]
    assert rows["correction"].arms == ["tis", "none", "icepop", "seq_mask_tis", "m2po"]
    assert set(rows["policy_loss"].arms) <= set(POLICY_LOSS)
    assert set(rows["correction"].arms) <= set(STALENESS)
    jobs, links = prepare(spec, tmp_path, rows=None)
    # each (row, regime) comparison links one run per arm and seed (4 seeds)
    assert {k: len(v) for k, v in links.items()} == {
        "policy_loss.default": 16,
        "policy_loss.stressed": 16,
        "correction.default": 20,
        "correction.stressed": 20,
        "precision.stressed": 16,
    }
    assert len(jobs) == 76  # 88 links; runs of the same settings (shared baselines) made once
