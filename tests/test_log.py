"""What a run prints: stage bars as log lines, held-out notes, library bars and known
harmless warnings filtered, repeats held back, and the closing summary.

The smoke run's captured log is checked in test_recipe_smoke.py (one run serves both).
"""

from __future__ import annotations

import io
import json
import logging
import logging.config
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from recipe_arena.logsetup import (
    DropKnownBenign,
    OncePerMessage,
    _vllm_logging_config,
    is_benign,
    repeat_report,
)
from recipe_arena.progress import StageBar, heldout_text, rl_postfix
from recipe_arena.summary import duration, rl_heldout, run_summary

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- progress
def test_bar_writes_one_line_per_tenth_to_a_file() -> None:
    """20 steps into a non-terminal stream: a line each time n reaches a multiple of
    ceil(20 / 10) = 2, so 10 lines (n = 2, 4, ..., 20), the last at 100%; a note sits
    between them as its own line; no carriage return anywhere."""
    out = io.StringIO()
    with StageBar("sft", 20, stream=out) as bar:
        for i in range(20):
            bar.update(1, f"loss {1 - i / 20:.3f}")
            if i == 4:
                bar.note("a note")
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    bars = [ln for ln in lines if ln.startswith("sft:")]
    assert [ln.split()[2] for ln in bars] == [f"{n}/20" for n in range(2, 21, 2)]
    assert bars[-1].startswith("sft: 100% 20/20 [") and bars[-1].endswith("loss 0.050]")
    assert lines.index("a note") == 2  # after the lines at n = 2 and 4 (i = 1 and 3)
    assert "<" in bars[0]  # elapsed<remaining: the ETA


def test_bar_resumed_counts_from_its_start() -> None:
    """Resumed at step 4 of 20 (step size 2): lines at 6, 8, ..., 20 (8 lines)."""
    out = io.StringIO()
    with StageBar("rlvr", 20, initial=4, stream=out) as bar:
        for _ in range(16):
            bar.update(1)
    counts = [ln.split()[2] for ln in out.getvalue().splitlines()]
    assert counts == [f"{n}/20" for n in range(6, 21, 2)]


def test_bar_prints_its_last_state_on_close() -> None:
    """Stopped early at 3 of 20 (lines at 2 only): close prints the line for 3/20; a
    jump of 3 at once prints one line, not one per tenth crossed."""
    out = io.StringIO()
    bar = StageBar("base", 20, stream=out)
    for _ in range(3):
        bar.update(1)
    bar.close()
    assert [ln.split()[2] for ln in out.getvalue().splitlines()] == ["2/20", "3/20"]
    out = io.StringIO()
    with StageBar("base", 20, stream=out) as bar:
        bar.update(7)
    assert [ln.split()[2] for ln in out.getvalue().splitlines()] == ["7/20"]


def test_heldout_text_and_rl_postfix() -> None:
    """math 0.286 after 0.186: +0.100; a domain missing at the start has no change;
    the mean over domains is not listed; domains in the order math, code, ifeval, chat."""
    end = {"eval/chat/pass@1": 0.16, "eval/math/pass@1": 0.286, "eval/mean/pass@1": 0.2}
    start = {"eval/math/pass@1": 0.186}
    assert heldout_text(end, start) == "math 0.286 (+0.100), chat 0.160"
    assert rl_postfix({"reward/mean": 0.4125}, "@50 math 0.286") == (
        "reward 0.412, held-out @50 math 0.286"
    )
    assert rl_postfix({"reward/mean": float("nan")}, "") == "reward -"


# ----------------------------------------------------------------------------- summary
def _write_run(run: Path) -> None:
    records = [
        {"stage": "base", "step": 400, "cached": 1.0},
        {"stage": "rlvr", "step": 0, "eval/math/pass@1": 0.186, "eval/code/pass@1": 0.44},
        {"stage": "rlvr", "step": 1, "reward/mean": 0.3},
        {"stage": "rlvr", "step": 50, "eval/math/pass@1": 0.2, "eval/code/pass@1": 0.3},
        {"stage": "rlvr", "step": 450, "eval/math/pass@1": 0.286, "eval/code/pass@1": 0.18},
    ]
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = {"base": 0.4, "eval": 0.1, "prompt_filter": 32.0, "rlvr": 1086.0, "sft": 90.0}
    (run / "stages.json").write_text(json.dumps({"done": done}))
    (run / "config.yaml").write_text(
        "pipeline: {stages: [base, sft, prompt_filter, rlvr, eval]}\n"
        "rl: {domain_weights: {math: 0.9, code: 0.0, ifeval: 0.1, chat: 0.0}}\n"
    )
    (run / "report.html").write_text("<html></html>")


def test_run_summary_reads_the_run_directory(tmp_path: Path) -> None:
    """Start = the step-0 evaluation, end = the last one: math 0.186 -> 0.286 (+0.100),
    code 0.44 -> 0.18 (-0.260, weight 0: not trained); stage times in pipeline order,
    1086 s = 18m 06s, total 0.4 + 90 + 32 + 1086 + 0.1 = 1208.5 s = 20m 08s (rounded
    from 20m 08.5s to the even second: Python rounds half to even, 1208)."""
    run = tmp_path / "r"
    _write_run(run)
    text = run_summary(run)
    lines = text.splitlines()
    assert lines[0] == f"run finished: {run}"
    assert lines[1] == f"  report      {run / 'report.html'}  (and report.md)"
    assert lines[3].split() == ["math", "0.186", "0.286", "+0.100"]
    assert lines[4].split() == ["code", "0.440", "0.180", "-0.260", "(not", "trained)"]
    assert lines[5] == (
        "  wall time   base 0.4 s (cached) | sft 1m 30s | prompt_filter 32 s | rlvr 18m 06s"
        " | eval 0.1 s  (stages total 20m 08s)"
    )
    start, end = rl_heldout([json.loads(x) for x in (run / "metrics.jsonl").open()])
    assert (start, end) == ({"math": 0.186, "code": 0.44}, {"math": 0.286, "code": 0.18})


def test_duration() -> None:
    assert [duration(s) for s in (0.44, 32.4, 90, 1086, 3725)] == [
        "0.4 s",
        "32 s",
        "1m 30s",
        "18m 06s",
        "1h 02m",
    ]


# ----------------------------------------------------------------------------- filters
def _record(msg: str, level: int = logging.WARNING, name: str = "x") -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, None, None)


def test_known_benign_filter_and_once_per_message() -> None:
    """The rotary reload warning is dropped, an unknown warning passes; a repeated
    warning passes once and its 2 repeats are counted; errors always pass."""
    assert is_benign("RotaryEmbedding: Failed to load weights")
    assert not DropKnownBenign().filter(_record("RotaryEmbedding: Failed to load weights"))
    assert DropKnownBenign().filter(_record("Linear: Failed to load weights"))
    OncePerMessage.repeats.clear()
    once = OncePerMessage()
    passed = [once.filter(_record("judge reply unparsable")) for _ in range(3)]
    assert passed == [True, False, False]
    assert all(once.filter(_record("boom", logging.ERROR)) for _ in range(2))
    assert repeat_report().startswith("(2 repeated warnings not shown, most often 2 x ")
    OncePerMessage.repeats.clear()
    assert repeat_report() == ""


def test_vllm_logging_config_drops_benign_lines_in_a_fresh_process(tmp_path: Path) -> None:
    """The config handed to vLLM's processes (VLLM_LOGGING_CONFIG_PATH) loads with
    dictConfig in a fresh interpreter and filters there: of the rotary warning, a new
    warning and that new warning again, only the new one is printed, once."""
    path = _vllm_logging_config()
    script = textwrap.dedent(
        f"""
        import json, logging, logging.config
        logging.config.dictConfig(json.load(open({str(path)!r})))
        log = logging.getLogger("vllm.model_executor.model_loader.reload.layerwise")
        log.warning("%s: Failed to load weights", "RotaryEmbedding")
        log.warning("something new")
        log.warning("something new")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].endswith("something new")


_SAVE_LOAD = """
import sys, tempfile
from recipe_arena import hidden_modules
from recipe_arena.logsetup import configure_output
configure_output(sys.argv[1] == "1")
with hidden_modules(("sklearn",)):  # as the command line loads transformers (cli.py)
    from recipe_arena.models.factory import build_micro, load_checkpoint, save_checkpoint
model, tok = build_micro()
path = save_checkpoint(model, tok, tempfile.mkdtemp() + "/ckpt")
load_checkpoint(path)
"""


@pytest.mark.parametrize("verbose", [False, True])
def test_checkpoint_bars_only_with_verbose(verbose: bool) -> None:
    """A real save and load of the micro model: transformers' "Writing model shards" and
    "Loading weights" bars reach stderr with -v only."""
    # a fresh process, as a user starts it: not the environment an earlier in-process
    # `main()` of this test session quietened (configure_output sets these for children)
    quiet = ("HF_HUB_DISABLE_PROGRESS_BARS", "PYTHONWARNINGS", "VLLM_LOGGING_CONFIG_PATH")
    env = {k: v for k, v in os.environ.items() if k not in quiet}
    proc = subprocess.run(
        [sys.executable, "-c", _SAVE_LOAD, "1" if verbose else "0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    for bar in ("Writing model shards", "Loading weights"):
        assert (bar in proc.stderr) == verbose, proc.stderr


_VLLM_RELOADS = """
import sys, torch
from recipe_arena.logsetup import configure_output
from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.engines import GenerationRequest, SamplingParams, build_engine
from recipe_arena.models.factory import build_micro

if __name__ == "__main__":
    configure_output(False)
    old, tok = build_micro(seed=3)
    eng = build_engine("vllm", old, tok)
    prompt = tuple(tok("<|im_start|>user\\n12+7=<|im_end|>\\n")["input_ids"])
    worst = 0.0
    for v in (1, 2):
        new, _ = build_micro(seed=3 + v)
        eng.update_weights(new.state_dict(), version=v)
        params = SamplingParams(max_new_tokens=150, temperature=1.0, seed=v, ignore_eos=True)
        c = eng.generate([GenerationRequest(f"r{v}", prompt, params)])[0]
        with torch.no_grad():
            full = torch.tensor([list(prompt) + list(c.tokens)])
            ref = sequence_logprobs(new, full)[0, len(prompt):].tolist()
        worst = max([worst, *(abs(a - b) for a, b in zip(c.logprobs, ref, strict=True))])
    eng.close()
    print(f"worst {worst:.3e}")
"""


@pytest.mark.slow
@pytest.mark.vllm
def test_vllm_reload_warning_is_benign_and_filtered(tmp_path: Path) -> None:
    """vLLM logs "RotaryEmbedding: Failed to load weights" at every in-place reload: the
    rotary cos/sin cache is no checkpoint tensor, and vLLM puts its own back. Benign:
    after two reloads the logprobs of 150 sampled tokens (positions up to ~170) equal
    transformers' under the new weights (< 1e-4 in fp32). Filtered: neither that line
    nor vLLM's per-reload "Loading safetensors checkpoint shards" bar is printed."""
    from recipe_arena.engines.vllm_engine import vllm_available

    if not vllm_available():
        pytest.skip("vLLM is not installed (make vllm)")
    script = tmp_path / "reloads.py"
    script.write_text(_VLLM_RELOADS)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=900, env=env
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert float(proc.stdout.split("worst ")[1]) < 1e-4
    assert "Failed to load weights" not in log
    assert "Loading safetensors checkpoint shards" not in log
