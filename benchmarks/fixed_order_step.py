"""What a base training step and an actor's decoding cost with every linear layer's
products computed in a fixed order of addition, against MKL's, side by side in one run.

``fixed_order_product.py`` prices single products. This prices the work a study's runs
do: the micro model's forward, backward and AdamW step on the base stage's 32 x 160
batch, and greedy decoding with the KV cache (64 prompts of 16 tokens, 48 new tokens),
with ``torch.nn.functional.linear`` routed through the compiled fixed-order kernel in
the forward pass and in both products of the backward pass (input and weight
gradients). What stays on MKL or ATen: attention's products inside
``scaled_dot_product_attention``, and elementwise maths such as ``exp``; so this is
the cost of the products' part of a processor-independent design, not all of it.

Each figure is the median of ``--steps`` repetitions after one warm-up, at ``--threads``
torch threads (default 1, a study run's count); the two modes alternate for
``--rounds`` rounds so that drift in the machine's speed falls on both. Kernels capped
at AVX2 as a study's are (``--isa none`` for no cap).

Why: the processor-independent design replaces the products a run spends most of its
time in; this is its price in a run's own work.

Last line:
    fixed_order_step: fixed/MKL time = <t> training step, <d> decoding

Run: python benchmarks/fixed_order_step.py [--steps 5] [--rounds 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from recipe_arena.cpu_isa import pin

if TYPE_CHECKING:  # torch loads only after the cap is set (main)
    import torch

Mm = Callable[["torch.Tensor", "torch.Tensor"], "torch.Tensor"]


def fixed_linear(fixed_mm: Mm) -> Callable[..., torch.Tensor]:
    """A drop-in ``F.linear(x, weight, bias)`` whose three products (forward, input
    gradient, weight gradient) are ``fixed_mm``'s; the bias gradient is torch's sum."""
    import torch

    transposed: dict[int, tuple[torch.Tensor, int, torch.Tensor]] = {}

    def weight_t(w: torch.Tensor) -> torch.Tensor:
        """``w.t().contiguous()``, made once per version of ``w`` (an actor decodes many
        steps between weight updates). Each entry holds ``w`` itself, so that its id is
        not reused by another tensor while the entry lives."""
        held = transposed.get(id(w))
        if held is None or held[0] is not w or held[1] != w._version:
            held = (w, w._version, w.detach().t().contiguous())
            transposed[id(w)] = held
        return held[2]

    class Linear(torch.autograd.Function):
        @staticmethod
        def forward(
            ctx: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None
        ) -> torch.Tensor:
            ctx.save_for_backward(x, w)
            ctx.has_bias = b is not None
            x2 = x.reshape(-1, x.shape[-1])
            y = fixed_mm(x2.contiguous(), weight_t(w))
            if b is not None:
                y = y + b
            return y.reshape(*x.shape[:-1], w.shape[0])

        @staticmethod
        def backward(
            ctx: Any, g: torch.Tensor
        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
            x, w = ctx.saved_tensors
            x2, g2 = x.reshape(-1, x.shape[-1]), g.reshape(-1, g.shape[-1])
            gx = fixed_mm(g2.contiguous(), w.contiguous()).reshape(x.shape)
            gw = fixed_mm(g2.t().contiguous(), x2.contiguous())
            return gx, gw, g2.sum(0) if ctx.has_bias else None

    def linear(
        x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        out: torch.Tensor = Linear.apply(x, weight, bias)  # type: ignore[no-untyped-call]
        return out

    return linear


def gradients() -> tuple[torch.Tensor, torch.Tensor]:
    """The loss and all parameter gradients, flattened, of one base training step of the
    micro model (seed 0) on a 4 x 64 batch, through whatever ``F.linear`` is then."""
    import torch

    from recipe_arena.compose import load_config
    from recipe_arena.models.factory import build_micro

    model, _ = build_micro(load_config(["recipe=olmo3_think"]).world.model, seed=0)
    ids = torch.randint(
        0, model.config.vocab_size, (4, 64), generator=torch.Generator().manual_seed(1)
    )
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    return loss.detach(), torch.cat(
        [p.grad.flatten() for p in model.parameters() if p.grad is not None]
    )


def work(steps: int) -> tuple[float, float]:
    """(median seconds per training step, per decoding batch) of the micro model as the
    base stage builds it, whatever ``F.linear`` is at the time of the call."""
    import torch

    from recipe_arena.compose import load_config
    from recipe_arena.models.factory import build_micro

    model, _ = build_micro(load_config(["recipe=olmo3_think"]).world.model, seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(
        0, model.config.vocab_size, (32, 160), generator=torch.Generator().manual_seed(1)
    )
    train, decode = [], []
    for _ in range(steps + 1):
        t = time.perf_counter()
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
        train.append(time.perf_counter() - t)
    prompts = ids[:, :16].repeat(2, 1)
    with torch.no_grad():
        for _ in range(steps + 1):
            t = time.perf_counter()
            model.generate(
                prompts, max_new_tokens=48, min_new_tokens=48, do_sample=False, pad_token_id=0
            )
            decode.append(time.perf_counter() - t)
    return statistics.median(train[1:]), statistics.median(decode[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--isa", default="avx2", choices=["avx2", "none"], help="the cap")
    a = ap.parse_args()
    if a.isa != "none":
        pin(a.isa)  # before torch loads
    import torch
    import torch.nn.functional as F
    from fixed_order_product import compiled_kernel  # type: ignore[import-not-found]

    torch.set_num_threads(a.threads)
    calls = [0]
    fixed = fixed_linear(compiled_kernel())

    def ours(*args: Any) -> torch.Tensor:
        calls[0] += 1
        return fixed(*args)

    mkl_linear = F.linear
    loss_mkl, grads_mkl = gradients()
    F.linear = ours  # type: ignore[assignment]
    loss_fixed, grads_fixed = gradients()
    F.linear = mkl_linear
    err = float((grads_fixed - grads_mkl).abs().max() / grads_mkl.abs().max())
    if calls[0] == 0 or err > 1e-3 or abs(float(loss_fixed - loss_mkl)) > 1e-4:
        raise SystemExit(
            f"the fixed-order linear is not the model's: {calls[0]} calls, gradient error {err:.1e}"
        )
    print(
        f"check: {calls[0]} linear calls, loss {float(loss_fixed):.6f} against {float(loss_mkl):.6f}, "
        f"largest gradient difference {err:.1e} of the largest gradient",
        flush=True,
    )
    got: dict[str, list[tuple[float, float]]] = {"MKL": [], "fixed": []}
    for r in range(a.rounds):
        for name in ("MKL", "fixed") if r % 2 == 0 else ("fixed", "MKL"):
            F.linear = ours if name == "fixed" else mkl_linear  # type: ignore[assignment]
            got[name].append(work(a.steps))
            print(
                f"round {r} {name:5}: training step {got[name][-1][0]:.3f} s, decoding {got[name][-1][1]:.3f} s",
                flush=True,
            )
    F.linear = mkl_linear
    med = {
        n: (statistics.median(t for t, _ in v), statistics.median(d for _, d in v))
        for n, v in got.items()
    }
    print(
        f"fixed_order_step: fixed/MKL time = {med['fixed'][0] / med['MKL'][0]:.2f} training step, "
        f"{med['fixed'][1] / med['MKL'][1]:.2f} decoding ({a.threads} thread(s))"
    )


if __name__ == "__main__":
    main()
