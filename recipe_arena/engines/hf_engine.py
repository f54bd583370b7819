"""The static baseline: ``transformers`` ``generate`` in fixed batches.

A background thread takes up to ``max_batch_size`` waiting samples that share sampling
settings, left-pads them, and calls ``generate`` once; the batch runs until its longest
member stops (finished rows keep computing padding), which is what continuous batching
is measured against. Weight updates apply between batches, so every token of a
completion carries one version.
"""

from __future__ import annotations

import collections
import copy
import threading
import time
from collections.abc import Mapping, Sequence

import torch
from transformers import GenerationConfig, PreTrainedTokenizerBase

from recipe_arena.config import EngineConfig
from recipe_arena.engines.base import Completion, EngineError, EngineStats, GenerationRequest
from recipe_arena.engines.common import (
    CompletionStream,
    HFCausalLM,
    Outbox,
    PauseSwitch,
    check_state_dict,
    score_tokens,
    validate_request,
)


class HFEngine:
    """``generate`` in static batches behind the engine protocol.

    Behaviour logprobs are log-softmax of the scores ``generate`` sampled from (after
    temperature and top-p); greedy rows get the untempered log-softmax of the argmax.
    Seeds: a batch whose requests carry a seed seeds torch's global generator with the
    first one, so reproducibility holds per batch, not per request.
    """

    def __init__(
        self,
        model: HFCausalLM,
        tokenizer: PreTrainedTokenizerBase,
        cfg: EngineConfig | None = None,
        context: int | None = None,
        version: int = 0,
    ) -> None:
        self.cfg = cfg or EngineConfig()
        dtype = getattr(torch, self.cfg.dtype)
        self.model = copy.deepcopy(model).to(device=self.cfg.device, dtype=dtype).eval()
        self.model.requires_grad_(False)
        self._params = self.model.state_dict()
        self.context = context or self.model.config.max_position_embeddings
        self.vocab_size = self.model.config.vocab_size
        self.pad_id = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )
        self.eos_id = tokenizer.eos_token_id
        self.version = version
        self._cv = threading.Condition()
        self._model_lock = threading.Lock()
        self._waiting: collections.deque[tuple[GenerationRequest, int]] = collections.deque()
        self._running = 0
        self._pause = PauseSwitch(self._cv)
        self._closed = False
        self._error: BaseException | None = None
        self._outbox = Outbox()
        self._stream = CompletionStream(
            self._outbox, self.submit, self.vocab_size, self.context, self._raise_if_dead
        )
        self._generated = 0
        self._busy_s = 0.0
        self._thread = threading.Thread(target=self._loop, name="hf-engine", daemon=True)
        self._thread.start()

    def submit(self, request: GenerationRequest) -> None:
        validate_request(request, self.vocab_size, self.context)
        with self._cv:
            self._raise_if_dead()
            self._waiting.extend((request, i) for i in range(request.sampling.n))
            self._cv.notify_all()

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        check_state_dict(state_dict, self._params)
        with self._model_lock, torch.no_grad():
            for k, t in state_dict.items():
                self._params[k].copy_(t)
            self.version = version

    def get(self, timeout: float | None = None) -> Completion | None:
        return self._stream.get(timeout)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        return self._stream.generate(requests)

    def score(self, prompt_tokens: Sequence[int], completion_tokens: Sequence[int]) -> list[float]:
        return score_tokens(
            self.model,
            self._model_lock,
            self.cfg.device,
            self.context,
            prompt_tokens,
            completion_tokens,
        )

    def pause(self) -> None:
        """Stop taking new batches (a batch in progress runs to its end)."""
        self._pause.pause()

    def resume(self) -> None:
        self._pause.resume()

    def stats(self) -> EngineStats:
        with self._cv:
            return EngineStats(
                tokens_per_second=self._generated / self._busy_s if self._busy_s else 0.0,
                running=self._running,
                waiting=len(self._waiting),
                version=self.version,
                generated_tokens=self._generated,
            )

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        self._thread.join(timeout=60)

    # ------------------------------------------------------------------ batches
    def _raise_if_dead(self) -> None:
        if self._error is not None:
            raise EngineError(f"hf engine failed: {self._error!r}") from self._error
        if self._closed:
            raise EngineError("hf engine is closed")

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._closed and (self._pause.paused or not self._waiting):
                    self._cv.wait()
                if self._closed:
                    return
                batch = self._take_batch()
                self._running = len(batch)
            try:
                t0 = time.perf_counter()
                with self._model_lock:
                    outs = self._run_batch(batch)
                with self._cv:
                    self._busy_s += time.perf_counter() - t0
                    self._generated += sum(len(c.tokens) for c in outs)
                    self._running = 0
                for c in outs:
                    self._outbox.put(c)
            except BaseException as exc:  # noqa: BLE001 - reported to every caller
                with self._cv:
                    self._error = exc
                return

    def _take_batch(self) -> list[tuple[GenerationRequest, int]]:
        """Up to max_batch_size waiting samples with the same sampling settings as the first."""
        key = _sampling_key(self._waiting[0][0])
        batch: list[tuple[GenerationRequest, int]] = []
        keep: collections.deque[tuple[GenerationRequest, int]] = collections.deque()
        while self._waiting:
            item = self._waiting.popleft()
            if len(batch) < self.cfg.max_batch_size and _sampling_key(item[0]) == key:
                batch.append(item)
            else:
                keep.append(item)
        self._waiting = keep
        return batch

    def _run_batch(self, batch: list[tuple[GenerationRequest, int]]) -> list[Completion]:
        t0 = time.perf_counter()
        s = batch[0][0].sampling
        prompts = [list(r.prompt_tokens) for r, _ in batch]
        width = max(map(len, prompts))
        ids_BP = torch.tensor(
            [[self.pad_id] * (width - len(p)) + p for p in prompts], device=self.cfg.device
        )
        mask_BP = torch.tensor(
            [[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.cfg.device
        )
        caps = [min(r.sampling.max_new_tokens, self.context - width) for r, _ in batch]
        seeds = [r.sampling.seed for r, _ in batch if r.sampling.seed is not None]
        if seeds:
            torch.manual_seed(seeds[0])
        eos = list(s.stop_token_ids) + (
            [] if s.ignore_eos or self.eos_id is None else [self.eos_id]
        )
        greedy = s.temperature == 0
        # a fresh config, so ignore_eos is not undone by the model's default eos
        gen_cfg = GenerationConfig(
            max_new_tokens=max(caps),
            do_sample=not greedy,
            temperature=None if greedy else s.temperature,
            top_p=None if greedy else s.top_p,
            top_k=0,  # 0 disables the top-k=50 default that generate would apply
            eos_token_id=eos or None,
            pad_token_id=self.pad_id,
            output_scores=True,
            return_dict_in_generate=True,
        )
        out = self.model.generate(
            input_ids=ids_BP, attention_mask=mask_BP, generation_config=gen_cfg
        )
        new_BT = out.sequences[:, width:]
        logp_BTV = torch.log_softmax(torch.stack(out.scores, dim=1).float(), dim=-1)
        lp_BT = logp_BTV.gather(-1, new_BT[:, :, None])[:, :, 0]
        seconds = time.perf_counter() - t0
        comps = []
        for b, (r, i) in enumerate(batch):
            toks, reason = new_BT[b, : caps[b]].tolist(), "length"
            for t, tok in enumerate(toks):
                if tok in eos:
                    toks, reason = toks[: t + 1], "stop"
                    break
            n = len(toks)
            comps.append(
                Completion(
                    request_id=r.request_id,
                    sample_index=i,
                    prompt_tokens=r.prompt_tokens,
                    tokens=tuple(toks),
                    logprobs=tuple(lp_BT[b, :n].tolist()),
                    token_versions=(self.version,) * n,
                    finish_reason=reason,  # type: ignore[arg-type]
                    seconds=seconds,
                )
            )
        return comps


def _sampling_key(r: GenerationRequest) -> tuple[object, ...]:
    s = r.sampling
    return (s.temperature, s.top_p, s.stop_token_ids, s.ignore_eos)
