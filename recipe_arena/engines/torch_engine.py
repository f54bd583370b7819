"""The embedded torch engine: continuous batching over a slot KV cache.

A background thread runs the loop: apply a pending weight update, admit waiting
samples into free slots (one batched prefill forward for the admitted prompts, each
prompt's keys and values shared by its samples), run one batched decode step for every
running sequence, hand back those that finished. In
``continuous`` mode arrivals join at every step; in ``static`` mode a batch is admitted
only when the previous one has fully finished (the batch waits for its longest member).

In-flight weight updates (PipelineRL; OLMo 3's OlmoRL) are applied between two decode
steps: tokens sampled afterwards carry the new version, so ``token_versions`` can change
inside one sequence. By default the KV cache computed under the old weights is kept
(``keep_kv_on_update``); otherwise every running prefix is recomputed under the new
weights before decoding resumes (the ablation).

A paused engine can also be driven one iteration at a time (``step``): the
deterministic schedule (``core.lockstep``) runs its decode steps on a logical clock
instead of letting the thread run free.
"""

from __future__ import annotations

import collections
import copy
import random
import threading
import time
from collections.abc import Mapping, Sequence

import torch
from transformers import PreTrainedTokenizerBase

from recipe_arena.config import EngineConfig
from recipe_arena.engines.base import (
    Completion,
    EngineError,
    EngineStats,
    GenerationRequest,
)
from recipe_arena.engines.common import (
    CompletionStream,
    HFCausalLM,
    Outbox,
    PauseSwitch,
    UniformStream,
    check_state_dict,
    generate_blocking,
    sample_tokens,
    score_tokens,
    validate_request,
)
from recipe_arena.engines.kv_runner import SlotKVRunner
from recipe_arena.engines.routing import record_routing
from recipe_arena.engines.slot_samples import (
    PendingUpdate,
    SlotSample,
    model_eos_ids,
    prefill_chunks,
    prompt_rows,
)


class TorchEngine:
    """Continuous-batching engine over a private copy of a transformers causal LM.

    Thread-safe: ``submit``/``get``/``generate`` from any thread, ``update_weights`` from
    the learner thread (it blocks until the decode thread has copied the weights in,
    between two decode steps, so the caller may change its tensors right after).
    Behaviour logprobs: log-softmax of logits / temperature at the sampled token (after
    top-p renormalisation when top_p < 1); temperature 0 is greedy, with the logprob of
    the argmax under the untempered distribution.
    """

    def __init__(
        self,
        model: HFCausalLM,
        tokenizer: PreTrainedTokenizerBase,
        cfg: EngineConfig | None = None,
        context: int | None = None,
        seed: int = 0,
        version: int = 0,
    ) -> None:
        self.cfg = cfg or EngineConfig()
        if self.cfg.num_threads:
            torch.set_num_threads(self.cfg.num_threads)
        dtype = getattr(torch, self.cfg.dtype)
        # A private copy in the engine's dtype (the learner keeps training its own model
        # object); its weights are then set through load_weights like every update.
        self.model = copy.deepcopy(model).to(device=self.cfg.device, dtype=dtype).eval()
        self.model.requires_grad_(False)
        self.context = context or self.model.config.max_position_embeddings
        self.vocab_size = self.model.config.vocab_size
        self.eos_ids = model_eos_ids(tokenizer, self.model)
        self.runner = SlotKVRunner(
            self.model, self.cfg.max_batch_size, self.context, cuda_graphs=self.cfg.cuda_graphs
        )
        # after the runner: it re-points parameters into fused matrices
        self._params = self.model.state_dict()
        if self.cfg.lm_head_fp32 and dtype != torch.float32:
            self.runner.head_fp32 = torch.zeros(
                self.model.lm_head.weight.shape, dtype=torch.float32, device=self.cfg.device
            )
        self.load_weights(model.state_dict())
        self.version = version
        self._rng = random.Random(seed)
        self._cv = threading.Condition()
        self._waiting: collections.deque[SlotSample] = collections.deque()
        self._running: list[SlotSample] = []
        self._inflight: dict[str, int] = {}
        self._pending_update: PendingUpdate | None = None
        self._update_lock = threading.Lock()
        self._pause = PauseSwitch(self._cv)
        self._permits = 0
        """Iterations ``step`` asked of the paused engine that have not finished (0 or 1)."""
        self._busy = False
        self._closed = False
        self._error: BaseException | None = None
        self._outbox = Outbox()
        self._stream = CompletionStream(
            self._outbox, self.submit, self.vocab_size, self.context, self._raise_if_dead
        )
        self._window: collections.deque[tuple[float, int]] = collections.deque()
        self._generated = 0
        self._steps = 0
        self._last_update_ms = 0.0
        self._thread = threading.Thread(target=self._loop, name="torch-engine", daemon=True)
        self._routes = record_routing(self.model, self._thread)  # MoE: for routing replay
        self._thread.start()

    # ------------------------------------------------------------------ public API
    def submit(self, request: GenerationRequest) -> None:
        validate_request(request, self.vocab_size, self.context)
        s = request.sampling
        stop = frozenset(s.stop_token_ids) | (frozenset() if s.ignore_eos else self.eos_ids)
        max_new = min(s.max_new_tokens, self.context - len(request.prompt_tokens))
        with self._cv:
            self._raise_if_dead()
            if request.request_id in self._inflight:
                raise EngineError(
                    f"request id {request.request_id!r} is already in flight; ids must be unique"
                )
            self._inflight[request.request_id] = s.n
            now = time.perf_counter()
            for i in range(s.n):
                stream = UniformStream(s.seed, i, self._rng)
                self._waiting.append(SlotSample(request, i, stream, max_new, stop, now))
            self._cv.notify_all()

    def load_weights(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        """Copy ``state_dict`` into the engine's weights (cast to its dtype). Every weight
        the engine serves passes through here, at start and at each update; a transform of
        the weights (fake quantisation) belongs here. Decode thread or before it starts."""
        with torch.no_grad():
            for k, t in state_dict.items():
                self._params[k].copy_(t)
            head = self.runner.head_fp32
            if head is not None:  # engine.lm_head_fp32: the head's float32 copy
                src = state_dict.get("lm_head.weight")
                if src is None and getattr(self.model.config, "tie_word_embeddings", False):
                    src = state_dict.get("model.embed_tokens.weight")
                if src is not None:
                    head.copy_(src)

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Copy ``state_dict`` (a subset of the model's keys is allowed) into the engine's
        weights between two decode steps; blocks until done."""
        check_state_dict(state_dict, self._params)
        upd = PendingUpdate(state_dict, version)
        with self._update_lock:
            with self._cv:
                self._raise_if_dead()
                self._pending_update = upd
                self._cv.notify_all()
            while not upd.done.wait(0.2):
                self._raise_if_dead()
        if upd.error is not None:
            raise EngineError(f"update_weights failed: {upd.error}") from upd.error

    def get(self, timeout: float | None = None) -> Completion | None:
        return self._stream.get(timeout)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Submit and wait for all. Unless the engine is already paused, it is paused
        while the requests are queued, so the decode thread admits them together and
        which samples share a forward does not depend on thread timing (on CPU a row's
        float results can depend on the rows batched with it)."""
        if self._pause.paused or not requests:
            return self._stream.generate(requests)
        left = len(requests)
        self.pause()
        resumed = False

        def submit(request: GenerationRequest) -> None:
            nonlocal left, resumed
            self.submit(request)
            left -= 1
            if left == 0:
                resumed = True
                self.resume()

        try:
            return generate_blocking(
                requests,
                self._outbox,
                submit,
                self.vocab_size,
                self.context,
                check_alive=self._raise_if_dead,
            )
        finally:
            if not resumed:
                self.resume()

    def step(self) -> bool:
        """Run one loop iteration of a paused engine (admit waiting samples into free
        slots, one batched forward: one token for every running sample) on its decode
        thread, and return when it has finished; False, running nothing, when no sample
        is waiting or running. Completions it finishes are in ``get`` on return. What a
        deterministic schedule drives: the tokens sampled, and the version each carries,
        then depend on the number of ``step`` calls, not on thread timing."""
        with self._cv:
            self._raise_if_dead()
            if not self._pause.paused:
                raise EngineError("step() drives a paused engine; call pause() first")
            if not (self._running or self._waiting):
                return False
            self._permits = 1
            self._cv.notify_all()
            while self._permits and self._error is None and not self._closed:
                self._cv.wait(0.2)
            self._raise_if_dead()
        return True

    def score(self, prompt_tokens: Sequence[int], completion_tokens: Sequence[int]) -> list[float]:
        """log p(completion_t | prompt, completion_<t) under the engine's current weights
        (temperature 1): what a teacher contributes in on-policy distillation."""
        return score_tokens(
            self.model,
            self._update_lock,
            self.cfg.device,
            self.context,
            prompt_tokens,
            completion_tokens,
        )

    def pause(self) -> None:
        """Stop decoding; returns once the step in progress (if any) has finished."""
        self._pause.pause(idle=lambda: not self._busy or threading.current_thread() is self._thread)

    def resume(self) -> None:
        self._pause.resume()

    def stats(self) -> EngineStats:
        with self._cv:
            now = time.perf_counter()
            while self._window and now - self._window[0][0] > 5.0:
                self._window.popleft()
            span = now - self._window[0][0] if self._window else 0.0
            toks = sum(n for _, n in self._window)
            used = sum(s.cached + 1 for s in self._running)
            return EngineStats(
                tokens_per_second=toks / span if span > 0 else 0.0,
                running=len(self._running),
                waiting=len(self._waiting),
                cache_used_fraction=used / (self.cfg.max_batch_size * self.context),
                version=self.version,
                generated_tokens=self._generated,
                extra={
                    "steps": float(self._steps),
                    "last_update_ms": self._last_update_ms,
                    "kv_positions_read": float(self.runner.kv_positions_read),
                    "prefill_forwards": float(self.runner.prefill_forwards),
                    "graph_captures": float(self.runner.graph_captures),
                },
            )

    def close(self) -> None:
        """Stop the decode thread; unfinished samples come back with finish_reason 'abort'."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        self._thread.join(timeout=30)
        with self._cv:
            self._abort_all()

    # ------------------------------------------------------------------ decode loop
    def _raise_if_dead(self) -> None:
        if self._error is not None:
            raise EngineError(f"torch engine decode loop failed: {self._error!r}") from self._error
        if self._closed:
            raise EngineError("torch engine is closed")

    def _loop(self) -> None:
        try:
            while True:
                with self._cv:
                    while (
                        not self._closed
                        and self._pending_update is None
                        and (
                            (self._pause.paused and not self._permits)
                            or not (self._running or self._waiting)
                        )
                    ):
                        self._cv.wait()
                    if self._closed:
                        return
                    update, self._pending_update = self._pending_update, None
                    running = not self._pause.paused or self._permits > 0
                    stepping = self._pause.paused and running
                    admit = self._take_admissions() if running else []
                    self._busy = True
                if update is not None:
                    self._apply_update(update)
                self._forward(admit, running)
                with self._cv:
                    self._busy = False
                    if stepping:
                        self._permits = 0
                    self._cv.notify_all()
        except BaseException as exc:  # noqa: BLE001 - reported to every caller, nothing dropped
            with self._cv:
                self._busy = False
                self._abort_all()  # queued first: a reader that sees the error has them
                self._error = exc
                self._cv.notify_all()
            if self._pending_update is not None:
                self._pending_update.error = exc
                self._pending_update.done.set()

    def _take_admissions(self) -> list[list[SlotSample]]:
        """Waiting samples that fit in free slots, grouped by request for a shared prefill."""
        if self.cfg.mode == "static" and self._running:
            return []
        free = self.cfg.max_batch_size - len(self._running)
        groups: list[list[SlotSample]] = []
        while self._waiting and free > 0:
            s = self._waiting.popleft()
            if groups and groups[-1][0].request is s.request:
                groups[-1].append(s)
            else:
                groups.append([s])
            free -= 1
        return groups

    def _forward(self, admit: list[list[SlotSample]], running: bool) -> None:
        """One loop iteration's forwards: the admitted prompts ride along with the decode
        step of the running sequences (one weight read for both) when they fit one
        prefill chunk; otherwise they are prefilled in chunks of at most
        ``max_prefill_tokens`` padded tokens first (at least one prompt per forward)."""
        chunks = prefill_chunks(admit, self.cfg.max_prefill_tokens) if admit else []
        decoding = running and bool(self._running)
        if decoding and len(chunks) == 1:
            self._decode_step(chunks[0])
            return
        for chunk in chunks:
            prompts, slots = self._place(chunk)
            logits_NV = self.runner.prefill(prompts, slots)
            if self._routes is not None:
                self._routes.hand_out([], chunk)
            self._append_tokens([s for g in chunk for s in g], prompt_rows(logits_NV, 0, chunk))
        if decoding:
            self._decode_step([])

    def _place(
        self, chunk: list[list[SlotSample]]
    ) -> tuple[list[tuple[int, ...]], list[list[int]]]:
        """Give the chunk's samples the slots after the running ones; its prompts and slots."""
        slots: list[list[int]] = []
        for group in chunk:
            start = len(self._running)
            slots.append(list(range(start, start + len(group))))
            self._running.extend(group)
            for s in group:
                s.start_step = self._steps
        return [g[0].request.prompt_tokens for g in chunk], slots

    def _decode_step(self, chunk: list[list[SlotSample]]) -> None:
        steps = self.cfg.graph_steps
        if (
            self.runner.graphs_enabled  # first: the CPU path pays for nothing below
            and not chunk
            and self._routes is None
            and all(s.request.sampling.top_p >= 1.0 for s in self._running)
            and self.runner.can_graph([s.cached for s in self._running], steps)
        ):
            self._decode_graphed(steps)
            return
        running = list(self._running)
        tokens_B = [s.tokens[-1] for s in running]
        positions_B = [s.cached for s in running]
        prompts, slots = self._place(chunk)
        logits = self.runner.decode(tokens_B, positions_B, prompts, slots)
        if self._routes is not None:
            self._routes.hand_out(running, chunk)
        B = len(running)
        if chunk:
            logits = torch.cat([logits[:B], prompt_rows(logits, B, chunk)])
        self._append_tokens(running + [s for g in chunk for s in g], logits)
        self._steps += 1

    def _decode_graphed(self, steps: int) -> None:
        """``steps`` decode steps of every running sample as one CUDA-graph replay
        (``SlotKVRunner.decode_graphed``); a sample keeps its tokens up to its stop or
        length limit and the rest of its row is discarded. Uniforms are drawn from each
        sample's own stream in token order, so a sample sees the draws the eager path
        would give it."""
        running = list(self._running)
        temps = [s.request.sampling.temperature for s in running]
        uniforms = [
            [s.uniforms.next() if t > 0 else 0.0 for s, t in zip(running, temps, strict=True)]
            for _ in range(steps)
        ]
        toks_SB, lps_SB = self.runner.decode_graphed(
            [s.tokens[-1] for s in running], [s.cached for s in running], temps, uniforms
        )
        added = 0
        for b, s in enumerate(running):
            for j in range(steps):
                s.add(int(toks_SB[j][b]), lps_SB[j][b], self.version)
                added += 1
                if s.finish_reason is not None:
                    break
        with self._cv:
            self._generated += added
            self._window.append((time.perf_counter(), added))
        self._retire_finished()
        self._steps += steps

    def _append_tokens(self, samples: list[SlotSample], logits_BV: torch.Tensor) -> None:
        toks, lps = sample_tokens(
            logits_BV,
            [s.request.sampling.temperature for s in samples],
            [s.request.sampling.top_p for s in samples],
            [s.uniforms.next() if s.request.sampling.temperature > 0 else 0.0 for s in samples],
        )
        for s, t, lp in zip(samples, toks, lps, strict=True):
            s.add(t, lp, self.version)
        with self._cv:
            self._generated += len(samples)
            self._window.append((time.perf_counter(), len(samples)))
        self._retire_finished()

    def _retire_finished(self) -> None:
        i = 0
        while i < len(self._running):
            s = self._running[i]
            reason = s.finish_reason
            if reason is None:
                i += 1
                continue
            self._emit(s, reason)
            last = len(self._running) - 1
            if i != last:  # keep active slots contiguous: the last one moves into slot i
                self.runner.move_slot(last, i, self._running[last].cached)
                self._running[i] = self._running[last]
            self._running.pop()

    def _emit(self, s: SlotSample, reason: str) -> None:
        c = s.completion(reason)
        with self._cv:
            left = self._inflight.get(s.request.request_id, 1) - 1
            if left <= 0:
                self._inflight.pop(s.request.request_id, None)
            else:
                self._inflight[s.request.request_id] = left
        self._outbox.put(c)

    def _abort_all(self) -> None:
        for s in [*self._running, *self._waiting]:
            self._emit(s, "abort")
        self._running.clear()
        self._waiting.clear()

    def _apply_update(self, upd: PendingUpdate) -> None:
        t0 = time.perf_counter()
        try:
            self.load_weights(upd.state_dict)
            self.version = upd.version
            if not self.cfg.keep_kv_on_update and self._running:
                # recompute every cached prefix under the new weights (logits unused)
                seqs = [list(s.request.prompt_tokens) + s.tokens[:-1] for s in self._running]
                longest = max(len(q) for q in seqs)
                step = max(1, self.cfg.max_prefill_tokens // longest)
                for lo in range(0, len(seqs), step):
                    part = seqs[lo : lo + step]
                    self.runner.prefill(part, [[lo + j] for j in range(len(part))])
                    if self._routes is not None:  # the cached prefix's routing, re-recorded
                        self._routes.hand_prefixes(self._running[lo : lo + step], part)
        except BaseException as exc:  # noqa: BLE001
            upd.error = exc
        finally:
            if self.runner.device.type == "cuda":  # the copies are queued: time them done
                torch.cuda.synchronize(self.runner.device)
            self._last_update_ms = 1000 * (time.perf_counter() - t0)
            upd.done.set()
