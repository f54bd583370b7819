"""The vLLM engine behind the same protocol (runs where vLLM is installed:
``make vllm``, then ``make test-vllm``).

One engine start takes tens of seconds on a small CPU, so the module shares one engine
and the tests are marked slow as well as vllm."""

from __future__ import annotations

import time

import pytest
import torch

from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.engines import EngineError, GenerationRequest, SamplingParams, build_engine
from recipe_arena.engines.vllm_engine import vllm_available
from recipe_arena.models.factory import build_micro

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(not vllm_available(), reason="vLLM is not installed (make vllm)"),
]

PROMPTS = ["<|im_start|>user\n12+7=<|im_end|>\n", "hello", "The quick brown fox"]


@pytest.fixture(scope="module")
def setup():
    old, tok = build_micro(seed=3)
    new, _ = build_micro(seed=4)
    eng = build_engine("vllm", old, tok)
    yield eng, old, new, tok
    eng.close()


def _req(rid, prompt, **s):
    return GenerationRequest(rid, tuple(prompt), SamplingParams(**s))


def test_vllm_greedy_and_logprobs_match_transformers(setup):
    """Greedy tokens equal ``generate``'s; sampled (T=0.7) behaviour logprobs equal
    log softmax(logits/0.7) recomputed by the trainer (< 1e-4, fp32); ``score`` equals
    the trainer's temperature-1 logprobs."""
    eng, old, _, tok = setup
    ids = [tok(p)["input_ids"] for p in PROMPTS]
    greedy = eng.generate(
        [
            _req(f"g{i}", p, max_new_tokens=25, temperature=0.0, ignore_eos=True)
            for i, p in enumerate(ids)
        ]
    )
    for p, c in zip(ids, greedy, strict=True):
        ref = old.generate(torch.tensor([p]), max_new_tokens=25, do_sample=False, eos_token_id=None)
        assert c.tokens == tuple(ref[0, len(p) :].tolist())
    sampled = eng.generate(
        [
            _req(f"s{i}", p, max_new_tokens=25, temperature=0.7, seed=i, n=2)
            for i, p in enumerate(ids)
        ]
    )
    for c in sampled:
        full = torch.tensor([list(c.prompt_tokens) + list(c.tokens)])
        with torch.no_grad():
            ref = sequence_logprobs(old, full, temperature=0.7)[0, len(c.prompt_tokens) :].tolist()
        assert max(abs(a - b) for a, b in zip(c.logprobs, ref, strict=True)) < 1e-4
    scored = eng.score(ids[0], sampled[0].tokens)
    with torch.no_grad():
        full = torch.tensor([list(ids[0]) + list(sampled[0].tokens)])
        ref = sequence_logprobs(old, full)[0, len(ids[0]) :].tolist()
    assert max(abs(a - b) for a, b in zip(scored, ref, strict=True)) < 1e-4


def test_vllm_in_flight_update_keeps_requests(setup):
    """A 300-token request spans an update: it completes with all 300 tokens, versions
    0...0 then 1...1; requests submitted right after the update are served under
    version 1 only, and none is lost. After the update greedy output equals the new
    model's."""
    eng, old, new, tok = setup
    prompt = tok(PROMPTS[0])["input_ids"]
    eng.submit(_req("long", prompt, max_new_tokens=300, temperature=0.0, ignore_eos=True))
    time.sleep(0.3)
    eng.update_weights(new.state_dict(), version=1)
    for i in range(4):
        eng.submit(_req(f"after{i}", prompt, max_new_tokens=10, temperature=0.0, ignore_eos=True))
    got = {c.request_id: c for c in (eng.get(timeout=120) for _ in range(5))}
    assert sorted(got) == ["after0", "after1", "after2", "after3", "long"]
    v = got["long"].token_versions
    k = v.index(1)
    assert len(v) == 300 and k > 0 and v == (0,) * k + (1,) * (300 - k)
    ref = new.generate(
        torch.tensor([prompt]), max_new_tokens=10, do_sample=False, eos_token_id=None
    )
    assert got["after0"].tokens == tuple(ref[0, len(prompt) :].tolist())
    assert got["after0"].token_versions == (1,) * 10


def test_vllm_bad_requests(setup):
    eng, _, _, _ = setup
    with pytest.raises(EngineError, match="empty prompt"):
        eng.submit(_req("e", (), max_new_tokens=3))
    with pytest.raises(EngineError, match="max_new_tokens=0"):
        eng.submit(_req("z", (5,), max_new_tokens=0))
