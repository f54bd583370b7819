"""The pieces of a captured CUDA decode graph (``SlotKVRunner.decode_graphed``): the
batch and attended-length buckets a graph serves, the sampling it runs on the device,
and the buffers one captured graph reads and writes. On the CPU the same computation
runs eagerly, so the tests check it there."""

from __future__ import annotations

from typing import Any

import torch

GRAPH_MIN_BATCH = 8
"""Smallest batch bucket of a captured decode graph (buckets double up to the slots)."""
GRAPH_T_QUANTUM = 128
"""Attended-length buckets of captured decode graphs: multiples of this, and at least
a quarter of the next power of two above the length (four buckets per doubling), so a
step reads at most ~25% more cached positions than it needs for a few graphs per run."""


def batch_bucket(n: int, max_slots: int) -> int:
    """The captured batch size that serves ``n`` rows: the next power of two from
    GRAPH_MIN_BATCH, capped at ``max_slots``."""
    b = GRAPH_MIN_BATCH
    while b < n:
        b *= 2
    return min(b, max_slots)


def length_bucket(t: int, capacity: int) -> int:
    """The attended length a captured graph uses for a step that needs ``t`` positions:
    ``t`` rounded up to a multiple of max(GRAPH_T_QUANTUM, next_pow2(t) / 4), capped
    at ``capacity``."""
    quantum = max(GRAPH_T_QUANTUM, (1 << max(t - 1, 1).bit_length()) // 4)
    return min(capacity, -(-t // quantum) * quantum)


def sample_rows(
    logits_BV: torch.Tensor, temps_B: torch.Tensor, greedy_B: torch.Tensor, u_B: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``engines.common.sample_tokens`` for rows without a top-p nucleus, on the device
    and without a host synchronisation (capturable): the same operations in the same
    order, so the same logits give the same tokens and logprobs. ``temps_B`` holds 1.0
    on greedy rows (``greedy_B`` true), ``u_B`` the rows' uniforms in [0, 1)."""
    scaled_BV = logits_BV.float() / temps_B[:, None]
    lse_B = torch.logsumexp(scaled_BV, dim=-1)
    cdf_BV = (scaled_BV - lse_B[:, None]).exp_().cumsum_(dim=-1)
    u_B = u_B.clamp(max=1 - 2**-23)
    drawn_B = torch.searchsorted(cdf_BV, (u_B * cdf_BV[:, -1])[:, None], right=True)[:, 0]
    drawn_B = drawn_B.clamp(max=cdf_BV.shape[-1] - 1)
    tokens_B = torch.where(greedy_B, scaled_BV.argmax(dim=-1), drawn_B)
    lp_B = scaled_BV.gather(-1, tokens_B[:, None])[:, 0] - lse_B
    return tokens_B, lp_B


class DecodeGraph:
    """One captured run of ``steps`` decode steps for ``batch`` rows attending ``length``
    positions: ``inputs`` (4 + steps, batch) float32 holds tokens, positions,
    temperatures, greedy flags (1.0/0.0) and each step's uniforms; ``outputs``
    (2 x steps, batch) float32 the sampled tokens, then their logprobs (token ids are
    exact in float32 below 2**24)."""

    def __init__(self, batch: int, length: int, steps: int, device: torch.device) -> None:
        self.batch, self.length, self.steps = batch, length, steps
        self.inputs = torch.zeros((4 + steps, batch), dtype=torch.float32, device=device)
        self.outputs = torch.zeros((2 * steps, batch), dtype=torch.float32, device=device)
        self.staged = torch.zeros((4 + steps, batch), dtype=torch.float32)
        if device.type == "cuda":
            self.staged = self.staged.pin_memory()
        self.graph: Any = None
