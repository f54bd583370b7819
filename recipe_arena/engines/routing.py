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
from typing import Any

import torch

from recipe_arena.models.moe import moe_routers


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


def record_routing(model: Any, thread: threading.Thread) -> RoutingRecorder | None:
    """A recorder on ``model``'s routers, or None for a dense model."""
    return RoutingRecorder(model, thread) if moe_routers(model) else None
