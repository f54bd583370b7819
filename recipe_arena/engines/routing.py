"""Recording a mixture-of-experts model's routing in the torch engine, for routing replay
in the trainer (``staleness.deepseek_mask``).

Forward hooks on every MoE router keep the top-k expert ids each forward sends its
tokens to, in layer order; only forwards run by the engine's own decode thread are
recorded (a teacher's ``score`` call from another thread is not). After each prefill or
decode step the engine takes the ids, (tokens, N layers, K), and appends each row to
the sample it belongs to.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from recipe_arena.models.moe import moe_routers

if TYPE_CHECKING:
    from recipe_arena.engines.slot_samples import SlotSample


class RoutingRecorder:
    def __init__(self, model: Any, thread: threading.Thread) -> None:
        self._thread = thread
        self._taken: list[torch.Tensor] = []
        self._handles = [r.register_forward_hook(self._keep) for r in moe_routers(model)]

    def _keep(self, module: Any, args: Any, output: tuple[torch.Tensor, ...]) -> None:
        if threading.current_thread() is self._thread:
            self._taken.append(output[2].detach().to("cpu", torch.int64))

    def take(self) -> torch.Tensor:
        """The ids recorded since the last take: (tokens, N, K)."""
        ids = torch.stack(self._taken, dim=1)
        self._taken = []
        return ids

    def hand_out(self, running: list[SlotSample], chunk: list[list[SlotSample]]) -> None:
        """Hand the experts the last forward routed each position to, (M, N, K) for its
        flat M = B + prompts x P tokens (``SlotKVRunner._forward``), to the samples:
        decode row b to running sample b, prompt n's real positions (not its right
        padding) to every sample of group n."""
        ids = self.take()
        for b, s in enumerate(running):
            s.expert_ids.append(ids[b : b + 1])
        P = max((len(g[0].request.prompt_tokens) for g in chunk), default=0)
        for n, group in enumerate(chunk):
            lo = len(running) + n * P
            prompt_ids = ids[lo : lo + len(group[0].request.prompt_tokens)]
            for s in group:
                s.expert_ids = [prompt_ids]

    def hand_prefixes(self, samples: list[SlotSample], prefixes: Sequence[Sequence[int]]) -> None:
        """After a prefill that recomputed ``samples``' cached ``prefixes`` (right-padded
        to the longest, P), each sample's routing becomes its prefix's rows."""
        ids = self.take()
        P = max(len(q) for q in prefixes)
        for j, (s, q) in enumerate(zip(samples, prefixes, strict=True)):
            s.expert_ids = [ids[j * P : j * P + len(q)]]


def record_routing(model: Any, thread: threading.Thread) -> RoutingRecorder | None:
    """A recorder on ``model``'s routers, or None for a dense model."""
    return RoutingRecorder(model, thread) if moe_routers(model) else None
