"""The core on one GPU, checked in one prepared run: tests, RL, decode speed, Ray.

Four checks, each ending in a ``PASS``, ``FAIL`` or ``SKIP`` line:

(c) engine: decode throughput of the torch engine in bfloat16 on random weights of a
    1.1B Llama shape (hidden 2048, 16 layers, 32/8 heads, vocab 32000) and the
    SmolLM2-135M shape, ``--batch`` prompts of ``--prompt-len`` random tokens, each
    decoding ``--new-tokens`` tokens (EOS ignored, greedy), with CUDA graphs; the same
    prompts through transformers' ``generate`` in the same run; the memory-bandwidth
    utilisation: bytes a run reads (every weight once a decode step, plus the keys and
    values of every attended position, counted by the engine) over its wall time,
    against a device copy's read + write bandwidth measured here. Midway through the
    1.1B run the engine takes an in-flight weight update of on-device tensors; its
    stall is the time the decode loop spends applying it. Pass: MBU >= 50% and >= 5x
    ``generate`` on the 1.1B shape.
(a) tests: ``pytest -m cuda tests/test_cuda_engine.py``; pass when all pass.
(b) rl: the micro recipe's default RL stage (prompt filter, 48 RL steps, final eval)
    from the SFT checkpoint ``--sft`` (when not given, the default base and SFT stages
    build it on the CPU while (c) and (a) run; the micro judge comes from the cache)
    with ``device=cuda`` (engine and learner on the GPU); meanwhile the same run on the
    CPU (``--cpu-threads`` torch threads) for its wall time and gain. Pass: the
    GPU run's held-out math gain lies within max(3 sd, 5 points) of the mean of
    ``--cpu-gains`` (the CPU seeds' gains at this default, docs/results.md).
(d) ray: a one-GPU Ray run (3 RL steps, learner 0.5 GPU, one actor 0.5 GPU); SKIP
    when Ray is not installed.

Last line: ``gpu_check: rl <s> s (cpu <s> s), math +<x> points, engine <t> tok/s
(<k>x hf), MBU <m>%, update stall <u> ms, tests <p>/<n>``.

``--device cpu --quick`` runs every check on the CPU at toy sizes, to check the script
where there is no GPU. Results also go to ``--out``/gpu_check.json.

Run: ``python scripts/gpu_check.py [--device cuda|cpu] [--quick] [--sft DIR] [--out DIR]``
(after ``bash scripts/gpu_setup.sh <wheel dir>`` on a bare machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gpu_decode import SHAPES, copy_bandwidth, engine_run, hf_run, mbu_percent, random_model

ROOT = Path(__file__).resolve().parents[1]
MBU_TARGET = 50.0
"""Percent of the measured copy bandwidth a 1.1B decode step must reach (issue target)."""
HF_RATIO_TARGET = 5.0
"""Times transformers' generate the engine must reach on the 1.1B shape."""
CPU_GAINS = (78.7, 79.3, 78.7)
"""Held-out math gain (points) of the default RL stage on the CPU, seeds 0-2
(docs/results.md, The micro world's RL signal, the benchmark at the default mixture)."""
GAIN_FLOOR = 5.0
"""Least half-width (points) of the gain band: seeds of nearby settings spread over
72.7-80.3 (same section), more than three of these seeds' sd."""

DEADLINE = [float("inf")]
"""perf_counter time by which every check must have ended (``--budget``)."""


def left(cap: float) -> float:
    """Seconds a wait may last: ``cap``, or less as the deadline nears (at least 5)."""
    return max(5.0, min(cap, DEADLINE[0] - time.perf_counter()))


def say(line: str) -> None:
    print(line, flush=True)


# ----------------------------------------------------------------------------- (c) engine
def check_engine(a: argparse.Namespace, res: dict[str, Any]) -> None:
    import torch

    bw = copy_bandwidth(a.device, 1 << 30 if a.device.startswith("cuda") else 1 << 26)
    res["copy_bandwidth_gbs"] = bw / 1e9
    say(f"engine: copy bandwidth {bw / 1e12:.2f} TB/s (read + write)")
    shapes = ["toy"] if a.quick else ["llama-1.1b", "smollm2-135m"]
    gen = torch.Generator().manual_seed(0)
    for shape in shapes:
        model = random_model(shape, a.device, torch.bfloat16)
        vocab = SHAPES[shape]["vocab_size"]
        prompts = torch.randint(3, vocab, (a.batch, a.prompt_len), generator=gen).tolist()
        run, extra = engine_run(
            model, prompts, a.new_tokens, a.device, True, a.graph_steps, update=shape == shapes[0]
        )
        one, _ = engine_run(model, prompts, a.new_tokens, a.device, True, 1)
        eager, _ = engine_run(model, prompts, max(4, a.new_tokens // 8), a.device, False, 1)
        hf = hf_run(model, prompts, a.new_tokens, a.device)
        mbu = mbu_percent(run, bw)
        ratio = run.tokens_per_s / hf.tokens_per_s
        res[shape] = {
            "tok_s": run.tokens_per_s,
            "mbu": mbu,
            "hf_tok_s": hf.tokens_per_s,
            "ratio": ratio,
            "graph_steps_1": {"tok_s": one.tokens_per_s, "mbu": mbu_percent(one, bw)},
            "eager_tok_s": eager.tokens_per_s,
            **extra,
        }
        say(
            f"engine {shape}: {run.tokens_per_s:,.0f} tok/s ({run.wall_s * 1e3 / a.new_tokens:.2f}"
            f" ms a step), MBU {mbu:.1f}% | graph_steps=1 {one.tokens_per_s:,.0f} tok/s, MBU "
            f"{mbu_percent(one, bw):.1f}% | eager {eager.tokens_per_s:,.0f} tok/s | hf generate "
            f"{hf.tokens_per_s:,.0f} tok/s ({ratio:.1f}x) | graphs captured "
            f"{extra['graph_captures']:.0f}"
        )
        if "update_ms" in extra:
            res["update_ms"] = extra["update_ms"]
            say(
                f"engine {shape}: in-flight update stall {extra['update_ms']:.1f} ms, "
                f"{extra['spanned']:.0f}/{a.batch} sequences switched version inside"
            )
        del model
        if a.device.startswith("cuda"):
            torch.cuda.empty_cache()
    head = res[shapes[0]]
    ok = head["mbu"] >= MBU_TARGET and head["ratio"] >= HF_RATIO_TARGET
    res["engine_pass"] = ok
    say(
        f"{'PASS' if ok else 'FAIL'} (c) engine {shapes[0]}: MBU {head['mbu']:.1f}% "
        f"(>= {MBU_TARGET:.0f}), {head['ratio']:.1f}x hf (>= {HF_RATIO_TARGET:.0f})"
    )


# ----------------------------------------------------------------------------- (a) tests
def check_tests(a: argparse.Namespace, res: dict[str, Any]) -> None:
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "-rs", "-p", "no:cacheprovider"]
    cmd += ["-o", "addopts=", "tests/test_cuda_engine.py"]
    t0 = time.perf_counter()
    out = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=left(a.test_timeout)
    )
    text = out.stdout + out.stderr
    counts = {k: 0 for k in ("passed", "failed", "skipped", "error", "errors")}
    tail = text.strip().splitlines()[-1] if text.strip() else ""
    for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)", tail):
        counts[k] = int(n)
    passed = counts["passed"]
    total = passed + counts["failed"] + counts["skipped"] + counts["error"] + counts["errors"]
    res["tests"] = (passed, total)
    ok = out.returncode == 0 and passed == total and total > 0
    if not ok:
        for line in text.splitlines():
            if line.startswith(("FAILED", "ERROR", "SKIPPED", "E ")):
                say(f"  {line[:300]}")
    say(
        f"{'PASS' if ok else 'FAIL'} (a) tests marked cuda: {passed}/{total} passed "
        f"({time.perf_counter() - t0:.0f} s)"
    )


# ----------------------------------------------------------------------------- (b) rl
def start_sft_build(a: argparse.Namespace) -> Any:
    """Build the SFT checkpoint RL starts from (``rl_start.rl_start_checkpoint``: the
    default base and SFT stages, cached) in a child process on ``--build-threads``
    threads, while the other checks run; ``finish_sft_build`` returns its path."""
    over = ["base.evaluate=false"] + (["base.steps=20", "sft.steps=10"] if a.quick else [])
    code = (
        "from recipe_arena.rl_start import rl_start_checkpoint; "
        f"print('SFT=' + str(rl_start_checkpoint({over!r})))"
    )
    env = dict(os.environ, OMP_NUM_THREADS=str(a.build_threads))
    log = open(Path(a.out) / "sft.log", "w")  # noqa: SIM115 - closed by finish_sft_build
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    return proc, log, time.perf_counter()


def finish_sft_build(a: argparse.Namespace, build: Any) -> Path:
    proc, log, t0 = build
    rc = proc.wait(timeout=left(a.rl_timeout))
    log.close()
    text = (Path(a.out) / "sft.log").read_text()
    found = re.findall(r"^SFT=(.+)$", text, flags=re.M)
    if rc != 0 or not found:
        raise RuntimeError(f"building the SFT checkpoint failed: {text.strip()[-300:]}")
    say(f"rl: SFT checkpoint {found[-1]} built ({time.perf_counter() - t0:.0f} s)")
    return Path(found[-1])


def rl_command(a: argparse.Namespace, sft: Path, name: str, device: str | None) -> list[str]:
    args = [
        "recipe=olmo3_think",
        f"world.checkpoint={sft}",
        "pipeline.stages=[prompt_filter,rlvr,eval]",
        "rewards.allow_weak_sandbox=true",
        f"out_dir={a.out}",
        f"name={name}",
        "seed=0",
    ]
    if device:
        args.append(f"device={device}")
    if a.quick:
        args += [
            "rl.steps=4",
            "rl.eval_every=2",
            "rl.prompts_per_step=2",
            "rl.group_size=4",
            "rl.max_new_tokens=24",
            "eval.max_new_tokens=24",
            "prompt_filter.rollouts=2",
            "prompt_filter.max_prompts=16",
            "eval.max_prompts_per_domain=4",
            "eval.domain_prompts={math:12,chat:4}",
            "rewards.micro_judge.steps=20",
            "rewards.micro_judge.examples=100",
        ]
    code = "from recipe_arena.cli import entry; entry()"
    return [sys.executable, "-c", code, "run", *args]


def rl_figures(run_dir: Path) -> dict[str, float]:
    recs = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    evals = {r["step"]: r for r in recs if r.get("stage") == "rlvr" and "eval/math/pass@1" in r}
    start, end = evals[min(evals)], evals[max(evals)]
    sync = [r["throughput/sync_time_s"] for r in recs if "throughput/sync_time_s" in r]
    done = json.loads((run_dir / "stages.json").read_text())["done"]
    return {
        "gain": 100 * (end["eval/math/pass@1"] - start["eval/math/pass@1"]),
        "start": start["eval/math/pass@1"],
        "end": end["eval/math/pass@1"],
        "rl_s": done["rlvr"],
        "total_s": sum(done.values()),
        "sync_ms": 1000 * statistics.median(sync) if sync else float("nan"),
    }


def start_rl(a: argparse.Namespace, sft: Path, name: str, device: str | None, threads: int):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONUNBUFFERED="1")
    log = open(Path(a.out) / f"{name}.log", "w")  # noqa: SIM115 - closed by finish_rl
    cmd = rl_command(a, sft, name, device)
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT), log


def finish_rl(a: argparse.Namespace, proc: Any, log: Any, name: str) -> dict[str, float] | None:
    try:
        rc = proc.wait(timeout=left(a.rl_timeout))
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = -9
    log.close()
    if rc != 0:
        lines = (Path(a.out) / f"{name}.log").read_text().strip().splitlines()
        for line in lines[-8:]:
            say(f"  {name}: {line[:300]}")
        return None
    return rl_figures(Path(a.out) / name)


def check_rl(a: argparse.Namespace, res: dict[str, Any], cpu_proc: Any) -> None:
    sft = res["sft"]
    gpu_proc = start_rl(a, sft, "rl-gpu", a.device, a.gpu_threads)
    gpu = finish_rl(a, *gpu_proc, "rl-gpu")
    cpu = finish_rl(a, *cpu_proc, "rl-cpu") if cpu_proc else None
    mean = statistics.mean(a.cpu_gains)
    sd = statistics.stdev(a.cpu_gains) if len(a.cpu_gains) > 1 else 0.0
    band = max(3 * sd, GAIN_FLOOR)
    res["rl_gpu"], res["rl_cpu"] = gpu, cpu
    if gpu is None:
        say("FAIL (b) rl: the GPU run failed (log above)")
        return
    ok = abs(gpu["gain"] - mean) <= band
    if cpu:
        cpu_text = f"CPU same seed here +{cpu['gain']:.1f} points, rl {cpu['rl_s']:.0f} s"
    else:
        cpu_text = "CPU run failed" if cpu_proc else "no CPU run beside it (--device cpu)"
    say(
        f"{'PASS' if ok else 'FAIL'} (b) rl on {a.device}: math {gpu['start']:.3f} -> "
        f"{gpu['end']:.3f} (+{gpu['gain']:.1f} points; CPU seeds {mean:.1f} +- {band:.1f}), "
        f"rl {gpu['rl_s']:.0f} s (filter + rl + eval {gpu['total_s']:.0f} s), weight sync "
        f"{gpu['sync_ms']:.1f} ms a step; {cpu_text}"
    )


# ----------------------------------------------------------------------------- (d) ray
def check_ray(a: argparse.Namespace, res: dict[str, Any]) -> None:
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        say(
            "SKIP (d) ray: Ray is not installed here, and its wheel (ray 2.60, 79 MB for "
            "cp312) is larger than the 64 MiB a transfer to this machine carries"
        )
        return
    if not a.device.startswith("cuda"):
        say("SKIP (d) ray: no GPU to share (--device cpu)")
        return
    cmd = rl_command(a, res["sft"], "rl-ray", a.device)
    cmd += [
        "cluster.backend=ray",
        "cluster.learner_gpus=0.5",
        "cluster.gpus_per_actor=0.5",
        "rl.steps=3",
        "pipeline.stages=[rlvr]",
        "eval.domain_prompts={math:10}",
        "eval.max_prompts_per_domain=2",
    ]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=a.rl_timeout)
    ok = out.returncode == 0
    if not ok:
        for line in (out.stdout + out.stderr).strip().splitlines()[-6:]:
            say(f"  rl-ray: {line[:300]}")
    say(
        f"{'PASS' if ok else 'FAIL'} (d) ray: 3 RL steps, learner 0.5 GPU + actor 0.5 GPU on "
        f"one GPU ({time.perf_counter() - t0:.0f} s)"
    )


# ----------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--device", default="cuda", help="cuda (the check) or cpu (a dry run)")
    ap.add_argument("--quick", action="store_true", help="toy sizes (with --device cpu)")
    ap.add_argument("--sft", help="SFT checkpoint RL starts from (default: build it)")
    ap.add_argument("--out", default="/tmp/gpu_check")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--graph-steps", type=int, default=4)
    ap.add_argument("--cpu-threads", type=int, default=8, help="threads of the CPU RL run")
    ap.add_argument("--gpu-threads", type=int, default=4, help="threads of the GPU RL run")
    ap.add_argument("--build-threads", type=int, default=6, help="threads of the SFT build")
    ap.add_argument("--cpu-gains", type=float, nargs="+", default=list(CPU_GAINS))
    ap.add_argument("--skip", nargs="*", default=[], choices=["engine", "tests", "rl", "ray"])
    ap.add_argument("--rl-timeout", type=float, default=420)
    ap.add_argument("--test-timeout", type=float, default=300)
    ap.add_argument("--budget", type=float, default=float("inf"), help="seconds for all checks")
    a = ap.parse_args(argv)
    for flag in ("batch", "prompt_len", "new_tokens", "graph_steps", "cpu_threads"):
        if getattr(a, flag) < 1:
            ap.exit(2, f"--{flag.replace('_', '-')}={getattr(a, flag)}: must be >= 1\n")
    import torch

    if a.device.startswith("cuda") and not torch.cuda.is_available():
        ap.exit(2, "gpu_check: --device cuda but no CUDA device here; use --device cpu --quick\n")
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    DEADLINE[0] = t_start + a.budget
    import torch

    name = torch.cuda.get_device_name() if a.device.startswith("cuda") else "cpu"
    say(f"gpu_check: {name}, torch {torch.__version__}, {os.cpu_count()} cores")
    res: dict[str, Any] = {"device": name}
    need_sft = "rl" not in a.skip or "ray" not in a.skip
    build = start_sft_build(a) if need_sft and not a.sft else None

    def rl_checks() -> None:
        res["sft"] = Path(a.sft) if a.sft else finish_sft_build(a, build)
        cpu_proc = None
        if a.device != "cpu":  # the CPU reference run, beside the GPU one
            cpu_proc = start_rl(a, res["sft"], "rl-cpu", None, a.cpu_threads)
        check_rl(a, res, cpu_proc)

    checks = (
        ("engine", lambda: check_engine(a, res)),
        ("tests", lambda: check_tests(a, res)),
        ("rl", rl_checks),
        ("ray", lambda: check_ray(a, res)),
    )
    for label, fn in checks:
        if label in a.skip:
            continue
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - one failed check must not hide the others
            say(f"FAIL ({label}) {type(e).__name__}: {e}")
    (Path(a.out) / "gpu_check.json").write_text(json.dumps(res, indent=1, default=str))
    gpu, cpu = res.get("rl_gpu") or {}, res.get("rl_cpu") or {}
    head = res.get("llama-1.1b") or res.get("toy") or {}
    p, n = res.get("tests", (0, 0))
    say(f"gpu_check: total {time.perf_counter() - t_start:.0f} s")
    say(
        f"gpu_check: rl {gpu.get('rl_s', float('nan')):.0f} s (cpu "
        f"{cpu.get('rl_s', float('nan')):.0f} s), math +{gpu.get('gain', float('nan')):.1f} "
        f"points, engine {head.get('tok_s', float('nan')):,.0f} tok/s "
        f"({head.get('ratio', float('nan')):.1f}x hf), MBU {head.get('mbu', float('nan')):.1f}%, "
        f"update stall {res.get('update_ms', float('nan')):.1f} ms, tests {p}/{n}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
