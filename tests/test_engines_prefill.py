"""The torch engine's batched prefill and its bf16 option, on the micro model."""

from __future__ import annotations

import pytest
import torch

from recipe_arena.config import EngineConfig
from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.engines import GenerationRequest, SamplingParams, build_engine
from recipe_arena.models.factory import build_micro


@pytest.fixture(scope="module")
def micro():
    torch.set_num_threads(1)
    return build_micro(seed=3)


def test_prefill_batches_prompts_within_max_prefill_tokens(micro):
    """Four prompts of 5, 3, 5 and 2 tokens, two samples each (8 slots), admitted at
    once. max_prefill_tokens=4096 prefills all four in 1 forward (4 x 5 = 20 padded
    tokens); 10 allows two prompts of <= 5 tokens per forward: 2 forwards; 1 gives each
    prompt its own: 4 forwards. The greedy tokens are the same in all three (padding
    never reaches a real token) and equal transformers' ``generate``."""
    model, tok = micro
    prompts = [tuple(tok(t)["input_ids"]) for t in ["hello", "abc", "12+7=", "ok"]]
    assert [len(p) for p in prompts] == [5, 3, 5, 2]
    outs, forwards = [], []
    for limit in (4096, 10, 1):
        eng = build_engine(
            "torch", model, tok, EngineConfig(max_batch_size=8, max_prefill_tokens=limit)
        )
        try:
            eng.pause()  # all four wait, so they are admitted together
            got = []
            for i, p in enumerate(prompts):
                eng.submit(
                    GenerationRequest(
                        f"p{i}",
                        p,
                        SamplingParams(max_new_tokens=12, temperature=0.0, n=2, ignore_eos=True),
                    )
                )
            eng.resume()
            while len(got) < 8:
                got.append(eng.get(timeout=60))
            forwards.append(eng.runner.prefill_forwards)
        finally:
            eng.close()
        outs.append(sorted((c.request_id, c.sample_index, c.tokens) for c in got))
    assert forwards == [1, 2, 4]
    assert outs[0] == outs[1] == outs[2]
    for rid, _, tokens in outs[0]:
        p = prompts[int(rid[1:])]
        ref = model.generate(
            torch.tensor([p]), max_new_tokens=12, do_sample=False, eos_token_id=None
        )[0, len(p) :]
        assert tokens == tuple(ref.tolist())


def test_bf16_engine_halves_the_bytes_and_stays_close_to_fp32(micro):
    """dtype=bfloat16 stores weights and KV cache in 2 bytes instead of 4: the KV bytes
    per position are 2 x layers x kv_heads x head_dim x 2 = 2 x 4 x 2 x 64 x 2 = 2,048
    (4,096 in fp32). Its T=1 behaviour logprobs differ from the fp32 trainer's
    recomputation, but by little: bf16 keeps 8 mantissa bits (relative rounding 2^-9),
    so a logprob of a few nats moves by hundredths, well under 0.25; fp32 agrees to
    < 1e-4."""
    model, tok = micro
    prompt = tuple(tok("The quick brown fox")["input_ids"])
    errs = {}
    for dtype, kv_bytes in (("float32", 4096), ("bfloat16", 2048)):
        eng = build_engine("torch", model, tok, EngineConfig(dtype=dtype))
        try:
            assert eng.runner.kv_bytes_per_position() == kv_bytes
            c = eng.generate(
                [GenerationRequest("s", prompt, SamplingParams(max_new_tokens=40, seed=1))]
            )[0]
        finally:
            eng.close()
        with torch.no_grad():
            ref = sequence_logprobs(model, torch.tensor([list(prompt) + list(c.tokens)]))
        ref_T = ref[0, len(prompt) :].tolist()
        errs[dtype] = max(abs(a - b) for a, b in zip(c.logprobs, ref_T, strict=True))
    assert errs["float32"] < 1e-4
    assert 1e-4 < errs["bfloat16"] < 0.25


def test_arrivals_join_the_decode_forward(micro):
    """Four prompts, two slots, output caps 3, 20, 6 and 9 tokens: the first two are
    prefilled together (one prefill forward, nothing is decoding yet); the other two
    are admitted when a slot frees, while the other sequence decodes, and ride along
    in that decode forward instead of a prefill forward of their own. Greedy tokens
    still equal ``generate``'s, and the decode forwards number the longest chain:
    the 20-token sequence needs 19 steps after its prefill token, and the prompts
    admitted during them add none."""
    model, tok = micro
    prompts = [tuple(tok(t)["input_ids"]) for t in ["hello", "abc", "12+7=", "ok"]]
    caps = [3, 20, 6, 9]
    eng = build_engine("torch", model, tok, EngineConfig(max_batch_size=2))
    try:
        eng.pause()
        for i, (p, c) in enumerate(zip(prompts, caps, strict=True)):
            sp = SamplingParams(max_new_tokens=c, temperature=0.0, ignore_eos=True)
            eng.submit(GenerationRequest(f"p{i}", p, sp))
        eng.resume()
        got = {c.request_id: c for c in (eng.get(timeout=60) for _ in range(4))}
        stats = eng.stats().extra
    finally:
        eng.close()
    assert stats["prefill_forwards"] == 1
    assert stats["steps"] == 19
    for i, (p, c) in enumerate(zip(prompts, caps, strict=True)):
        ref = model.generate(
            torch.tensor([p]), max_new_tokens=c, do_sample=False, eos_token_id=None
        )
        assert got[f"p{i}"].tokens == tuple(ref[0, len(p) :].tolist())


def test_fp16_engine_and_fp32_head(micro):
    """dtype=float16 keeps 10 mantissa bits against bfloat16's 7 (relative rounding 2^-11
    against 2^-8), so its behaviour logprobs sit several times closer to the fp32
    trainer's: here under half of bf16's error. ``lm_head_fp32`` keeps a float32 copy of
    the head's weight, equal to the model's, and an update refreshes it (the micro model
    ties the head to the embedding, so the embedding's key alone updates it)."""
    model, tok = micro
    prompt = tuple(tok("The quick brown fox")["input_ids"])
    errs = {}
    for dtype in ("bfloat16", "float16"):
        eng = build_engine("torch", model, tok, EngineConfig(dtype=dtype))
        try:
            c = eng.generate(
                [GenerationRequest("s", prompt, SamplingParams(max_new_tokens=40, seed=1))]
            )[0]
        finally:
            eng.close()
        with torch.no_grad():
            ref = sequence_logprobs(model, torch.tensor([list(prompt) + list(c.tokens)]))
        ref_T = ref[0, len(prompt) :].tolist()
        errs[dtype] = sum(abs(a - b) for a, b in zip(c.logprobs, ref_T, strict=True)) / len(ref_T)
    assert 0 < errs["float16"] < errs["bfloat16"] / 2
    eng = build_engine("torch", model, tok, EngineConfig(dtype="float16", lm_head_fp32=True))
    try:
        head = eng.runner.head_fp32
        assert head is not None and head.dtype == torch.float32
        assert torch.equal(head, model.lm_head.weight.detach())
        moved = model.model.embed_tokens.weight.detach() + 1e-3
        eng.update_weights({"model.embed_tokens.weight": moved}, version=1)
        assert torch.equal(eng.runner.head_fp32, moved)
        c = eng.generate(
            [GenerationRequest("h", prompt, SamplingParams(max_new_tokens=8, seed=1))]
        )[0]
        assert len(c.tokens) == 8
    finally:
        eng.close()
    plain = build_engine("torch", model, tok, EngineConfig(dtype="bfloat16"))
    try:
        assert plain.runner.head_fp32 is None
    finally:
        plain.close()
