"""MoE routing replay in the trainer's forward (DeepSeek-AI 2026, "DeepSeek-V4.1-Flash",
arXiv:2609.19969; DeepSeek-V3.2's "keep routing"): the experts each token was routed to
when the engine sampled it are recorded (``engines.routing``) and replayed here, with
gate weights recomputed from the live router scores, so the router still learns:

    e_t = experts the engine chose for token t,   g_t,e = softmax(W_router h_t)_e / sum_{e' in e_t} softmax(W_router h_t)_e'

Without replay a weight update (or a numerical difference between the two sides) can
send a token to other experts in the trainer than in the engine, and its log-probability
then differs for a reason that has nothing to do with the policy's change.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from recipe_arena.models.moe import moe_routers


@contextmanager
def replay_routing(model: nn.Module, expert_ids_BLNK: torch.Tensor | None) -> Iterator[None]:
    """Within the block, every forward of ``model`` over a (B, L) batch routes token
    (b, l) at MoE layer n to ``expert_ids_BLNK[b, l, n]`` where those ids are >= 0 (the
    engine's choice) and to the live top-k elsewhere (padding, positions never fed to
    the engine). ``None`` or a dense model: no change."""
    routers = moe_routers(model)
    if expert_ids_BLNK is None or not routers:
        yield
        return
    if expert_ids_BLNK.shape[2] != len(routers):
        raise ValueError(
            f"routing replay: ids for {expert_ids_BLNK.shape[2]} MoE layers, model has {len(routers)}"
        )
    handles = [
        router.register_forward_hook(_replay_hook(expert_ids_BLNK[:, :, n]))
        for n, router in enumerate(routers)
    ]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _replay_hook(ids_BLK: torch.Tensor) -> Any:
    flat_ids = ids_BLK.reshape(-1, ids_BLK.shape[-1]).long()

    def hook(
        module: nn.Module, args: Any, output: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        logits, weights, live = output
        if live.shape != flat_ids.shape:
            raise ValueError(
                f"routing replay: router saw {tuple(live.shape)} token slots, ids give {tuple(flat_ids.shape)}"
            )
        ids = torch.where(flat_ids >= 0, flat_ids.to(live.device), live)
        probs = torch.softmax(logits.float(), dim=-1)
        gate = probs.gather(-1, ids)
        gate = gate / gate.sum(-1, keepdim=True)
        return logits, gate.to(weights.dtype), ids

    return hook
