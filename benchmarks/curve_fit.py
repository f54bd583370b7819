"""The compute-curve bootstrap at two evaluation caps, side by side in one run.

``stats.curve_analysis`` refits ScaleRL's curve on 200 bootstrap replicates. A fit that
does not converge within ``stats.CURVE_MAX_EVALS`` evaluations counts as failed. This
benchmark runs the analysis on simulated arms (S seeds x T evaluations x Q questions,
each question solved with probability rising linearly from 0.1 to ``top``) once with
that cap and once with a cap of 5000, and prints the seconds of each and the largest
difference between their interval bounds (A, the full run's A, the RMSE on the rest).

Last line:
    curve_fit: <seconds at 5000> s -> <seconds at the cap> s (x<ratio>), largest bound change <d>

Run: python benchmarks/curve_fit.py
"""

from __future__ import annotations

import time

import numpy as np

from recipe_arena.eval import stats

ARMS = ((3, 9, 30, 0.2), (3, 9, 30, 0.7), (3, 20, 100, 0.9), (5, 12, 50, 0.4), (3, 12, 40, 0.3))
"""(seeds, evaluations, questions, final solve probability): flat to steep arms."""


def _arm(rng: np.random.Generator, s: int, t: int, q: int, top: float) -> tuple:
    compute = np.tile(np.linspace(0, 8, t) * 1000, (s, 1))
    p = np.linspace(0.1, top, t)
    return compute, (rng.random((s, t, q)) < p[None, :, None]).astype(np.float64)


def _bounds(res: stats.CurveAnalysis) -> np.ndarray:
    return np.array([[e.lo, e.hi] for e in (res.a, res.full_a, res.rmse_rest)])


def main() -> None:
    rng = np.random.default_rng(1)
    arms = [_arm(rng, *a) for a in ARMS]
    cap = stats.CURVE_MAX_EVALS
    secs: dict[int, float] = {}
    bounds: dict[int, list[np.ndarray]] = {}
    print(f"{'arm (S, T, Q, top)':24} {'cap':>5} {'seconds':>8} {'failed':>7}")
    for max_evals in (5000, cap):
        stats.CURVE_MAX_EVALS = max_evals
        secs[max_evals], bounds[max_evals] = 0.0, []
        for spec, (compute, scores) in zip(ARMS, arms, strict=True):
            t0 = time.perf_counter()
            res = stats.curve_analysis(compute, scores)
            dt = time.perf_counter() - t0
            assert res is not None
            secs[max_evals] += dt
            bounds[max_evals].append(_bounds(res))
            print(f"{spec!s:24} {max_evals:>5} {dt:8.1f} {res.failed_boot:7.3f}")
    stats.CURVE_MAX_EVALS = cap
    change = max(
        float(np.nanmax(np.abs(a - b))) for a, b in zip(bounds[5000], bounds[cap], strict=True)
    )
    print(
        f"curve_fit: {secs[5000]:.1f} s -> {secs[cap]:.1f} s (x{secs[5000] / secs[cap]:.1f}), "
        f"largest bound change {change:.4f}"
    )


if __name__ == "__main__":
    main()
