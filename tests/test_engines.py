"""Torch and HF engines on the micro model: exactness against transformers, versions
across in-flight updates, nothing lost under concurrency, clear errors."""

from __future__ import annotations

import pytest
import torch

from recipe_arena.config import EngineConfig
from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.engines import GenerationRequest, SamplingParams, build_engine
from recipe_arena.models.factory import build_micro

PROMPTS = ["<|im_start|>user\n12+7=<|im_end|>\n", "hello", "The quick brown fox jumps over", "a"]


@pytest.fixture(scope="module")
def micro():
    torch.set_num_threads(1)
    return build_micro(seed=3)


def _ids(tok, text: str) -> tuple[int, ...]:
    return tuple(tok(text)["input_ids"])


def _req(rid: str, prompt: tuple[int, ...], **sampling) -> GenerationRequest:
    return GenerationRequest(rid, prompt, SamplingParams(**sampling))


def _trainer_logprobs(
    model, prompt: tuple[int, ...], tokens: tuple[int, ...], temperature: float
) -> list[float]:
    full_1L = torch.tensor([list(prompt) + list(tokens)])
    with torch.no_grad():
        return sequence_logprobs(model, full_1L, temperature=temperature)[0, len(prompt) :].tolist()


@pytest.mark.parametrize("name", ["torch", "hf"])
def test_greedy_matches_transformers_generate(micro, name):
    """Greedy decoding is deterministic, so the engine must emit exactly the tokens of
    ``model.generate(do_sample=False)`` for each prompt run alone. max_batch_size=2 with
    four prompts of different lengths makes the torch engine admit arrivals while other
    sequences are mid-decode (continuous batching with slot moves)."""
    model, tok = micro
    eng = build_engine(name, model, tok, EngineConfig(max_batch_size=2))
    try:
        caps = [40, 7, 25, 3]
        reqs = [
            _req(f"g{i}", _ids(tok, p), max_new_tokens=c, temperature=0.0, ignore_eos=True)
            for i, (p, c) in enumerate(zip(PROMPTS, caps, strict=True))
        ]
        outs = eng.generate(reqs)
    finally:
        eng.close()
    for r, c, cap in zip(reqs, outs, caps, strict=True):
        ref = model.generate(
            torch.tensor([r.prompt_tokens]), max_new_tokens=cap, do_sample=False, eos_token_id=None
        )[0, len(r.prompt_tokens) :]
        assert c.tokens == tuple(ref.tolist())
        assert c.finish_reason == "length" and c.token_versions == (0,) * cap


@pytest.mark.parametrize("name", ["torch", "hf"])
def test_behaviour_logprobs_equal_trainer_logprobs(micro, name):
    """Sampled at T=0.7, each behaviour logprob is log softmax(logits/0.7)[token]; the
    trainer recomputes the same quantity with one full forward (sequence_logprobs at
    temperature 0.7), so they agree to fp32 rounding (< 1e-4). Greedy (T=0) reports the
    untempered logprob of the argmax: sequence_logprobs at temperature 1."""
    model, tok = micro
    eng = build_engine(name, model, tok, EngineConfig(max_batch_size=4))
    try:
        sampled = eng.generate(
            [
                _req(f"s{i}", _ids(tok, p), max_new_tokens=30, temperature=0.7, n=2, seed=i)
                for i, p in enumerate(PROMPTS)
            ]
        )
        greedy = eng.generate(
            [_req("gr", _ids(tok, PROMPTS[0]), max_new_tokens=20, temperature=0.0)]
        )
    finally:
        eng.close()
    for c in sampled:
        ref = _trainer_logprobs(model, c.prompt_tokens, c.tokens, 0.7)
        assert max(abs(a - b) for a, b in zip(c.logprobs, ref, strict=True)) < 1e-4
    ref = _trainer_logprobs(model, greedy[0].prompt_tokens, greedy[0].tokens, 1.0)
    assert max(abs(a - b) for a, b in zip(greedy[0].logprobs, ref, strict=True)) < 1e-4


def _tiny(arch: str, vocab: int):
    """A 2-layer model of another family: GQA (4 query heads share 1 or 2 KV heads),
    Qwen2's q/k/v biases, Qwen3's per-head q/k norms."""
    import transformers as tf

    common = dict(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=128,
    )
    cfgs = {
        "llama-gqa": (tf.LlamaConfig, dict(num_key_value_heads=1)),
        "qwen2": (tf.Qwen2Config, dict(num_key_value_heads=2, use_sliding_window=False)),
        "qwen3": (
            tf.Qwen3Config,
            dict(num_key_value_heads=2, head_dim=16, use_sliding_window=False),
        ),
    }
    cls, extra = cfgs[arch]
    torch.manual_seed(0)
    model = tf.AutoModelForCausalLM.from_config(cls(**common, **extra)).eval()
    if arch == "qwen2":  # random biases, so a bias-dropping bug would show
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                torch.nn.init.normal_(proj.bias, std=0.5)
    return model


@pytest.mark.parametrize("arch", ["llama-gqa", "qwen2", "qwen3"])
def test_torch_engine_greedy_on_other_llama_family_models(micro, arch):
    """Same check as above (tokens equal ``generate``'s) on models whose attention
    differs from the micro model's: grouped KV heads, projection biases, q/k norms."""
    _, tok = micro
    model = _tiny(arch, len(tok))
    eng = build_engine("torch", model, tok, EngineConfig(max_batch_size=2))
    try:
        reqs = [
            _req(f"a{i}", _ids(tok, p), max_new_tokens=12, temperature=0.0, ignore_eos=True)
            for i, p in enumerate(PROMPTS[:3])
        ]
        outs = eng.generate(reqs)
    finally:
        eng.close()
    for r, c in zip(reqs, outs, strict=True):
        ref = model.generate(
            torch.tensor([r.prompt_tokens]), max_new_tokens=12, do_sample=False, eos_token_id=None
        )
        assert c.tokens == tuple(ref[0, len(r.prompt_tokens) :].tolist())


def test_torch_engine_refuses_other_architectures_clearly(micro):
    import transformers as tf

    _, tok = micro
    gpt2 = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=1, n_head=2))
    with pytest.raises(ValueError, match="model type 'gpt2' is not supported; supported: llama"):
        build_engine("torch", gpt2, tok)
