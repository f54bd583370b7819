"""What a verifier worker costs to start: a fresh interpreter against a fork of the
pool's zygote, side by side in one run.

A worker needs the task modules (SymPy and math-verify, the code checker, the IFEval
checkers) imported and warmed up. Each pool's workers are forked from its zygote
(``rewards.zygote``), which loads them once; before, every worker and every replacement
after a timeout was a fresh interpreter that loaded them itself. This benchmark starts
``--n`` workers both ways, one after the other, each until it says it is ready:

- fresh: ``--n`` interpreters that each run ``zygote.load_tasks`` (what a worker did);
- zygote: one zygote, then ``--n`` workers forked from it (the zygote's own start,
  loading the tasks once, included).

It prints the CPU seconds (the processes' user + system time, from their rusage once
reaped) and wall seconds of each. Last line:

    verifier_workers: <n> workers, fresh <cpu> s CPU (<wall> s) -> zygote <cpu> s CPU (<wall> s), x<ratio> CPU

Run: python benchmarks/verifier_workers.py [--n 10]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from multiprocessing.connection import Connection

from recipe_arena.rewards.zygote import Zygote

PRELOAD = ("math", "code", "ifeval")
"""What a scorer's pool loads (``WorkerPool``'s default)."""


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def fresh(n: int) -> tuple[float, float]:
    """CPU and wall seconds of ``n`` fresh interpreters loading the tasks, in turn."""
    code = f"from recipe_arena.rewards.zygote import load_tasks; load_tasks({PRELOAD!r})"
    cpu0, t0 = _children_cpu(), time.perf_counter()
    for _ in range(n):
        subprocess.run([sys.executable, "-c", code], check=True)
    return _children_cpu() - cpu0, time.perf_counter() - t0


def zygote(n: int) -> tuple[float, float]:
    """CPU and wall seconds of a zygote and ``n`` workers forked from it, in turn, each
    until it says it is ready; the zygote is closed (and its workers reaped) at the end."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    z = Zygote(PRELOAD)
    for _ in range(n):
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        z.fork((to_r, from_w))
        os.close(to_r)
        os.close(from_w)
        send, recv = Connection(to_w, readable=False), Connection(from_r, writable=False)
        kind, _ = recv.recv()
        assert kind == "ready"
        send.send(None)
        send.close()
        recv.close()
    z.close()
    return _children_cpu() - cpu0, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10, help="workers started each way")
    args = ap.parse_args()
    fresh_cpu, fresh_wall = fresh(args.n)
    print(f"fresh : {args.n} workers  {fresh_cpu:6.2f} s CPU  {fresh_wall:6.2f} s wall", flush=True)
    zyg_cpu, zyg_wall = zygote(args.n)
    print(f"zygote: {args.n} workers  {zyg_cpu:6.2f} s CPU  {zyg_wall:6.2f} s wall")
    print(
        f"verifier_workers: {args.n} workers, fresh {fresh_cpu:.1f} s CPU ({fresh_wall:.1f} s) "
        f"-> zygote {zyg_cpu:.1f} s CPU ({zyg_wall:.1f} s), x{fresh_cpu / zyg_cpu:.1f} CPU"
    )


if __name__ == "__main__":
    main()
