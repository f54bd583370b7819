"""What a matrix product with a fixed order of addition would cost against MKL's, on the
products of a base training step, side by side in one run.

MKL picks its kernel, its blocking and its thread split by the processor it detects, so
its products give other bits on other processors at one instruction set (docs/results.md,
"On another processor"). A product computed from torch's elementwise multiply and sum
adds in an order fixed by the shapes and the vector width alone: each chunk of the inner
dimension is multiplied out and summed by torch's reduction, and the chunks are added in
order. A compiled kernel (``fixed_order_kernel.cpp``, built by torch's extension loader
with the system's C++ compiler) adds each output's terms in k order, one fused
multiply-add each, in AVX2 and FMA instructions only, so every x86-64 processor with
those sets computes the same bits. Why: this measures the price of the one design found
that would make a study's bits independent of the processor, before anyone builds it.

For each (m, k, n) of ``isa_fingerprint.PRODUCTS`` it prints MKL's time and each fixed
order's (the mean of ``--repeats``, at ``--threads``, default torch's), their ratios to
MKL's, the largest difference from MKL's result, and whether each fixed order gave the
same bits at another thread count (it must: each output is summed by one thread).

Last line:
    fixed_order_product: elementwise/MKL time = <min>-<max> (median <q>), compiled/MKL
    time = <min>-<max> (median <q>), thread-independent <yes|no>

``--digests`` prints only the compiled kernel's result digest for each shape: run it
natively and under an emulator presenting another processor (``qemu-x86_64 -cpu
EPYC-Rome``), and the lines must be equal.

Run: python benchmarks/fixed_order_product.py [--repeats 3] [--threads N] [--isa avx2|none]
     [--digests]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


def compiled_module() -> Any:
    """``fixed_order_kernel.cpp`` as a module (``fixed_mm``, ``ieee_sqrt``), compiled on
    first use (about a minute) and cached by torch in ``~/.cache/torch_extensions``.
    Flags: -O3 without fast-math, which would let the compiler reorder the sums;
    -mavx2 -mfma rather than -march=native, which would make the instructions depend on
    the building processor; -fopenmp, without which ``at::parallel_for`` runs on one
    thread (the runtime used is torch's, loaded first under the same name)."""
    from torch.utils.cpp_extension import load

    source = Path(__file__).with_name("fixed_order_kernel.cpp")
    flags = ["-O3", "-mavx2", "-mfma", "-fopenmp"]
    return load("fixed_order_kernel", [str(source)], extra_cflags=flags)


def timed(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    w: torch.Tensor,
    repeats: int,
) -> tuple[torch.Tensor, float]:
    """``fn(x, w)`` and its mean time in seconds over ``repeats`` calls."""
    t = time.perf_counter()
    for _ in range(repeats):
        out = fn(x, w)
    return out, (time.perf_counter() - t) / repeats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--isa", default="avx2", choices=["avx2", "none"], help="the cap")
    ap.add_argument("--threads", type=int, help="torch threads (default: torch's, the cores)")
    ap.add_argument("--digests", action="store_true", help="only the compiled kernel's digests")
    a = ap.parse_args()
    if a.isa != "none":
        pin(a.isa)  # before torch loads
    import torch
    from isa_fingerprint import PRODUCTS, digest  # type: ignore[import-not-found]

    fixed_mm = compiled_module().fixed_mm
    if a.threads:
        torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(0)
    inputs = [
        (torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)) for m, n, k in PRODUCTS
    ]
    if a.digests:
        for (m, n, k), (x, w) in zip(PRODUCTS, inputs, strict=True):
            print(f"{m}x{k} @ {k}x{n}: compiled {digest(fixed_mm(x, w))}", flush=True)
        return
    threads = torch.get_num_threads()
    other = 1 if threads > 1 else 2  # the thread count each fixed order is checked against
    ratios: dict[str, list[float]] = {"elementwise": [], "compiled": []}
    same = True
    for (m, n, k), (x, w) in zip(PRODUCTS, inputs, strict=True):
        mkl, t_mkl = timed(torch.mm, x, w, a.repeats)
        # The float32 rounding bound of any order of addition: gamma_k |x| |w| (Higham, 3.5).
        u = 2.0**-24
        bound = k * u / (1 - k * u) * (x.double().abs() @ w.double().abs())
        exact = x.double() @ w.double()
        line = f"{m}x{k} @ {k}x{n}: MKL {t_mkl * 1e3:7.1f} ms"
        for name, fn in (("elementwise", fixed_order), ("compiled", fixed_mm)):
            fixed, t_fixed = timed(fn, x, w, a.repeats)
            torch.set_num_threads(other)
            agree = digest(fn(x, w)) == digest(fixed)
            torch.set_num_threads(threads)
            same = same and agree
            if not bool(((fixed.double() - exact).abs() <= bound).all()):
                raise SystemExit(f"{name}: {m}x{k} @ {k}x{n} is not the product within rounding")
            ratios[name].append(t_fixed / t_mkl)
            diff = float((mkl - fixed).abs().max())
            line += (
                f"; {name} {t_fixed * 1e3:7.1f} ms, ratio {ratios[name][-1]:5.2f}, largest "
                f"difference {diff:.1e}, at {other} thread(s) {'same' if agree else 'other'} bits"
            )
        print(line, flush=True)
    summary = ", ".join(
        f"{name}/MKL time = {min(r):.1f}-{max(r):.1f} (median {statistics.median(r):.1f})"
        for name, r in ratios.items()
    )
    print(
        f"fixed_order_product: {summary}, thread-independent "
        f"{'yes' if same else 'no'} ({threads} thread(s) against {other})"
    )


if __name__ == "__main__":
    main()
