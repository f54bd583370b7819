"""Pieces every engine shares: request validation, completion routing, sampling.

Validation gives one-line errors naming what is wrong and what is allowed. Routing lets
``generate`` (blocking) and ``get`` (streaming) be used from different threads on the
same engine without one stealing the other's completions. Sampling returns the
behaviour logprob of each sampled token under the distribution it was drawn from.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch

from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.engines.base import Completion, EngineError, GenerationRequest

HFCausalLM = Any
"""A transformers causal LM. Typed loosely on purpose: engines read its submodules by
name (``model.model.layers[i].self_attn.q_proj``), which no static type describes."""


def validate_request(request: GenerationRequest, vocab_size: int, context: int) -> None:
    """Raise EngineError (one line) for a request no engine can serve."""
    rid, s = request.request_id, request.sampling
    n_prompt = len(request.prompt_tokens)
    if n_prompt == 0:
        raise EngineError(f"request {rid!r}: empty prompt; give at least one prompt token")
    if s.max_new_tokens < 1:
        raise EngineError(f"request {rid!r}: max_new_tokens={s.max_new_tokens}; must be >= 1")
    if s.n < 1:
        raise EngineError(f"request {rid!r}: n={s.n}; must be >= 1")
    if s.temperature < 0:
        raise EngineError(
            f"request {rid!r}: temperature={s.temperature}; must be >= 0 (0 = greedy)"
        )
    if not 0 < s.top_p <= 1:
        raise EngineError(f"request {rid!r}: top_p={s.top_p}; must be in (0, 1]")
    if n_prompt >= context:
        raise EngineError(
            f"request {rid!r}: prompt of {n_prompt} tokens does not fit the context of "
            f"{context} tokens (it must be shorter, to leave room for one generated token)"
        )
    bad = [t for t in request.prompt_tokens if not 0 <= t < vocab_size]
    if bad:
        raise EngineError(
            f"request {rid!r}: token id {bad[0]} outside the vocabulary [0, {vocab_size})"
        )


class Outbox:
    """Finished completions, routed to a private queue for ``generate`` callers and to a
    shared queue for ``get`` callers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.shared: queue.Queue[Completion] = queue.Queue()
        self._routes: dict[str, queue.Queue[Completion]] = {}

    def route(self, request_ids: Iterable[str], target: queue.Queue[Completion]) -> None:
        with self._lock:
            for rid in request_ids:
                self._routes[rid] = target

    def unroute(self, request_ids: Iterable[str]) -> None:
        with self._lock:
            for rid in request_ids:
                self._routes.pop(rid, None)

    def put(self, completion: Completion) -> None:
        with self._lock:
            target = self._routes.get(completion.request_id, self.shared)
        target.put(completion)


def order_completions(
    requests: Sequence[GenerationRequest], completions: Iterable[Completion]
) -> list[Completion]:
    """Completions ordered by request (as given), then sample index."""
    rank = {r.request_id: i for i, r in enumerate(requests)}
    return sorted(completions, key=lambda c: (rank[c.request_id], c.sample_index))


def check_unique_ids(requests: Sequence[GenerationRequest]) -> None:
    ids = [r.request_id for r in requests]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise EngineError(f"request id {dup!r} appears twice in one call; ids must be unique")


def poll_outbox(
    outbox: Outbox, timeout: float | None, check_alive: Callable[[], None]
) -> Completion | None:
    """Next finished completion, or None after ``timeout`` seconds. Completions already
    queued are handed out before ``check_alive`` may raise, so the partial samples of a
    failed engine reach the caller first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            return outbox.shared.get_nowait()
        except queue.Empty:
            check_alive()
        wait = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
        if wait <= 0:
            return None
        try:
            return outbox.shared.get(timeout=wait)
        except queue.Empty:
            continue


def generate_blocking(
    requests: Sequence[GenerationRequest],
    outbox: Outbox,
    submit: Callable[[GenerationRequest], None],
    vocab_size: int,
    context: int,
    check_alive: Callable[[], None] = lambda: None,
) -> list[Completion]:
    """Submit ``requests`` and wait for every sample. The samples are routed to a private
    queue, so a concurrent ``get()`` caller never sees them; ``check_alive`` raises if the
    engine died meanwhile. Ordered by request, then sample index."""
    check_unique_ids(requests)
    for r in requests:
        validate_request(r, vocab_size, context)
    inbox: queue.Queue[Completion] = queue.Queue()
    ids = [r.request_id for r in requests]
    outbox.route(ids, inbox)
    try:
        for r in requests:
            submit(r)
        out: list[Completion] = []
        total = sum(r.sampling.n for r in requests)
        while len(out) < total:
            check_alive()
            try:
                out.append(inbox.get(timeout=0.2))
            except queue.Empty:
                continue
    finally:
        outbox.unroute(ids)
    return order_completions(requests, out)


def check_state_dict(
    state_dict: Mapping[str, torch.Tensor], params: Mapping[str, torch.Tensor]
) -> None:
    """Raise EngineError unless every key of ``state_dict`` names one of ``params`` with
    the same shape (a subset of the keys is allowed: a partial update)."""
    for k, t in state_dict.items():
        if k not in params:
            raise EngineError(
                f"update_weights: unknown parameter {k!r} (not in the engine's model)"
            )
        if tuple(t.shape) != tuple(params[k].shape):
            raise EngineError(
                f"update_weights: {k!r} has shape {tuple(t.shape)}, "
                f"expected {tuple(params[k].shape)}"
            )


class CompletionStream:
    """``get`` and ``generate`` over an engine's outbox, held by the engine (composition):
    the engine's worker puts finished samples into ``outbox``; ``submit`` queues one
    request; ``check_alive`` raises EngineError once the worker has failed or closed."""

    def __init__(
        self,
        outbox: Outbox,
        submit: Callable[[GenerationRequest], None],
        vocab_size: int,
        context: int,
        check_alive: Callable[[], None] = lambda: None,
    ) -> None:
        self.outbox = outbox
        self._submit = submit
        self._vocab_size = vocab_size
        self._context = context
        self._check_alive = check_alive

    def get(self, timeout: float | None = None) -> Completion | None:
        """Next finished completion, or None after ``timeout`` seconds. After a failure
        of the worker, the aborted samples (partial tokens, finish_reason 'abort') are
        handed out first, then EngineError is raised."""
        return poll_outbox(self.outbox, timeout, self._check_alive)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        return generate_blocking(
            requests,
            self.outbox,
            self._submit,
            self._vocab_size,
            self._context,
            check_alive=self._check_alive,
        )


class PauseSwitch:
    """The paused flag of an engine's worker thread, guarded by the engine's condition
    variable (which the worker waits on)."""

    def __init__(self, cv: threading.Condition) -> None:
        self._cv = cv
        self.paused = False

    def pause(self, idle: Callable[[], bool] = lambda: True) -> None:
        """Set the flag; then wait (holding nothing) until ``idle()`` is true, e.g. until
        the worker has finished the step it was running."""
        with self._cv:
            self.paused = True
            while not idle():
                self._cv.wait(0.1)

    def resume(self) -> None:
        with self._cv:
            self.paused = False
            self._cv.notify_all()


def score_tokens(
    model: HFCausalLM,
    lock: threading.Lock,
    device: str,
    context: int,
    prompt_tokens: Sequence[int],
    completion_tokens: Sequence[int],
) -> list[float]:
    """log p(completion_t | prompt, completion_<t) under ``model`` at temperature 1 (what
    a teacher contributes in on-policy distillation), holding ``lock`` (the engine's
    weight lock, so an update never lands mid-forward)."""
    if not prompt_tokens or not completion_tokens:
        raise EngineError("score: prompt and completion must both be non-empty")
    if len(prompt_tokens) + len(completion_tokens) > context:
        raise EngineError(
            f"score: {len(prompt_tokens) + len(completion_tokens)} tokens exceed the context of {context}"
        )
    tokens_1L = torch.tensor([list(prompt_tokens) + list(completion_tokens)], device=device)
    with lock, torch.no_grad():
        logp_1L = sequence_logprobs(model, tokens_1L)
    return logp_1L[0, len(prompt_tokens) :].tolist()


class UniformStream:
    """Uniform draws in [0, 1) for one sample, from its own generator.

    (seed, sample_index) fixes the stream, so a seeded request samples the same tokens
    whatever else shares its batch. Draws come in blocks: one generator call per block,
    not per token.
    """

    BLOCK = 256

    def __init__(self, seed: int | None, sample_index: int, fallback: random.Random) -> None:
        base = fallback.getrandbits(62) if seed is None else seed
        self._gen = torch.Generator().manual_seed((base * 1_000_003 + sample_index) % (2**63))
        self._block: list[float] = []
        self._i = 0

    def next(self) -> float:
        if self._i == len(self._block):
            self._block = torch.rand(self.BLOCK, generator=self._gen, dtype=torch.float64).tolist()
            self._i = 0
        self._i += 1
        return self._block[self._i - 1]


def sample_tokens(
    logits_BV: torch.Tensor,
    temperatures: Sequence[float],
    top_ps: Sequence[float],
    uniforms: Sequence[float],
) -> tuple[list[int], list[float]]:
    """Sample one token per row; return the tokens and their behaviour logprobs.

    Row b with temperature T_b > 0 samples from softmax(logits / T_b), truncated to the
    top-p nucleus and renormalised when top_p < 1; its logprob is log of that (possibly
    renormalised) probability: the distribution the token was actually drawn from.
    T_b = 0 is greedy: the argmax, with its logprob under the untempered softmax(logits).
    Each row draws by inverse CDF with its own uniform ``uniforms[b]`` in [0, 1), so
    each row's randomness is its own.
    """
    logits_BV = logits_BV.float()
    temps_B = torch.tensor([t if t > 0 else 1.0 for t in temperatures], device=logits_BV.device)
    greedy = [t == 0 for t in temperatures]
    if not all(greedy) and any(p < 1.0 for p in top_ps):
        return _sample_nucleus(logits_BV / temps_B[:, None], greedy, top_ps, uniforms)
    # One pass for the normaliser, one for the CDF: no full log-softmax tensor is kept.
    scaled_BV = logits_BV / temps_B[:, None]
    lse_B = torch.logsumexp(scaled_BV, dim=-1)
    if all(greedy):
        tokens_B = scaled_BV.argmax(dim=-1)
    else:
        cdf_BV = (scaled_BV - lse_B[:, None]).exp_().cumsum_(dim=-1)
        tokens_B = _inverse_cdf(cdf_BV, uniforms)
        if any(greedy):
            greedy_B = torch.tensor(greedy, device=logits_BV.device)
            tokens_B = torch.where(greedy_B, scaled_BV.argmax(dim=-1), tokens_B)
    lp_B = scaled_BV.gather(-1, tokens_B[:, None])[:, 0] - lse_B
    return tokens_B.tolist(), lp_B.tolist()


def _inverse_cdf(cdf_BV: torch.Tensor, uniforms: Sequence[float]) -> torch.Tensor:
    """Row b's token: the first index whose cdf exceeds uniforms[b] * total (right=True
    skips zero-probability entries)."""
    # below 1 in float32 too, so u * total never reaches the end of the cdf
    u_B = torch.tensor(uniforms, dtype=cdf_BV.dtype, device=cdf_BV.device).clamp(max=1 - 2**-23)
    drawn_B = torch.searchsorted(cdf_BV, (u_B * cdf_BV[:, -1])[:, None], right=True)[:, 0]
    return drawn_B.clamp(max=cdf_BV.shape[-1] - 1)


def _sample_nucleus(
    scaled_BV: torch.Tensor,
    greedy: Sequence[bool],
    top_ps: Sequence[float],
    uniforms: Sequence[float],
) -> tuple[list[int], list[float]]:
    """``sample_tokens`` when some row has top_p < 1: sampled rows draw from the
    renormalised nucleus and report their logprob under it."""
    logp_BV = torch.log_softmax(scaled_BV, dim=-1)
    sample_logp_BV = _nucleus(logp_BV, torch.tensor(top_ps, device=logp_BV.device))
    tokens_B = _inverse_cdf(sample_logp_BV.exp().cumsum(dim=-1), uniforms)
    greedy_B = torch.tensor(list(greedy), device=logp_BV.device)
    tokens_B = torch.where(greedy_B, logp_BV.argmax(dim=-1), tokens_B)
    lp_B = torch.where(
        greedy_B,
        logp_BV.gather(-1, tokens_B[:, None])[:, 0],
        sample_logp_BV.gather(-1, tokens_B[:, None])[:, 0],
    )
    return tokens_B.tolist(), lp_B.tolist()


def _nucleus(logp_BV: torch.Tensor, top_p_B: torch.Tensor) -> torch.Tensor:
    """Log-probabilities renormalised over the smallest set whose mass reaches top_p."""
    sorted_BV, order_BV = logp_BV.sort(dim=-1, descending=True)
    mass_before_BV = sorted_BV.exp().cumsum(dim=-1) - sorted_BV.exp()
    keep_sorted_BV = mass_before_BV < top_p_B[:, None]
    keep_BV = torch.zeros_like(keep_sorted_BV).scatter(-1, order_BV, keep_sorted_BV)
    masked_BV = logp_BV.masked_fill(~keep_BV, float("-inf"))
    return masked_BV - torch.logsumexp(masked_BV, dim=-1, keepdim=True)
