"""What the study's CPU cap (``isa: avx2``) costs on this machine: micro-model work timed
with the kernels capped at AVX2 (``cpu_isa.PINS``) and without a cap, side by side in one
run, each cell in a fresh interpreter (the libraries read the cap when they load).

Two kinds of work, the two that fill a study's runs: a base-stage training step (forward,
backward and an AdamW step on the base stage's 32 x 160 batch) and greedy decoding with
the KV cache (64 prompts of 16 tokens, 48 new tokens each, as an actor generates). Each
figure is the median of ``--steps`` repetitions after one warm-up, at torch's default
thread count; the two modes alternate for ``--rounds`` rounds so that drift in the
machine's speed falls on both.

Why: where the capped kernels cannot reproduce the committed studies anyway
(``cpu_isa.MEASURED_TO_DIFFER``), the cap buys nothing and costs this ratio; a user
there can run a study with ``isa=none``.

Last line:
    isa_cost: capped/uncapped time = <t> training step, <d> decoding

Run: python benchmarks/isa_cost.py [--steps 5] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from alternate import alternate  # type: ignore[import-not-found]

from recipe_arena.cpu_isa import PINS

WORK = """
import sys, torch
sys.path.insert(0, {here!r})
from alternate import step_and_decode
from recipe_arena.models.factory import build_micro
print(*step_and_decode(build_micro()[0], {steps}), torch.backends.cpu.get_cpu_capability())
"""


def cell(capped: bool, steps: int) -> tuple[float, float, str]:
    """(seconds per training step, seconds per decoding batch, torch's kernel set) in a
    fresh interpreter, with the cap's variables set or removed."""
    env = {k: v for k, v in os.environ.items() if k not in PINS["avx2"]}
    if capped:
        env.update(PINS["avx2"])
    out = subprocess.run(
        [sys.executable, "-c", WORK.format(steps=steps, here=str(Path(__file__).parent))],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    train, decode, kernels = out.stdout.split()[-3:]
    return float(train), float(decode), kernels


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    med = alternate(("capped", "uncapped"), a.rounds, lambda arm: cell(arm == "capped", a.steps))
    print(
        f"isa_cost: capped/uncapped time = {med['capped'][0] / med['uncapped'][0]:.2f} "
        f"training step, {med['capped'][1] / med['uncapped'][1]:.2f} decoding"
    )


if __name__ == "__main__":
    main()
