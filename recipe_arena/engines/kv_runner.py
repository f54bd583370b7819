"""Batched forward passes with a slot KV cache, over a transformers Llama-family model.

The runner reads the model's own modules and weights (embedding, norms, projections,
MLP, rotary embedding, LM head) and runs the layers itself, with q/k/v and gate/up
matmuls fused (the module weights become views into the fused matrices), so that
sequences at different positions decode together: slot s holds one sequence's keys
and values at positions 0..len_s-1, and a mask hides the rest. Active sequences
occupy slots 0..B-1; a finished sequence's slot is refilled by moving the last one in
(one slot copy, not a re-pack).

Supported: model types whose decoder layer is pre-norm attention + MLP with
q/k/v/o projections (llama, mistral without a sliding window, qwen2, qwen3's q/k norms),
and mixtral, whose sparse mixture-of-experts MLP runs as its own module (unfused).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from recipe_arena.engines.common import HFCausalLM

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "mixtral")


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

    def __init__(self, model: HFCausalLM, max_slots: int, context: int) -> None:
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
        self.k_cache: list[torch.Tensor] = []
        self.v_cache: list[torch.Tensor] = []
        self._ensure_capacity(min(context, 128))
        self._fused = [self._fuse(layer) for layer in self.layers]

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

    def move_slot(self, src: int, dst: int, length: int) -> None:
        for cache in (self.k_cache, self.v_cache):
            for t in cache:
                t[dst, :, :length] = t[src, :, :length]

    @staticmethod
    def _norm(module: Any, x: torch.Tensor) -> torch.Tensor:
        """transformers' RMSNorm (statistics in float32, weight applied in the input
        dtype) with one fused kernel for the statistics instead of five ops."""
        eps = getattr(module, "variance_epsilon", None) or module.eps
        return module.weight * F.rms_norm(x.float(), (x.shape[-1],), eps=eps).to(x.dtype)

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
    def prefill(self, tokens: list[int], slots: list[int]) -> torch.Tensor:
        """Run ``tokens`` (one prompt) causally, write its KV into every slot in
        ``slots`` (samples of one prompt share the prefill), return last-position logits_V."""
        P = len(tokens)
        self._ensure_capacity(P + 1)
        ids_1P = torch.tensor([tokens], device=self.device)
        x = self.model.model.embed_tokens(ids_1P)
        cos, sin = self.model.model.rotary_emb(x, torch.arange(P, device=self.device)[None])
        slot_idx = torch.tensor(slots, device=self.device)
        for i, layer in enumerate(self.layers):
            attn = layer.self_attn
            q, k, v = self._qkv(i, self._norm(layer.input_layernorm, x), cos, sin)
            self.k_cache[i][slot_idx, :, :P] = k
            self.v_cache[i][slot_idx, :, :P] = v
            o = F.scaled_dot_product_attention(
                q, k, v, is_causal=True, scale=attn.scaling, enable_gqa=self.n_q != self.n_kv
            )
            x = x + attn.o_proj(o.transpose(1, 2).reshape(1, P, -1))
            x = x + self._mlp(i, self._norm(layer.post_attention_layernorm, x))
        h = self._norm(self.model.model.norm, x[:, -1])
        return self.model.lm_head(h)[0]

    @torch.no_grad()
    def decode(self, tokens_B: list[int], positions_B: list[int]) -> torch.Tensor:
        """One token for each of slots 0..B-1 at its own position; returns logits_BV."""
        B = len(tokens_B)
        T = max(positions_B) + 1
        self._ensure_capacity(T)
        self.kv_positions_read += sum(positions_B) + B
        ids_B1 = torch.tensor(tokens_B, device=self.device)[:, None]
        pos_B = torch.tensor(positions_B, device=self.device)
        x = self.model.model.embed_tokens(ids_B1)
        cos, sin = self.model.model.rotary_emb(x, pos_B[:, None])
        # Flat row of (slot b, head h, position pos_b) in a cache viewed as (S*H*cap, D):
        # index_copy_ there is ~1000x faster on CPU than advanced-index assignment.
        heads_H = torch.arange(self.n_kv, device=self.device)
        rows_BH = (
            torch.arange(B, device=self.device)[:, None] * self.n_kv + heads_H
        ) * self.capacity + pos_B[:, None]
        rows = rows_BH.reshape(-1)
        # valid key positions: 0..pos_b inclusive (the new token attends to itself). An
        # additive float mask: SDPA on CPU is several times slower with a boolean one.
        valid_BT = torch.arange(T, device=self.device)[None, :] <= pos_B[:, None]
        mask_B11T = torch.zeros(valid_BT.shape, dtype=self.dtype, device=self.device)
        mask_B11T = mask_B11T.masked_fill(~valid_BT, float("-inf"))[:, None, None]
        for i, layer in enumerate(self.layers):
            attn = layer.self_attn
            q, k, v = self._qkv(i, self._norm(layer.input_layernorm, x), cos, sin)
            k_cache, v_cache = self.k_cache[i], self.v_cache[i]
            k_cache.view(-1, self.head_dim).index_copy_(
                0, rows, k[:, :, 0].reshape(-1, self.head_dim)
            )
            v_cache.view(-1, self.head_dim).index_copy_(
                0, rows, v[:, :, 0].reshape(-1, self.head_dim)
            )
            o = F.scaled_dot_product_attention(
                q,
                k_cache[:B, :, :T],
                v_cache[:B, :, :T],
                attn_mask=mask_B11T,
                scale=attn.scaling,
                enable_gqa=self.n_q != self.n_kv,
            )
            x = x + attn.o_proj(o.transpose(1, 2).reshape(B, 1, -1))
            x = x + self._mlp(i, self._norm(layer.post_attention_layernorm, x))
        h = self._norm(self.model.model.norm, x[:, 0])
        return self.model.lm_head(h)
