"""vLLM's async engine behind the engine protocol (``make vllm`` installs the CPU build).

The model is saved once to a temporary safetensors directory and served by
``vllm.v1.engine.async_llm.AsyncLLM`` on an asyncio loop in a background thread. An
in-flight update pauses the scheduler keeping requests and their KV cache
(``pause_generation(mode="keep", clear_cache=not keep_kv_on_update)``), writes the new
weights to a safetensors file, reloads them in place in the worker
(``collective_rpc("reload_weights", weights_path=...)``), and resumes: requests are
neither dropped nor restarted.

Deviations from the torch engine, stated here once:
- Version stamps follow arrival: a token carries the version current when its output
  reached this process. vLLM drains in-flight outputs during the pause (it waits
  ~20 ms), and this engine waits a further 10 ms before switching the version, so the
  stamp is right unless an output takes longer than that to arrive.
- Behaviour logprobs use ``logprobs_mode="processed_logprobs"``: after temperature and
  top-p, like the torch engine. Greedy requests (T=0) therefore report the logprob of
  the argmax under the untempered distribution.
- Prefix caching is off: a prompt's cached keys/values would otherwise survive an
  update and be reused by requests submitted after it (stale, yet stamped new).
- Seeds are vLLM's per-request seeds; sample i of a seeded request gets seed + i.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from recipe_arena.config import EngineConfig
from recipe_arena.engines.base import Completion, EngineError, EngineStats, GenerationRequest
from recipe_arena.engines.common import (
    CompletionStream,
    HFCausalLM,
    Outbox,
    validate_request,
)
from recipe_arena.logsetup import verbose

# vLLM-CPU reserves a core for its scheduler by default; on small machines the model needs it.
os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache on CPU
os.environ.setdefault(
    "VLLM_LOGGING_LEVEL", "WARNING"
)  # per-request INFO lines drown the run's output


def vllm_available() -> bool:
    try:
        import vllm  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "not usable here"
        return False
    return True


class VLLMEngine:
    """``AsyncLLM`` serving a private copy of ``model``; see the module docstring."""

    def __init__(
        self,
        model: HFCausalLM,
        tokenizer: PreTrainedTokenizerBase,
        cfg: EngineConfig | None = None,
        context: int | None = None,
        version: int = 0,
        enforce_eager: bool = True,
    ) -> None:
        try:
            from vllm.engine.arg_utils import AsyncEngineArgs
            from vllm.v1.engine.async_llm import AsyncLLM
        except Exception as exc:  # noqa: BLE001
            raise RuntimeError(
                f"engine 'vllm' needs vLLM installed (make vllm, or pip install -e .[vllm-cuda] on CUDA): {exc}"
            ) from exc
        self.cfg = cfg or EngineConfig()
        self._tmp = tempfile.TemporaryDirectory(prefix="vllm-model-")
        self._dir = Path(self._tmp.name)
        model.save_pretrained(self._dir / "model", safe_serialization=True)
        tokenizer.save_pretrained(self._dir / "model")
        self.context = context or model.config.max_position_embeddings
        self.vocab_size = model.config.vocab_size
        self.eos_id = tokenizer.eos_token_id
        self.version = version
        args = AsyncEngineArgs(
            model=str(self._dir / "model"),
            dtype=self.cfg.dtype,
            max_model_len=self.context,
            max_num_seqs=self.cfg.max_batch_size,
            enforce_eager=enforce_eager,
            logprobs_mode="processed_logprobs",
            # a cached prompt prefix would outlive a weight update and be reused by
            # requests submitted after it, stamped with the new version: off.
            enable_prefix_caching=False,
            seed=0,
            # a "Loading safetensors checkpoint shards" bar at every weight reload: -v only
            use_tqdm_on_load=verbose(),
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="vllm-engine", daemon=True
        )
        self._thread.start()
        self._llm: Any = self._call(self._start(AsyncLLM, args))
        self._outbox = Outbox()
        self._stream = CompletionStream(self._outbox, self.submit, self.vocab_size, self.context)
        self._lock = threading.Lock()
        self._update_lock = threading.Lock()
        self._inflight: dict[str, int] = {}
        self._paused = False
        self._generated = 0
        self._t0 = time.perf_counter()
        self._last_update_ms = 0.0
        self._closed = False

    async def _start(self, cls: Any, args: Any) -> Any:
        return cls.from_engine_args(args)

    def _call(self, coro: Any, timeout: float | None = None) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # ------------------------------------------------------------------ protocol
    def submit(self, request: GenerationRequest) -> None:
        validate_request(request, self.vocab_size, self.context)
        if self._closed:
            raise EngineError("vllm engine is closed")
        with self._lock:
            if request.request_id in self._inflight:
                raise EngineError(
                    f"request id {request.request_id!r} is already in flight; ids must be unique"
                )
            self._inflight[request.request_id] = request.sampling.n
        for i in range(request.sampling.n):
            asyncio.run_coroutine_threadsafe(self._run(request, i), self._loop)

    def _params(self, request: GenerationRequest, index: int) -> Any:
        from vllm import SamplingParams as VSP
        from vllm.sampling_params import RequestOutputKind

        s = request.sampling
        room = self.context - len(request.prompt_tokens)
        return VSP(
            n=1,
            temperature=s.temperature,
            top_p=s.top_p,
            seed=None if s.seed is None else s.seed + index,
            max_tokens=min(s.max_new_tokens, room),
            stop_token_ids=list(s.stop_token_ids),
            ignore_eos=s.ignore_eos,
            logprobs=0,
            output_kind=RequestOutputKind.DELTA,
        )

    async def _run(self, request: GenerationRequest, index: int) -> None:
        t0 = time.perf_counter()
        tokens: list[int] = []
        logprobs: list[float] = []
        versions: list[int] = []
        reason = "abort"
        try:
            stream = self._llm.generate(
                {"prompt_token_ids": list(request.prompt_tokens)},
                self._params(request, index),
                request_id=f"{request.request_id}#{index}",
            )
            async for out in stream:
                o = out.outputs[0]
                new = list(o.token_ids)
                tokens.extend(new)
                versions.extend([self.version] * len(new))
                for tok, lp in zip(new, o.logprobs or [], strict=False):
                    logprobs.append(float(lp[tok].logprob))
                if out.finished:
                    reason = "stop" if o.finish_reason == "stop" else "length"
        finally:
            c = Completion(
                request_id=request.request_id,
                sample_index=index,
                prompt_tokens=request.prompt_tokens,
                tokens=tuple(tokens),
                logprobs=tuple(logprobs),
                token_versions=tuple(versions),
                finish_reason=reason,  # type: ignore[arg-type]
                seconds=time.perf_counter() - t0,
            )
            with self._lock:
                self._generated += len(tokens)
                left = self._inflight.get(request.request_id, 1) - 1
                if left <= 0:
                    self._inflight.pop(request.request_id, None)
                else:
                    self._inflight[request.request_id] = left
            self._outbox.put(c)

    def get(self, timeout: float | None = None) -> Completion | None:
        return self._stream.get(timeout)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        return self._stream.generate(requests)

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Pause (keeping requests), reload weights in place from a safetensors file, resume."""
        from safetensors.torch import save_file

        with self._update_lock:
            t0 = time.perf_counter()
            wdir = self._dir / "weights"
            wdir.mkdir(exist_ok=True)
            # every key, lm_head.weight included even when tied to the embedding: vLLM's
            # layerwise reload otherwise leaves the LM head unloaded (garbage outputs).
            # Cloning also unties shared storage, which safetensors refuses to save.
            tensors = {k: v.detach().to("cpu").contiguous().clone() for k, v in state_dict.items()}
            save_file(tensors, str(wdir / "model.safetensors"))
            self._call(self._swap(str(wdir), version))
            self._last_update_ms = 1000 * (time.perf_counter() - t0)

    async def _swap(self, weights_dir: str, version: int) -> None:
        await self._llm.pause_generation(mode="keep", clear_cache=not self.cfg.keep_kv_on_update)
        await asyncio.sleep(0.01)  # let already-produced outputs reach their streams first
        self.version = version
        await self._llm.collective_rpc("reload_weights", kwargs={"weights_path": weights_dir})
        if not self._paused:
            await self._llm.resume_generation()

    def score(self, prompt_tokens: Sequence[int], completion_tokens: Sequence[int]) -> list[float]:
        """Prompt logprobs of prompt+completion (one generated token, then discarded)."""
        from vllm import SamplingParams as VSP

        if not prompt_tokens or not completion_tokens:
            raise EngineError("score: prompt and completion must both be non-empty")
        full = list(prompt_tokens) + list(completion_tokens)
        params = VSP(max_tokens=1, prompt_logprobs=0, temperature=1.0)

        async def run() -> Any:
            final = None
            async for out in self._llm.generate(
                {"prompt_token_ids": full}, params, request_id=f"score-{time.perf_counter_ns()}"
            ):
                final = out
            return final

        out = self._call(run())
        lps = out.prompt_logprobs  # [None, {tok: Logprob}, ...] aligned with full
        return [float(lps[i][full[i]].logprob) for i in range(len(prompt_tokens), len(full))]

    def pause(self) -> None:
        self._paused = True
        self._call(self._llm.pause_generation(mode="keep", clear_cache=False))

    def resume(self) -> None:
        self._paused = False
        self._call(self._llm.resume_generation())

    def stats(self) -> EngineStats:
        with self._lock:
            span = time.perf_counter() - self._t0
            return EngineStats(
                tokens_per_second=self._generated / span if span else 0.0,
                running=sum(self._inflight.values()),
                version=self.version,
                generated_tokens=self._generated,
                extra={"last_update_ms": self._last_update_ms},
            )

    async def _stop_output_handler(self) -> None:
        handler = getattr(self._llm, "output_handler", None)
        if handler is not None:
            handler.cancel()
            await asyncio.gather(handler, return_exceptions=True)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            # stop the output handler before the engine core, or it logs the core's exit as a crash
            self._call(self._stop_output_handler(), timeout=30)
            self._llm.shutdown()
            self._llm = None  # collected now, not at interpreter exit when vLLM's globals are gone
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            self._tmp.cleanup()
