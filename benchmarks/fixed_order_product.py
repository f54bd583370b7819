"""What a matrix product with a fixed order of addition would cost against MKL's, on the
products of a base training step, side by side in one run.

MKL picks its kernel, its blocking and its thread split by the processor it detects, so
its products give other bits on other processors at one instruction set (docs/results.md,
"On another processor"). A product computed from torch's elementwise multiply and sum
adds in an order fixed by the shapes and the vector width alone: each chunk of the inner
dimension is multiplied out and summed by torch's reduction, and the chunks are added in
order. Why: this measures the price of the one design found that would make a study's
bits independent of the processor, before anyone builds it.

For each (m, k, n) of ``isa_fingerprint.PRODUCTS`` it prints MKL's time and the fixed
order's (the mean of ``--repeats``, at torch's default thread count), their ratio, the
largest difference between the two results, and whether the fixed order gave the same
bits at one thread as at the default (it must: each output is summed by one thread).

Last line:
    fixed_order_product: fixed/MKL time = <min>-<max> (median <q>), thread-independent <yes|no>

Run: python benchmarks/fixed_order_product.py [--repeats 3] [--isa avx2|none]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import TYPE_CHECKING

from recipe_arena.cpu_isa import pin

if TYPE_CHECKING:  # torch loads only after the cap is set (main)
    import torch

CHUNK_ELEMENTS = 2**22
"""Elements of one chunk's (m, chunk, n) intermediate, 16 MiB of float32: small enough to
stay in the machine's caches' reach, large enough that a chunk is not Python-bound."""


def fixed_order(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for float32 ``a`` (m, k) and ``b`` (k, n), added in a fixed order: chunks
    of the inner dimension in order, each multiplied out and summed by torch's reduction."""
    import torch

    m, k = a.shape
    n = b.shape[1]
    chunk = max(1, min(k, CHUNK_ELEMENTS // (m * n)))
    out = torch.zeros(m, n)
    for s in range(0, k, chunk):
        out += (a[:, s : s + chunk, None] * b[None, s : s + chunk, :]).sum(1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--isa", default="avx2", choices=["avx2", "none"], help="the cap")
    a = ap.parse_args()
    if a.isa != "none":
        pin(a.isa)  # before torch loads
    import torch
    from isa_fingerprint import PRODUCTS, digest  # type: ignore[import-not-found]

    default_threads = torch.get_num_threads()
    gen = torch.Generator().manual_seed(0)
    ratios, same = [], True
    for m, n, k in PRODUCTS:
        x, w = torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)
        t = time.perf_counter()
        for _ in range(a.repeats):
            mkl = x @ w
        t_mkl = (time.perf_counter() - t) / a.repeats
        t = time.perf_counter()
        for _ in range(a.repeats):
            fixed = fixed_order(x, w)
        t_fixed = (time.perf_counter() - t) / a.repeats
        torch.set_num_threads(1)
        agree = digest(fixed_order(x, w)) == digest(fixed)
        torch.set_num_threads(default_threads)
        same = same and agree
        ratios.append(t_fixed / t_mkl)
        diff = float((mkl - fixed).abs().max())
        print(
            f"{m}x{k} @ {k}x{n}: MKL {t_mkl * 1e3:7.1f} ms, fixed order {t_fixed * 1e3:7.1f} ms, "
            f"ratio {ratios[-1]:5.1f}, largest difference {diff:.1e}, "
            f"one thread {'same' if agree else 'other'} bits",
            flush=True,
        )
    print(
        f"fixed_order_product: fixed/MKL time = {min(ratios):.0f}-{max(ratios):.0f} "
        f"(median {statistics.median(ratios):.0f}), thread-independent "
        f"{'yes' if same else 'no'} ({default_threads} threads against 1)"
    )


if __name__ == "__main__":
    main()
