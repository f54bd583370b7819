"""What one code check costs, and the share of it spent mounting the sandbox's tmpfs.

Side by side in one process: ``--n`` checks of a one-function row through
``rewards.code.check_code`` (both sides, bubblewrap, seccomp), then ``--n`` runs of the
launcher alone that mounts the capped tmpfs of ``/tmp`` and ``/var/tmp`` in a mount
namespace of its own (``sandbox._tmp_launcher``), followed by ``/bin/true`` instead of
bubblewrap. CPU is the children's user+system time as the kernel counts it for this
process: the sandbox's own processes are reaped inside its PID namespace and are not
counted, so a check's CPU here is the launcher's and bubblewrap's. Needs ``bwrap`` mode
(root). Last line: ``sandbox_cost: check <ms> ms wall, launcher <ms> ms wall, <ms> ms
CPU``.

    python benchmarks/sandbox_cost.py [--n 60]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox import Limits, _mount_points, _tmp_launcher, isolation_mode

TESTS = ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]
RESPONSE = "```python\ndef add(a, b):\n    return a + b\n```"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(fn: Callable[[], object], n: int) -> tuple[float, float]:
    """(median wall ms, mean children's CPU ms) of ``n`` calls of ``fn``."""
    walls = []
    cpu0 = _children_cpu()
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls) * 1e3, (_children_cpu() - cpu0) / n * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60, help="checks, and launcher runs")
    args = ap.parse_args()
    if isolation_mode() != "bwrap":
        sys.exit(f"sandbox_cost: needs bwrap mode (root and bubblewrap), got {isolation_mode()}")
    lim = Limits()
    got = check_code(TESTS, RESPONSE, True, lim)  # warm: the harness is compiled once
    assert got[0] == 1.0, got
    check_wall, check_cpu = _timed(lambda: check_code(TESTS, RESPONSE, True, lim), args.n)
    c, p = _mount_points()
    argv = [*_tmp_launcher(lim, [(c, 65534), (p, 65533)]), "/bin/true"]
    launch_wall, launch_cpu = _timed(lambda: subprocess.run(argv, check=True), args.n)
    print(f"check     {args.n} runs  {check_wall:6.1f} ms wall (median)  {check_cpu:5.1f} ms CPU")
    print(f"launcher  {args.n} runs  {launch_wall:6.1f} ms wall (median)  {launch_cpu:5.1f} ms CPU")
    print(
        f"sandbox_cost: check {check_wall:.1f} ms wall, launcher {launch_wall:.1f} ms wall, "
        f"{launch_cpu:.1f} ms CPU"
    )


if __name__ == "__main__":
    main()
