"""Hashes of a few kernels and of one training step of the micro model under the study's
CPU cap, to find where two machine types stop computing the same bits.

    python benchmarks/isa_fingerprint.py [--batch 32x160] [--threads N] [--isa avx2]
    qemu-x86_64 -cpu Haswell .venv/bin/python benchmarks/isa_fingerprint.py   # an AVX2 machine, emulated
    MKL_CBWR=AVX2,STRICT python benchmarks/isa_fingerprint.py             # MKL's reproducible mode
    python benchmarks/isa_fingerprint.py --elementwise --threads 1        # ELEMENTWISE only

Prints one line per result: its name and the first 12 hex digits of the SHA-256 of its
float32 bytes. The results, in the order a training run meets them: a matrix product,
a linear layer, bfloat16 matmul, softmax and exp on fixed random inputs; then the micro
model (``world.model`` of the default recipe) from a fixed initialisation (``build_micro``'s
seed 0): its logits and loss on a batch of random token ids (``--batch`` rows x tokens,
torch generator seed 1), the gradients of its first layers and of all parameters, and
the parameters after one AdamW step at the base stage's settings; last, a few of that
step's matrix products alone (``PRODUCTS``). The defaults are those of the base model's
build, where machines were measured to part: the base stage's 32 x 160 batch, and
torch's own thread count (the cores), because a study builds the base model with its own
process's threads (``study.build_base``), not its runs' one; MKL splits a product with a
long inner dimension between threads, so the count changes the bits.

Why: a study made on one machine type is reproduced bit for bit on another only where
every kernel gives the same bits (``cpu_isa``). Run on both machine types, the first
line that differs names the kernel or the stage that does not; run on one machine and
under an emulator that presents another processor (QEMU's user mode, ``-cpu Haswell``
for one whose widest set is AVX2), it asks the same of a processor one does not have, as
far as the emulator presents it: MKL chose as on the Xeon under QEMU's Haswell, not as on
the Intel AVX2 machine the committed studies were made on. Under emulation the 4 x 64
batch takes minutes; the base stage's 32 x 160 did not finish in an hour, so pass
``--batch 4x64`` there: ``PRODUCTS`` are the same at any batch.
"""

from __future__ import annotations

import argparse
import hashlib

from recipe_arena.cpu_isa import pin

PRODUCTS = [(128, 128, 5120), (384, 128, 5120), (5120, 128, 384), (64, 64, 5120), (128, 128, 256)]
"""(m, n, k) of products a base training step makes (MKL_VERBOSE): a weight's gradient
sums over the batch's 32 x 160 = 5,120 tokens. On the Intel Xeon with AMX, MKL gave
these other bits under an emulated AMD processor than under an emulated Intel one, and
some of them other bits at two threads than at one (docs/results.md, "On another
processor")."""


def digest(t: object) -> str:
    """First 12 hex digits of the SHA-256 of ``t``'s values as contiguous float32."""
    import torch

    assert isinstance(t, torch.Tensor)
    return hashlib.sha256(t.detach().float().contiguous().numpy().tobytes()).hexdigest()[:12]


def fingerprint(rows: int, tokens: int, threads: int | None = None) -> dict[str, str]:
    """Name -> digest of each result above, in order, for a batch of ``rows`` x
    ``tokens`` token ids, on ``threads`` torch threads (None: torch's default). Torch
    must have been imported after the cap was set."""
    import torch

    from recipe_arena.compose import load_config
    from recipe_arena.config_train import ADAM_BETAS, WEIGHT_DECAY
    from recipe_arena.models.factory import build_micro

    if threads is not None:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    a, b, x = torch.randn(96, 192), torch.randn(192, 576), torch.randn(33, 192)
    lin = torch.nn.Linear(192, 576)
    out = {
        "matmul": a @ b,
        "linear": lin(x),
        "matmul_bf16": a.bfloat16() @ b.bfloat16(),
        "softmax": torch.softmax(a, -1),
        "exp": torch.exp(a),
    }
    cfg = load_config(["recipe=olmo3_think"])
    model, _ = build_micro(cfg.world.model, seed=0)
    params = list(model.parameters())
    out["init"] = torch.cat([p.flatten() for p in params])
    ids = torch.randint(
        0, model.config.vocab_size, (rows, tokens), generator=torch.Generator().manual_seed(1)
    )
    res = model(input_ids=ids, labels=ids)
    out["logits"], out["loss"] = res.logits, res.loss
    res.loss.backward()
    for name, p in list(model.named_parameters())[:6]:
        out[f"grad {name}"] = p.grad
    out["grads"] = torch.cat([p.grad.flatten() for p in params])
    opt = torch.optim.AdamW(params, lr=cfg.base.lr, betas=ADAM_BETAS, weight_decay=WEIGHT_DECAY)
    opt.step()
    out["after one AdamW step"] = torch.cat([p.flatten() for p in params])
    gen = torch.Generator().manual_seed(2)
    for m, n, k in PRODUCTS:
        x_MK, w_KN = torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)
        out[f"matmul {m}x{k} @ {k}x{n}"] = x_MK @ w_KN
    return {k: digest(v) for k, v in out.items()}


ELEMENTWISE = [
    "sqrt",
    "rsqrt",
    "exp",
    "log",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "reciprocal",
    "div",
    "silu",
    "softmax",
    "adamw",
]
"""Elementwise functions a run's step calls, for ``--elementwise``: which of them parts
processors is what a processor-independent run would have to compute itself (torch
computes some with MKL's vector maths, some with its own vectorised code)."""


def elementwise(threads: int | None = None) -> dict[str, str]:
    """Name -> digest of each of ``ELEMENTWISE`` on 100,003 fixed float32 values (positive
    ones where the function needs them), and of two AdamW steps of one tensor."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    x, pos = torch.randn(100_003, generator=gen), torch.rand(100_003, generator=gen) + 0.1
    out = {
        "sqrt": pos.sqrt(),
        "rsqrt": pos.rsqrt(),
        "exp": x.exp(),
        "log": pos.log(),
        "sin": x.sin(),
        "cos": x.cos(),
        "tanh": x.tanh(),
        "sigmoid": x.sigmoid(),
        "reciprocal": pos.reciprocal(),
        "div": x / pos,
        "silu": torch.nn.functional.silu(x),
        "softmax": torch.softmax(x[:100_000].view(-1, 100), -1),
    }
    p = torch.nn.Parameter(x.clone())
    opt = torch.optim.AdamW([p], lr=1e-3)
    for grad in (pos - 0.5, x * 0.1):
        p.grad = grad
        opt.step()
    out["adamw"] = p.detach()
    assert list(out) == ELEMENTWISE
    return {k: digest(v) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", default="32x160", help="rows x tokens of the training step")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--isa", default="avx2", choices=["avx2", "none"], help="the cap")
    ap.add_argument("--elementwise", action="store_true", help="elementwise functions only")
    a = ap.parse_args()
    if a.isa != "none":
        pin(a.isa)  # before torch loads
    rows, tokens = (int(v) for v in a.batch.split("x"))
    digests = elementwise(a.threads) if a.elementwise else fingerprint(rows, tokens, a.threads)
    for name, value in digests.items():
        print(f"{name:48s} {value}", flush=True)
    import torch

    print(f"{'kernels in use':48s} {torch.backends.cpu.get_cpu_capability()}")
    print(f"{'torch threads':48s} {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
