"""The generation-engine protocol shared by the torch, vLLM and HF engines.

An engine takes requests, samples completions, and hands each one back as soon as it
finishes, with per-token behaviour logprobs and per-token policy versions. Weights can
be replaced while requests are in flight. The same engine serves actors (policy),
teachers (``score``) and judges (``generate`` on text prompts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import torch


class EngineError(ValueError):
    """A request the engine cannot serve (empty prompt, too long, bad parameters)."""


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    n: int = 1
    seed: int | None = None
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    """Keep generating past the tokenizer's EOS (stop_token_ids still stop); benchmarks
    use it to force output lengths."""


@dataclass(frozen=True)
class GenerationRequest:
    request_id: str
    prompt_tokens: tuple[int, ...]
    sampling: SamplingParams


@dataclass(frozen=True)
class Completion:
    request_id: str
    sample_index: int
    prompt_tokens: tuple[int, ...]
    tokens: tuple[int, ...]
    logprobs: tuple[float, ...]
    """log-probability of each sampled token under the distribution it was sampled from."""
    token_versions: tuple[int, ...]
    finish_reason: Literal["stop", "length", "abort"]
    seconds: float = 0.0
    start_step: int | None = None
    """Torch engine: its decode-step counter when the sample's first token was sampled
    (``EngineStats.extra['steps']`` counts the same steps); None for other engines."""
    expert_ids: torch.Tensor | None = None
    """Mixture-of-experts models (torch engine): int64 (P + T - 1, N, K), the K experts
    each of the N MoE layers routed every fed position to (prompt, then each sampled
    token but the last); None for dense models and engines that do not record it."""


@dataclass(frozen=True)
class EngineStats:
    tokens_per_second: float = 0.0
    running: int = 0
    waiting: int = 0
    cache_used_fraction: float = 0.0
    version: int = 0
    generated_tokens: int = 0
    extra: Mapping[str, float] = field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    def submit(self, request: GenerationRequest) -> None:
        """Queue a request; raises EngineError at once for a request it cannot serve."""

    def get(self, timeout: float | None = None) -> Completion | None:
        """Next finished completion, or None after ``timeout`` seconds."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Submit and wait for all completions (ordered by request, then sample index)."""

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Swap in new weights; tokens sampled afterwards carry ``version``."""

    def score(self, prompt_tokens: Sequence[int], completion_tokens: Sequence[int]) -> list[float]:
        """log p(completion_t | prompt, completion_<t) at temperature 1 (teacher scoring)."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def stats(self) -> EngineStats: ...

    def close(self) -> None: ...
