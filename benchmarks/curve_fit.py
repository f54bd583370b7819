"""The compute-curve bootstrap with finite differences and with the curve's closed-form
derivatives, side by side in one run.

``curve_fit.curve_analysis`` refits ScaleRL's curve on 200 bootstrap replicates, each fit
at most ``curve_fit.CURVE_MAX_EVALS`` evaluations. This benchmark runs the analysis on
simulated arms (S seeds x T evaluations x Q questions, each question solved with
probability rising linearly from 0.1 to ``top``) once with the Jacobian estimated by
finite differences (``curve_fit.CURVE_JACOBIAN = False``, scipy's default) and once in
closed form (the default), and prints the seconds of each and the largest difference
between their interval bounds (A, the full run's A, the RMSE on the rest).

Last line:
    curve_fit: <seconds, finite differences> s -> <seconds, closed form> s (x<ratio>), largest bound change <d>

Run: python benchmarks/curve_fit.py
"""

from __future__ import annotations

import time

import numpy as np

from recipe_arena.eval import curve_fit

ARMS = ((3, 9, 30, 0.2), (3, 9, 30, 0.7), (3, 20, 100, 0.9), (5, 12, 50, 0.4), (3, 12, 40, 0.3))
"""(seeds, evaluations, questions, final solve probability): flat to steep arms."""


def _arm(rng: np.random.Generator, s: int, t: int, q: int, top: float) -> tuple:
    compute = np.tile(np.linspace(0, 8, t) * 1000, (s, 1))
    p = np.linspace(0.1, top, t)
    return compute, (rng.random((s, t, q)) < p[None, :, None]).astype(np.float64)


def _bounds(res: curve_fit.CurveAnalysis) -> np.ndarray:
    return np.array([[e.lo, e.hi] for e in (res.a, res.full_a, res.rmse_rest)])


def main() -> None:
    rng = np.random.default_rng(1)
    arms = [_arm(rng, *a) for a in ARMS]
    secs: dict[str, float] = {}
    bounds: dict[str, list[np.ndarray]] = {}
    print(f"{'arm (S, T, Q, top)':24} {'Jacobian':>12} {'seconds':>8} {'failed':>7}")
    for name, closed_form in (("differences", False), ("closed form", True)):
        curve_fit.CURVE_JACOBIAN = closed_form
        secs[name], bounds[name] = 0.0, []
        for spec, (compute, scores) in zip(ARMS, arms, strict=True):
            t0 = time.perf_counter()
            res = curve_fit.curve_analysis(compute, scores)
            dt = time.perf_counter() - t0
            assert res is not None
            secs[name] += dt
            bounds[name].append(_bounds(res))
            print(f"{spec!s:24} {name:>12} {dt:8.1f} {res.failed_boot:7.3f}")
    before, after = bounds["differences"], bounds["closed form"]
    change = max(float(np.nanmax(np.abs(a - b))) for a, b in zip(before, after, strict=True))
    ratio = secs["differences"] / secs["closed form"]
    print(
        f"curve_fit: {secs['differences']:.1f} s -> {secs['closed form']:.1f} s "
        f"(x{ratio:.1f}), largest bound change {change:.4f}"
    )


if __name__ == "__main__":
    main()
