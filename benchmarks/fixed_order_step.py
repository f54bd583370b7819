"""What a base training step and an actor's decoding cost with every matrix product of
the model computed in a fixed order of addition, against MKL's, side by side in one run;
and whether that step then computes the same bits on other processors.

``fixed_order_product.py`` prices single products. This prices the work a study's runs
do: the micro model's forward, backward and AdamW step on the base stage's 32 x 160
batch, and greedy decoding with the KV cache (64 prompts of 16 tokens, 48 new tokens).
In the fixed arm every product goes through the compiled fixed-order kernel, in the
forward pass and in both products of the backward pass: ``torch.nn.functional.linear``
(the projections, the MLP, the tied LM head) and ``torch.matmul`` on batches (the
attention's scores and weighted values, with the model's attention switched from
``scaled_dot_product_attention``, whose products are MKL's, to transformers' eager
form); and AdamW's square root goes through the kernel's correctly rounded one (torch's
is MKL's vector maths). Other elementwise maths (softmax, SiLU, the norms, the rest of
AdamW) stays torch's own.

Each figure is the median of ``--steps`` repetitions after one warm-up, at ``--threads``
torch threads (default 1, a study run's count); the two arms alternate for ``--rounds``
rounds so that drift in the machine's speed falls on both. Kernels capped at AVX2 as a
study's are (``--isa none`` for no cap). Before timing, one step of each arm on a 4 x 64
batch is compared: the loss and gradients must agree to float32 rounding.

``--digests`` prints, for that 4 x 64 step, the digest of each arm's initial parameters,
logits, loss, gradients and parameters after one AdamW step: run it natively and under
an emulator presenting another processor (``qemu-x86_64 -cpu EPYC-Rome``); the fixed
arm's lines must be equal everywhere, the MKL arm's were measured not to be.

Why: a processor-independent run replaces the products a run spends most of its time
in; this is its price in a run's own work, and the check that products are all it needs.

Last line:
    fixed_order_step: fixed/MKL time = <t> training step, <d> decoding

Run: python benchmarks/fixed_order_step.py [--steps 5] [--rounds 2] [--threads 1] [--digests]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from recipe_arena.cpu_isa import pin

if TYPE_CHECKING:  # torch loads only after the cap is set (main)
    import torch
    from transformers import PreTrainedModel

Mm = Callable[["torch.Tensor", "torch.Tensor"], "torch.Tensor"]


class Products:
    """Switches the model's products between torch's (MKL's) and ``fixed_mm``'s by
    replacing ``torch.nn.functional.linear`` and ``torch.matmul``, which transformers'
    Llama calls through the modules' attributes at each call; and ``Tensor.sqrt``, which
    AdamW's update calls, between torch's (MKL's vector maths) and ``sqrt``'s."""

    def __init__(self, fixed_mm: Mm, sqrt: Callable[[torch.Tensor], torch.Tensor]) -> None:
        import torch
        import torch.nn.functional as F

        self.torch_linear, self.torch_matmul = F.linear, torch.matmul
        self.torch_sqrt = torch.Tensor.sqrt

        def fixed_sqrt(x: torch.Tensor) -> torch.Tensor:
            if x.dtype == torch.float32 and not x.requires_grad:
                return sqrt(x)
            return self.torch_sqrt(x)

        self.fixed_sqrt = fixed_sqrt
        self.calls = 0

        class MatMul(torch.autograd.Function):
            """``a @ b`` of the same batch shape, and its two gradient products."""

            @staticmethod
            def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
                ctx.save_for_backward(a, b)
                return fixed_mm(a, b)

            @staticmethod
            def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                a, b = ctx.saved_tensors
                return fixed_mm(g, b.transpose(-1, -2)), fixed_mm(a.transpose(-1, -2), g)

        transposed: dict[int, tuple[torch.Tensor, int, torch.Tensor]] = {}

        def weight_t(w: torch.Tensor) -> torch.Tensor:
            """``w.t()``, made contiguous once per version of ``w`` (an actor decodes many
            steps between weight updates). An entry holds ``w`` itself, so that its id
            is not reused by another tensor while the entry lives."""
            held = transposed.get(id(w))
            if held is None or held[0] is not w or held[1] != w._version:
                held = (w, w._version, w.detach().t().contiguous())
                transposed[id(w)] = held
            return held[2]

        class Linear(torch.autograd.Function):
            """``x @ w.T + b``; the bias gradient is torch's sum."""

            @staticmethod
            def forward(
                ctx: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None
            ) -> torch.Tensor:
                ctx.save_for_backward(x, w)
                ctx.has_bias = b is not None
                y = fixed_mm(x.reshape(-1, x.shape[-1]), weight_t(w))
                y = y if b is None else y + b
                return y.reshape(*x.shape[:-1], w.shape[0])

            @staticmethod
            def backward(
                ctx: Any, g: torch.Tensor
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
                x, w = ctx.saved_tensors
                x2, g2 = x.reshape(-1, x.shape[-1]), g.reshape(-1, g.shape[-1])
                gx = fixed_mm(g2, w).reshape(x.shape)
                return gx, fixed_mm(g2.t(), x2), g2.sum(0) if ctx.has_bias else None

        def linear(
            x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
        ) -> torch.Tensor:
            self.calls += 1
            out: torch.Tensor = Linear.apply(x, weight, bias)  # type: ignore[no-untyped-call]
            return out

        def matmul(a: torch.Tensor, b: torch.Tensor, **kw: Any) -> torch.Tensor:
            if (
                a.dim() >= 3
                and a.shape[:-2] == b.shape[:-2]
                and a.dtype == b.dtype == torch.float32
                and not kw
            ):
                self.calls += 1
                out: torch.Tensor = MatMul.apply(a, b)  # type: ignore[no-untyped-call]
                return out
            return self.torch_matmul(a, b, **kw)

        self.fixed_linear, self.fixed_matmul = linear, matmul

    @contextmanager
    def through(self, fixed: bool) -> Iterator[None]:
        """Inside, the products go through the fixed-order kernel (True) or torch's
        (False); torch's are restored on leaving, whatever happened."""
        import torch
        import torch.nn.functional as F

        F.linear = self.fixed_linear if fixed else self.torch_linear  # type: ignore[assignment]
        torch.matmul = self.fixed_matmul if fixed else self.torch_matmul  # type: ignore[assignment]
        torch.Tensor.sqrt = self.fixed_sqrt if fixed else self.torch_sqrt  # type: ignore[method-assign]
        try:
            yield
        finally:
            F.linear, torch.matmul = self.torch_linear, self.torch_matmul
            torch.Tensor.sqrt = self.torch_sqrt  # type: ignore[method-assign]


def model(fixed: bool) -> PreTrainedModel:
    """The micro model as the base stage builds it (seed 0); its attention in eager form
    when ``fixed``, so that the attention's products are ``torch.matmul``'s."""
    from recipe_arena.compose import load_config
    from recipe_arena.models.factory import build_micro

    m, _ = build_micro(load_config(["recipe=olmo3_think"]).world.model, seed=0)
    if fixed:
        m.config._attn_implementation = "eager"
    return m


def one_step(products: Products, fixed: bool) -> dict[str, torch.Tensor]:
    """Initial parameters, logits, loss, gradients and parameters after one AdamW step
    (the base stage's settings) of the micro model on a 4 x 64 batch, through one arm."""
    import torch

    from recipe_arena.compose import load_config
    from recipe_arena.config_train import ADAM_BETAS, WEIGHT_DECAY

    with products.through(fixed):
        m = model(fixed)
        params = list(m.parameters())
        ids = torch.randint(
            0, m.config.vocab_size, (4, 64), generator=torch.Generator().manual_seed(1)
        )
        out = {"initial parameters": torch.cat([p.detach().flatten() for p in params])}
        res = m(input_ids=ids, labels=ids)
        out["logits"], out["loss"] = res.logits.detach(), res.loss.detach()
        res.loss.backward()
        out["gradients"] = torch.cat([p.grad.flatten() for p in params if p.grad is not None])
        lr = load_config(["recipe=olmo3_think"]).base.lr
        torch.optim.AdamW(params, lr=lr, betas=ADAM_BETAS, weight_decay=WEIGHT_DECAY).step()
        out["after one AdamW step"] = torch.cat([p.detach().flatten() for p in params])
    return out


def work(products: Products, fixed: bool, steps: int) -> tuple[float, float]:
    """(median seconds per training step, per decoding batch) of the micro model through
    one arm (``alternate.step_and_decode``)."""
    from alternate import step_and_decode  # type: ignore[import-not-found]

    with products.through(fixed):
        return step_and_decode(model(fixed), steps)  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--isa", default="avx2", choices=["avx2", "none"], help="the cap")
    ap.add_argument("--digests", action="store_true", help="only the 4 x 64 step's digests")
    a = ap.parse_args()
    if a.isa != "none":
        pin(a.isa)  # before torch loads
    import torch
    from alternate import alternate  # type: ignore[import-not-found]
    from fixed_order_product import compiled_module  # type: ignore[import-not-found]
    from isa_fingerprint import digest  # type: ignore[import-not-found]

    torch.set_num_threads(a.threads)
    kernels = compiled_module()
    products = Products(kernels.fixed_mm, kernels.ieee_sqrt)
    ref, fixed = one_step(products, False), one_step(products, True)
    if a.digests:
        for name in ref:
            print(f"{name}: MKL {digest(ref[name])}, fixed {digest(fixed[name])}", flush=True)
        return
    g_ref, g_fixed = ref["gradients"], fixed["gradients"]
    err = float((g_fixed - g_ref).abs().max() / g_ref.abs().max())
    loss_err = abs(float(fixed["loss"] - ref["loss"]))
    if products.calls == 0 or err > 1e-3 or loss_err > 1e-4:
        raise SystemExit(
            f"the fixed arm is not the model: {products.calls} calls, gradient error {err:.1e}"
        )
    print(
        f"check: {products.calls} fixed-order calls, loss {float(fixed['loss']):.6f} against "
        f"{float(ref['loss']):.6f}, largest gradient difference {err:.1e} of the largest",
        flush=True,
    )
    med = alternate(
        ("MKL", "fixed"), a.rounds, lambda arm: (*work(products, arm == "fixed", a.steps), "")
    )
    print(
        f"fixed_order_step: fixed/MKL time = {med['fixed'][0] / med['MKL'][0]:.2f} training step, "
        f"{med['fixed'][1] / med['MKL'][1]:.2f} decoding ({a.threads} thread(s))"
    )


if __name__ == "__main__":
    main()
