"""The torch engine's bookkeeping (``torch_engine``): a sample while it waits or runs in
a slot, a weight update waiting for the decode thread, and how admitted prompts are
grouped into prefill forwards."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedTokenizerBase

from recipe_arena.engines.base import Completion, GenerationRequest
from recipe_arena.engines.common import HFCausalLM, UniformStream


@dataclass
class SlotSample:
    """One sample of a request while it waits or runs."""

    request: GenerationRequest
    index: int
    uniforms: UniformStream
    max_new: int
    stop_ids: frozenset[int]
    t0: float
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    expert_ids: list[torch.Tensor] = field(default_factory=list)
    """MoE models: (positions, N, K) chunks of the experts each fed position went to."""
    start_step: int | None = None
    """Decode steps run before this sample's first token (for length control)."""

    @property
    def cached(self) -> int:
        """Positions whose KV is in the cache: the prompt and all but the last token."""
        return len(self.request.prompt_tokens) + len(self.tokens) - 1

    def add(self, token: int, logprob: float, version: int) -> None:
        """Append one sampled token, its behaviour logprob and the weights' version."""
        self.tokens.append(token)
        self.logprobs.append(logprob)
        self.versions.append(version)

    @property
    def finish_reason(self) -> str | None:
        """'stop' when the last token is a stop token, 'length' at ``max_new`` tokens,
        None while the sample goes on."""
        if self.tokens[-1] in self.stop_ids:
            return "stop"
        return "length" if len(self.tokens) >= self.max_new else None

    def completion(self, reason: str) -> Completion:
        """What the engine hands back for this sample, finished for ``reason``."""
        return Completion(
            request_id=self.request.request_id,
            sample_index=self.index,
            prompt_tokens=self.request.prompt_tokens,
            tokens=tuple(self.tokens),
            logprobs=tuple(self.logprobs),
            token_versions=tuple(self.versions),
            finish_reason=reason,  # type: ignore[arg-type]
            seconds=time.perf_counter() - self.t0,
            expert_ids=torch.cat(self.expert_ids) if self.expert_ids else None,
            start_step=self.start_step,
        )


@dataclass
class PendingUpdate:
    state_dict: Mapping[str, torch.Tensor]
    version: int
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


def prompt_rows(logits: torch.Tensor, offset: int, chunk: list[list[SlotSample]]) -> torch.Tensor:
    """Each sample of the chunk gets its prompt's row (rows from ``offset`` on)."""
    return logits[torch.tensor([offset + n for n, g in enumerate(chunk) for _ in g])]


def prefill_chunks(groups: list[list[SlotSample]], max_tokens: int) -> list[list[list[SlotSample]]]:
    """Consecutive runs of ``groups`` whose padded size (prompts x longest prompt) stays
    within ``max_tokens``; a prompt longer than that gets a forward of its own."""
    chunks: list[list[list[SlotSample]]] = []
    longest = 0
    for g in groups:
        n = len(g[0].request.prompt_tokens)
        if chunks and (len(chunks[-1]) + 1) * max(longest, n) <= max_tokens:
            chunks[-1].append(g)
            longest = max(longest, n)
        else:
            chunks.append([g])
            longest = n
    return chunks


def model_eos_ids(tokenizer: PreTrainedTokenizerBase, model: HFCausalLM) -> frozenset[int]:
    """Token ids that end a sample unless its request ignores EOS: the tokenizer's EOS
    and the model's generation config's (one id or a list)."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif gen_eos:
        ids.update(int(i) for i in gen_eos)
    return frozenset(ids)
