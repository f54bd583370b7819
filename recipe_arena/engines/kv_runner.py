"""Batched forward passes with a slot KV cache, over a transformers Llama-family model.

The runner reads the model's own modules and weights (embedding, norms, projections,
MLP, rotary embedding, LM head) and runs the layers itself, with q/k/v and gate/up
matmuls fused (the module weights become views into the fused matrices), so that
sequences at different positions decode together: slot s holds one sequence's keys
and values at positions 0..len_s-1, and a mask hides the rest. Active sequences
occupy slots 0..B-1; a finished sequence's slot is refilled by moving the last one in
(one slot copy, not a re-pack).

Prefill runs every admitted prompt in one forward (right-padded to the longest: with
a causal mask a real token never attends a padding position after it, and the padding
positions a slot holds beyond its prompt are overwritten by decoding before any query
reaches them). Decode folds grouped-query heads into the query axis (the g query heads
of one KV head attend its keys as g queries), so grouped keys and values are read
once, never expanded.

On CUDA the decode step can run as a replay of a captured CUDA graph
(``decode_graphed``): ``graph_steps`` decode steps, sampling included, per replay, one
graph per (batch bucket, attended-length bucket), captured on first use. The graph
reads its inputs from one staged buffer and writes tokens and logprobs to another, so
a replay costs one host-to-device copy, one launch and one device-to-host copy,
where the eager step launches several hundred kernels.

Hooks for other strategies stay in one place each: ``_mlp`` is the only MLP call of a
layer (an MoE variant replaces it), and engines copy weights in through
``TorchEngine.load_weights`` (a state-dict transform, such as fake quantisation, goes
there).

Supported: model types whose decoder layer is pre-norm attention + MLP with
q/k/v/o projections (llama, mistral without a sliding window, qwen2, qwen3's q/k norms),
and mixtral, whose sparse mixture-of-experts MLP runs as its own module (unfused).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from recipe_arena.engines.common import HFCausalLM
from recipe_arena.engines.decode_graph import DecodeGraph, batch_bucket, length_bucket, sample_rows

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "mixtral")
REFINE_TOP = 64
"""Logits per row recomputed in float32 when the engine runs in bfloat16 or float16."""


def check_supported(model: HFCausalLM) -> None:
    cfg = model.config
    mtype = getattr(cfg, "model_type", "?")
    if mtype not in SUPPORTED_MODEL_TYPES:
        raise ValueError(
            f"torch engine: model type {mtype!r} is not supported; supported: "
            f"{', '.join(SUPPORTED_MODEL_TYPES)} (use engine 'hf' for other models)"
        )
    window = (
        getattr(cfg, "sliding_window", None) if getattr(cfg, "use_sliding_window", True) else None
    )
    if window and window < cfg.max_position_embeddings:
        raise ValueError("torch engine: sliding-window attention is not supported; use engine 'hf'")


class SlotKVRunner:
    """Owns the KV cache of up to ``max_slots`` sequences and runs prefill and decode."""

    def __init__(
        self, model: HFCausalLM, max_slots: int, context: int, cuda_graphs: bool = False
    ) -> None:
        check_supported(model)
        self.model = model
        cfg = model.config
        self.layers = model.model.layers
        self.n_kv = cfg.num_key_value_heads
        self.n_q = cfg.num_attention_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.max_slots = max_slots
        self.context = context
        self.capacity = 0
        self.kv_positions_read = 0
        """Sum over decode steps and rows of the positions attended (for bandwidth accounting)."""
        self.prefill_forwards = 0
        """Batched prefill forwards run so far."""
        self.k_cache: list[torch.Tensor] = []
        self.v_cache: list[torch.Tensor] = []
        self._graphs: dict[tuple[int, int, int], DecodeGraph] = {}
        self._ensure_capacity(min(context, 128))
        self._fused = [self._fuse(layer) for layer in self.layers]
        self.graphs_enabled = (
            cuda_graphs
            and self.device.type == "cuda"
            and all(f[2] is not None for f in self._fused)  # dense MLPs only
        )
        """Whether ``decode_graphed`` may be used (CUDA, dense model, asked for)."""
        self._pool: Any = None
        self.head_fp32: torch.Tensor | None = None
        """A float32 copy of the LM head's weight (``engine.lm_head_fp32``), kept current by
        the engine's weight loads; None: the head runs in the engine's dtype."""
        self.graph_captures = 0
        """Decode graphs captured so far (one per bucket first used)."""

    @staticmethod
    def _fuse(layer: Any) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Concatenate q/k/v (and gate/up) weights into one matrix each and make the
        module parameters views into it: one matmul instead of three (two), and a weight
        update copied into the parameters lands in the fused matrix with no extra step.
        A mixture-of-experts MLP (no gate_proj) is left as it is (None)."""
        a, mlp = layer.self_attn, layer.mlp
        projs = (a.q_proj, a.k_proj, a.v_proj)
        w_qkv = torch.cat([p.weight.data for p in projs])
        b_qkv = torch.cat([p.bias.data for p in projs]) if a.q_proj.bias is not None else None
        row = 0
        for p in projs:
            n = p.weight.shape[0]
            p.weight.data = w_qkv[row : row + n]
            if b_qkv is not None:
                p.bias.data = b_qkv[row : row + n]
            row += n
        if not hasattr(mlp, "gate_proj"):
            return w_qkv, b_qkv, None
        w_gu = torch.cat([mlp.gate_proj.weight.data, mlp.up_proj.weight.data])
        n_ff = mlp.gate_proj.weight.shape[0]
        mlp.gate_proj.weight.data, mlp.up_proj.weight.data = w_gu[:n_ff], w_gu[n_ff:]
        return w_qkv, b_qkv, w_gu

    def _mlp(self, i: int, h_BTd: torch.Tensor) -> torch.Tensor:
        mlp = self.layers[i].mlp
        w_gu = self._fused[i][2]
        if w_gu is None:  # mixture of experts: its own router and experts
            return mlp(h_BTd)
        gate, up = F.linear(h_BTd, w_gu).chunk(2, dim=-1)
        return mlp.down_proj(mlp.act_fn(gate) * up)

    def _logits(self, x_BD: torch.Tensor) -> torch.Tensor:
        """logits_BV from the last residual states (float32). With ``head_fp32`` the head
        is one float32 matmul over the whole vocabulary. Otherwise, in bfloat16 the logits
        themselves are rounded (a spacing of 0.125 between 16 and 32): the
        ``REFINE_TOP`` largest of each row, where nearly all the probability lies, are
        recomputed in float32 from the float32 normed state, and tokens are sampled
        from the refined logits."""
        norm = self.model.model.norm
        if self.dtype == torch.float32:
            return self.model.lm_head(self._norm(norm, x_BD))
        eps = getattr(norm, "variance_epsilon", None) or norm.eps
        h_BD = F.rms_norm(x_BD, (x_BD.shape[-1],), weight=norm.weight.float(), eps=eps)
        if self.head_fp32 is not None:  # every logit in float32, from float32 weights
            return F.linear(h_BD.float(), self.head_fp32)
        logits_BV = self.model.lm_head(h_BD.to(self.dtype)).float()
        top_BK = logits_BV.topk(min(REFINE_TOP, logits_BV.shape[-1]), dim=-1).indices
        w_BKD = self.model.lm_head.weight[top_BK].float()
        return logits_BV.scatter_(-1, top_BK, torch.einsum("bkd,bd->bk", w_BKD, h_BD))

    @property
    def device(self) -> torch.device:
        return self.model.lm_head.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.lm_head.weight.dtype

    def kv_bytes_per_position(self) -> int:
        """Bytes of keys and values one position holds across all layers."""
        elem = torch.empty((), dtype=self.dtype).element_size()
        return 2 * len(self.layers) * self.n_kv * self.head_dim * elem

    def cache_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.k_cache + self.v_cache)

    def _ensure_capacity(self, needed: int) -> None:
        """Grow the cache's length axis (doubling) to hold ``needed`` positions."""
        if needed <= self.capacity:
            return
        new_cap = min(self.context, max(needed, 2 * self.capacity))
        shape = (self.max_slots, self.n_kv, new_cap, self.head_dim)
        for cache in (self.k_cache, self.v_cache):
            for i in range(len(self.layers)):
                fresh = torch.zeros(shape, dtype=self.dtype, device=self.device)
                if cache and self.capacity:
                    fresh[:, :, : self.capacity] = cache[i]
                if len(cache) > i:
                    cache[i] = fresh
                else:
                    cache.append(fresh)
        self.capacity = new_cap
        self._graphs.clear()  # captured graphs point at the old cache tensors

    def move_slot(self, src: int, dst: int, length: int) -> None:
        for cache in (self.k_cache, self.v_cache):
            for t in cache:
                t[dst, :, :length] = t[src, :, :length]

    @staticmethod
    def _norm(module: Any, x: torch.Tensor) -> torch.Tensor:
        """transformers' RMSNorm with one fused kernel instead of five ops: in float32
        the weight goes into the kernel; in bfloat16 the statistics and the weight are
        applied in float32 and the result rounded once to bfloat16."""
        eps = getattr(module, "variance_epsilon", None) or module.eps
        if module.weight.dtype == torch.float32:
            return F.rms_norm(x, (x.shape[-1],), weight=module.weight, eps=eps)
        # a float32 residual in, the weights' dtype out (the input of the next matmul)
        normed = F.rms_norm(x.float(), (x.shape[-1],), eps=eps) * module.weight.float()
        return normed.to(module.weight.dtype)

    def _qkv(
        self, i: int, h_BTd: torch.Tensor, cos_BTD: torch.Tensor, sin_BTD: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rotated queries and keys and the values, each (B, heads, T, D). Rotary is
        applied to queries and keys together (same elementwise ops as transformers)."""
        attn = self.layers[i].self_attn
        B, T, _ = h_BTd.shape
        w_qkv, b_qkv, _ = self._fused[i]
        qkv = F.linear(h_BTd, w_qkv, b_qkv).view(B, T, self.n_q + 2 * self.n_kv, self.head_dim)
        qk, v = qkv[:, :, : self.n_q + self.n_kv], qkv[:, :, self.n_q + self.n_kv :]
        if hasattr(attn, "q_norm"):  # qwen3: per-head RMSNorm before rotary
            q_part, k_part = qk[:, :, : self.n_q], qk[:, :, self.n_q :]
            qk = torch.cat(
                [self._norm(attn.q_norm, q_part), self._norm(attn.k_norm, k_part)], dim=2
            )
        cos, sin = cos_BTD[:, :, None], sin_BTD[:, :, None]
        half = self.head_dim // 2
        rotated = torch.cat((-qk[..., half:], qk[..., :half]), dim=-1)
        qk = qk * cos + rotated * sin
        q, k = qk.split([self.n_q, self.n_kv], dim=2)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    @torch.no_grad()
    def prefill(
        self, prompts: Sequence[Sequence[int]], slots: Sequence[Sequence[int]]
    ) -> torch.Tensor:
        """Run ``prompts`` causally in one forward, right-padded to the longest; write
        prompt n's keys and values into every slot of ``slots[n]`` (the samples of one
        prompt share its prefill); return each prompt's last-position logits_NV."""
        self.prefill_forwards += 1
        return self._forward([], [], prompts, slots)

    @torch.no_grad()
    def decode(
        self,
        tokens_B: list[int],
        positions_B: list[int],
        prompts: Sequence[Sequence[int]] = (),
        slots: Sequence[Sequence[int]] = (),
    ) -> torch.Tensor:
        """One token for each of slots 0..B-1 at its own position and, in the same
        forward, the prefill of ``prompts`` into ``slots`` (all >= B): every weight is
        read once for both. Returns logits of the B decode rows, then of each prompt's
        last position: logits_(B+N)V."""
        return self._forward(tokens_B, positions_B, prompts, slots)

    def can_graph(self, positions_B: Sequence[int], steps: int) -> bool:
        """Whether ``decode_graphed`` can serve rows at ``positions_B`` for ``steps`` steps
        (the last step writes position max + steps - 1, which must fit the context)."""
        return (
            self.graphs_enabled
            and 0 < len(positions_B) <= self.max_slots
            and max(positions_B) + steps <= self.context
        )

    @torch.no_grad()
    def decode_graphed(
        self,
        tokens_B: Sequence[int],
        positions_B: Sequence[int],
        temperatures_B: Sequence[float],
        uniforms_SB: Sequence[Sequence[float]],
    ) -> tuple[list[list[float]], list[list[float]]]:
        """``len(uniforms_SB)`` = S decode steps for slots 0..B-1 as one CUDA-graph
        replay, each step's token sampled on the device and fed to the next (rows
        without a top-p nucleus; temperature 0 is greedy). Row b starts from token
        ``tokens_B[b]`` at position ``positions_B[b]`` and writes keys and values at
        positions pos_b .. pos_b + S - 1. Returns (tokens_SB, logprobs_SB) as lists; a
        caller discards a row's tokens after its stop. Tokens and logprobs equal S
        single eager steps of the same captured computation; the slots B..bucket-1
        (free) receive the padding rows' keys and values."""
        B, S = len(tokens_B), len(uniforms_SB)
        need = max(positions_B) + S
        self._ensure_capacity(need)
        bucket = batch_bucket(B, self.max_slots)
        length = length_bucket(need, self.capacity)
        for j in range(S):
            self.kv_positions_read += sum(positions_B) + B * (j + 1)
        key = (bucket, length, S)
        g = self._graphs.get(key)
        fresh = g is None
        if g is None:
            g = DecodeGraph(bucket, length, S, self.device)
        st = g.staged
        st.zero_()
        st[2].fill_(1.0)
        st[3].fill_(1.0)
        st[0, :B] = torch.tensor(list(tokens_B), dtype=torch.float32)
        st[1, :B] = torch.tensor(list(positions_B), dtype=torch.float32)
        temps = list(temperatures_B)
        st[2, :B] = torch.tensor([t if t > 0 else 1.0 for t in temps], dtype=torch.float32)
        st[3, :B] = torch.tensor([1.0 if t == 0 else 0.0 for t in temps], dtype=torch.float32)
        st[4:, :B] = torch.tensor([list(u) for u in uniforms_SB], dtype=torch.float32)
        g.inputs.copy_(st, non_blocking=True)
        if self.device.type != "cuda":  # the same computation, run eagerly (tests on CPU)
            self._graph_body(g)
        else:
            if fresh:
                self._capture(g)  # its warm-up computes this step's own writes: harmless
                self._graphs[key] = g
            g.graph.replay()
        out = g.outputs[:, :B].cpu()
        return out[:S].long().tolist(), out[S:].tolist()

    def _capture(self, g: DecodeGraph) -> None:
        """Warm up (on a side stream, with the step's real inputs, so the cache writes
        are the ones the replay makes again) and capture ``g``; graphs share one
        memory pool (they replay one at a time on one stream)."""
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            self._graph_body(g)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        # thread_local: the learner may run CUDA work in another thread meanwhile
        with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
            self._graph_body(g)
        self._pool = graph.pool()
        g.graph = graph
        self.graph_captures += 1

    def _graph_body(self, g: DecodeGraph) -> None:
        """What a decode graph runs: S steps of forward + ``sample_rows``, each feeding
        its tokens and position + 1 to the next; results into ``g.outputs``."""
        inp, S = g.inputs, g.steps
        tok_B, pos_B = inp[0].long(), inp[1].long()
        temps_B, greedy_B = inp[2], inp[3] > 0.5
        for j in range(S):
            rows, mask_BT, T = self._decode_plan(pos_B, g.length)
            logits_BV = self._decode_rows(tok_B, pos_B, rows, mask_BT, T)
            tok_B, lp_B = sample_rows(logits_BV, temps_B, greedy_B, inp[4 + j])
            g.outputs[j].copy_(tok_B)
            g.outputs[S + j].copy_(lp_B)
            pos_B = pos_B + 1

    def _decode_rows(
        self,
        tok_B: torch.Tensor,
        pos_B: torch.Tensor,
        rows: torch.Tensor,
        mask_BT: torch.Tensor,
        T: int,
    ) -> torch.Tensor:
        """The decode half of ``_forward`` on device tensors (no host values): every
        row one token at its position against the cache; logits_BV."""
        x = self.model.model.embed_tokens(tok_B[None]).float()
        cos, sin = (t.to(self.dtype) for t in self.model.model.rotary_emb(x, pos_B[None]))
        for i, layer in enumerate(self.layers):
            q, k, v = self._qkv(i, self._norm(layer.input_layernorm, x), cos, sin)
            o_BD = self._attend_cache(i, q[0], k[0], v[0], rows, mask_BT, T)
            x = x + layer.self_attn.o_proj(o_BD)[None]
            x = x + self._mlp(i, self._norm(layer.post_attention_layernorm, x))
        return self._logits(x[0])

    def _forward(
        self,
        tokens_B: Sequence[int],
        positions_B: Sequence[int],
        prompts: Sequence[Sequence[int]],
        slots: Sequence[Sequence[int]],
    ) -> torch.Tensor:
        """Decode rows and right-padded prompts as one flat sequence of M = B + N x P
        tokens through every matmul; attention splits into the decode part (against
        the cache) and the prefill part (causal within each prompt)."""
        dev = self.device
        B, N = len(tokens_B), len(prompts)
        lengths_N = [len(p) for p in prompts]
        P = max(lengths_N, default=0)
        T = max(positions_B, default=-1) + 1
        self._ensure_capacity(max(T, P + 1))
        ids_NP = torch.zeros((N, P), dtype=torch.long)
        for n, p in enumerate(prompts):
            ids_NP[n, : len(p)] = torch.as_tensor(list(p))
        pos_B = torch.tensor(list(positions_B), dtype=torch.long)
        ids_M = torch.cat([torch.tensor(list(tokens_B), dtype=torch.long), ids_NP.reshape(-1)])
        pos_M = torch.cat([pos_B, torch.arange(P).repeat(N)]).to(dev)
        x = self.model.model.embed_tokens(ids_M.to(dev)[None]).float()  # residual: float32
        cos, sin = (t.to(self.dtype) for t in self.model.model.rotary_emb(x, pos_M[None]))
        self.kv_positions_read += sum(positions_B) + B
        dec = self._decode_plan(pos_B.to(dev), T) if B else None
        dst = torch.tensor([s for group in slots for s in group], device=dev)
        src = torch.tensor([n for n, group in enumerate(slots) for _ in group], device=dev)
        for i, layer in enumerate(self.layers):
            q, k, v = self._qkv(i, self._norm(layer.input_layernorm, x), cos, sin)
            parts = []
            if dec is not None:
                parts.append(self._attend_cache(i, q[0, :, :B], k[0, :, :B], v[0, :, :B], *dec))
            if N:
                parts.append(
                    self._attend_prompts(i, q[0, :, B:], k[0, :, B:], v[0, :, B:], N, P, dst, src)
                )
            o_MD = torch.cat(parts) if len(parts) > 1 else parts[0]
            x = x + layer.self_attn.o_proj(o_MD)[None]
            x = x + self._mlp(i, self._norm(layer.post_attention_layernorm, x))
        last = [B + n * P + length - 1 for n, length in enumerate(lengths_N)]
        return self._logits(x[0, list(range(B)) + last])

    def _decode_plan(self, pos_B: torch.Tensor, T: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Cache rows the decode tokens write and the additive mask they attend with."""
        B = pos_B.shape[0]
        # Flat row of (slot b, head h, position pos_b) in a cache viewed as (S*H*cap, D):
        # index_copy_ there is far faster on CPU than advanced-index assignment.
        heads_H = torch.arange(self.n_kv, device=self.device)
        rows_BH = (
            torch.arange(B, device=self.device)[:, None] * self.n_kv + heads_H
        ) * self.capacity + pos_B[:, None]
        # valid key positions: 0..pos_b inclusive (the new token attends to itself). An
        # additive float mask: SDPA on CPU is several times slower with a boolean one.
        valid_BT = torch.arange(T, device=self.device)[None, :] <= pos_B[:, None]
        mask_BT = torch.zeros(valid_BT.shape, dtype=self.dtype, device=self.device)
        return rows_BH.reshape(-1), mask_BT.masked_fill(~valid_BT, float("-inf")), T

    def _attend_cache(
        self,
        i: int,
        q_HBD: torch.Tensor,
        k_HBD: torch.Tensor,
        v_HBD: torch.Tensor,
        rows: torch.Tensor,
        mask_BT: torch.Tensor,
        T: int,
    ) -> torch.Tensor:
        """Decode attention of layer i: write the B new keys/values into the cache, attend
        positions 0..pos_b of each slot; returns o (B, n_q x D)."""
        B = q_HBD.shape[1]
        k_cache, v_cache = self.k_cache[i], self.v_cache[i]
        k_cache.view(-1, self.head_dim).index_copy_(
            0, rows, k_HBD.transpose(0, 1).reshape(-1, self.head_dim)
        )
        v_cache.view(-1, self.head_dim).index_copy_(
            0, rows, v_HBD.transpose(0, 1).reshape(-1, self.head_dim)
        )
        # query head h uses KV head h // g: the g query heads of a KV head become g queries
        q_BKGD = q_HBD.transpose(0, 1).reshape(B, self.n_kv, self.n_q // self.n_kv, self.head_dim)
        o = F.scaled_dot_product_attention(
            q_BKGD,
            k_cache[:B, :, :T],
            v_cache[:B, :, :T],
            attn_mask=mask_BT[:, None, None],
            scale=self.layers[i].self_attn.scaling,
        )
        return o.reshape(B, -1)

    def _attend_prompts(
        self,
        i: int,
        q_HMD: torch.Tensor,
        k_HMD: torch.Tensor,
        v_HMD: torch.Tensor,
        N: int,
        P: int,
        dst: torch.Tensor,
        src: torch.Tensor,
    ) -> torch.Tensor:
        """Prefill attention of layer i: causal within each right-padded prompt; its keys
        and values go to the prompt's slots. Returns o (N x P, n_q x D)."""
        q, k, v = (
            t.reshape(t.shape[0], N, P, self.head_dim).transpose(0, 1)
            for t in (q_HMD, k_HMD, v_HMD)
        )
        self.k_cache[i][dst, :, :P] = k[src]
        self.v_cache[i][dst, :, :P] = v[src]
        o = F.scaled_dot_product_attention(
            q,
            k,
            v,
            is_causal=True,
            scale=self.layers[i].self_attn.scaling,
            enable_gqa=self.n_q != self.n_kv,
        )
        return o.transpose(1, 2).reshape(N * P, -1)
