"""What the OpenMP wait policy costs and saves: micro-model training steps (forward and
backward, batch 8 x 128 tokens, torch's default thread count) under the runtime's default
policy (threads spin while they wait) and under ``OMP_WAIT_POLICY=PASSIVE`` (they sleep;
the package default, recipe_arena/__init__.py), on a quiet machine and beside a second
job of the same kind (another process training the same model under the same policy, as
when a test suite and a run, or two runs, share the machine), side by side in one run.

Each cell runs in a fresh interpreter, because the OpenMP runtime reads the policy once,
when torch loads it. The step time is the median of ``--steps`` steps after one warm-up.

Last line:
    omp_wait: passive/default step time = <q> quiet, <l> loaded

Run: python benchmarks/omp_wait.py [--steps 8]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

STEP = """
import statistics, sys, time, torch
from recipe_arena.models.factory import build_micro
model, _ = build_micro()
x = torch.randint(0, 50, (8, 128))
times = []
for _ in range({steps} + 1):
    t = time.perf_counter()
    model(input_ids=x, labels=x).loss.backward()
    times.append(time.perf_counter() - t)
print(statistics.median(times[1:]))
"""


def _env(policy: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy is not None:  # None: unset; STEP imports torch before the package can set it
        env["OMP_WAIT_POLICY"] = policy
    return env


def step_time(policy: str | None, steps: int, loaded: bool) -> float:
    """Median seconds per training step in a fresh interpreter under ``policy``; with
    ``loaded``, beside a second process that trains the same way under the same policy."""
    second = None
    if loaded:
        second = subprocess.Popen(
            [sys.executable, "-c", STEP.format(steps=1_000_000)],
            env=_env(policy),
            stdout=subprocess.DEVNULL,
        )
        time.sleep(5.0)  # past its start-up, into its training loop
    try:
        out = subprocess.run(
            [sys.executable, "-c", STEP.format(steps=steps)],
            capture_output=True,
            text=True,
            env=_env(policy),
            check=True,
        )
    finally:
        if second is not None:
            second.kill()
            second.wait()
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=8)
    a = p.parse_args()
    cores = os.cpu_count() or 1
    ratios = {}
    for load in ("quiet", "loaded"):
        spin = step_time(None, a.steps, load == "loaded")
        passive = step_time("PASSIVE", a.steps, load == "loaded")
        ratios[load] = passive / spin
        print(
            f"{load:6s}: spinning {spin * 1e3:8.1f} ms/step, passive {passive * 1e3:8.1f} "
            f"ms/step ({cores} cores)",
            flush=True,
        )
    print(
        f"omp_wait: passive/default step time = {ratios['quiet']:.2f} quiet, {ratios['loaded']:.2f} loaded"
    )


if __name__ == "__main__":
    main()
