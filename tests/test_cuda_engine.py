"""The core on a GPU: engine and learner on CUDA against their CPU float32 runs, an
in-flight update on the GPU, and CUDA-graph decoding against eager decoding.

Tests marked ``cuda`` skip where no CUDA device exists (CI); ``scripts/gpu_check.py``
runs them on a GPU machine. The one unmarked test runs the graph's computation eagerly
on the CPU, so its multi-step, on-device sampling logic is checked everywhere.

Tolerances, float32 on both sides: the same maths in a different reduction order
differs by a few float32 ulps per operation, ~1e-6 relative on a logprob of a tiny
model, so 1e-4 absolute on logprobs and 1e-4 relative on loss and gradient norm leave
two orders of margin while a wrong device placement (a dropped mask, a stale weight)
moves them by 1e-1 or more. bfloat16 autocast keeps 8 mantissa bits (relative step
2**-8 = 0.4%), so its logprobs are held to 0.05 mean absolute difference.
"""

from __future__ import annotations

import copy
import time

import pytest
import torch

from recipe_arena.config import EngineConfig, RLConfig
from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.core.types import LearnerBatch
from recipe_arena.engines import GenerationRequest, SamplingParams, build_engine
from recipe_arena.models.factory import build_micro
from recipe_arena.wiring import LearnerSettings, make_learner

CUDA = torch.cuda.is_available()
PROMPT = "<|im_start|>user\nwhat is 3*4?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def micro():
    old, tok = build_micro(seed=3)
    new, _ = build_micro(seed=4)  # same shapes, different weights
    return old, new, tok


def _requests(tok, n: int, temperature: float, max_new: int = 40) -> list[GenerationRequest]:
    """n prompts of different lengths (the chat prompt, then 1..n-1 extra words)."""
    out = []
    for i in range(n):
        ids = tok(PROMPT.replace("3*4", "3*4" + " and 5" * i))["input_ids"]
        s = SamplingParams(max_new_tokens=max_new + 3 * i, temperature=temperature, n=2, seed=i)
        out.append(GenerationRequest(f"r{i}", tuple(ids), s))
    return out


def _generate(model, tok, cfg: EngineConfig, requests, graphs_on_cpu: bool = False):
    eng = build_engine("torch", model, tok, cfg)
    if graphs_on_cpu:
        eng.runner.graphs_enabled = True  # the graph's computation, run eagerly on CPU
    try:
        return eng.generate(requests), eng.stats()
    finally:
        eng.close()


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_graph_step_computation_equals_the_eager_step_on_cpu(micro, temperature):
    """The decode-graph body (S = 3 steps a replay, sampling on the device from staged
    uniforms) run eagerly on the CPU gives the eager engine's tokens, greedy and sampled:
    each sample draws its uniforms from its own stream in token order either way, and a
    row's tokens after its stop are discarded. Logprobs agree to float32 rounding (the
    graph pads the batch to a bucket, which changes reduction shapes, not values)."""
    model, _, tok = micro
    reqs = _requests(tok, 5, temperature)
    cfg = EngineConfig(max_batch_size=16, graph_steps=3)
    eager, _ = _generate(model, tok, cfg, reqs)
    graphed, stats = _generate(model, tok, cfg, reqs, graphs_on_cpu=True)
    assert [c.tokens for c in graphed] == [c.tokens for c in eager]
    assert [c.finish_reason for c in graphed] == [c.finish_reason for c in eager]
    diff = max(
        abs(a - b)
        for g, e in zip(graphed, eager, strict=True)
        for a, b in zip(g.logprobs, e.logprobs, strict=True)
    )
    assert diff < 1e-5
    assert stats.extra["graph_captures"] == 0  # on CPU nothing is captured


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device (run by scripts/gpu_check.py)")
def test_cuda_graph_decode_equals_eager_under_greedy(micro):
    """Float32 on the GPU, greedy: the engine with CUDA graphs (4 steps a replay) and
    without them produce identical tokens for every sample, and graphs were captured."""
    model, _, tok = micro
    reqs = _requests(tok, 6, 0.0, max_new=60)
    on, stats = _generate(model, tok, EngineConfig(device="cuda", graph_steps=4), reqs)
    off, _ = _generate(model, tok, EngineConfig(device="cuda", cuda_graphs=False), reqs)
    assert stats.extra["graph_captures"] >= 1
    assert [c.tokens for c in on] == [c.tokens for c in off]


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device (run by scripts/gpu_check.py)")
def test_cuda_graph_replay_is_bitwise_the_eager_body_in_bf16(micro):
    """bfloat16: one captured replay of the decode graph and the same body run eagerly
    on the same inputs write bitwise identical tokens and logprobs (a graph replays the
    kernels it recorded, so any difference would be a capture bug: a stale input, an
    output overwritten by a later step)."""
    model, _, tok = micro
    eng = build_engine("torch", model, tok, EngineConfig(device="cuda", dtype="bfloat16"))
    try:
        reqs = _requests(tok, 4, 1.0, max_new=30)
        eng.generate(reqs)  # fills the cache of slots 0..7 with real prompts
        eng.pause()
        r = eng.runner
        toks, pos = [5, 6, 7, 8], [20, 21, 22, 23]
        temps, unis = [0.0, 1.0, 0.7, 1.0], [[0.1, 0.5, 0.9, 0.3], [0.2, 0.6, 0.4, 0.8]]
        graphed = r.decode_graphed(toks, pos, temps, unis)
        g = next(g for g in r._graphs.values() if g.steps == len(unis))
        r._graph_body(g)  # eagerly, on the inputs the replay used
        out = g.outputs[:, :4].cpu()
        assert graphed == (out[:2].long().tolist(), out[2:].tolist())
    finally:
        eng.close()


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device (run by scripts/gpu_check.py)")
def test_engine_logprobs_cpu_fp32_against_gpu(micro):
    """Greedy tokens and behaviour logprobs of the engine on the GPU in float32 (graphs
    on) against the CPU: same tokens, logprobs within 1e-4; in bfloat16 on the GPU the
    logprobs of the CPU's tokens, scored by teacher forcing (``score``), within 0.05 on
    average."""
    model, _, tok = micro
    reqs = _requests(tok, 4, 0.0)
    cpu, _ = _generate(model, tok, EngineConfig(), reqs)
    gpu, _ = _generate(model, tok, EngineConfig(device="cuda"), reqs)
    assert [c.tokens for c in gpu] == [c.tokens for c in cpu]
    diff = max(
        abs(a - b)
        for g, c in zip(gpu, cpu, strict=True)
        for a, b in zip(g.logprobs, c.logprobs, strict=True)
    )
    assert diff < 1e-4
    eng = build_engine("torch", model, tok, EngineConfig(device="cuda", dtype="bfloat16"))
    try:
        c0 = cpu[0]
        bf = eng.score(c0.prompt_tokens, c0.tokens)
    finally:
        eng.close()
    mean = sum(abs(a - b) for a, b in zip(bf, c0.logprobs, strict=True)) / len(bf)
    assert mean < 0.05


def _batch(tok, model) -> LearnerBatch:
    """Four rows: a prompt and a 12-token greedy-free random completion each, lengths
    differing (right padding), mixed-sign advantages."""
    gen = torch.Generator().manual_seed(0)
    prompt = list(tok(PROMPT)["input_ids"])
    rows = [prompt + torch.randint(3, 60, (n,), generator=gen).tolist() for n in (12, 7, 10, 4)]
    L = max(map(len, rows))
    B = len(rows)
    tokens = torch.zeros(B, L, dtype=torch.long)
    attention = torch.zeros(B, L, dtype=torch.long)
    mask = torch.zeros(B, L)
    adv = torch.zeros(B, L)
    for i, (r, a) in enumerate(zip(rows, [0.5, -0.25, 0.75, -1.0], strict=True)):
        tokens[i, : len(r)] = torch.tensor(r)
        attention[i, : len(r)] = 1
        mask[i, len(prompt) : len(r)] = 1.0
        adv[i, len(prompt) : len(r)] = a
    with torch.no_grad():
        behaviour = sequence_logprobs(model, tokens, attention) * mask
    return LearnerBatch(tokens, mask, adv, behaviour, torch.where(mask > 0, 0, -1), attention)


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device (run by scripts/gpu_check.py)")
def test_learner_logprobs_cpu_fp32_against_gpu(micro):
    """The learner's forward on the GPU in float32 gives the CPU's logprobs within 1e-4
    on every real position; under bf16 autocast within 0.05 on average."""
    model, _, tok = micro
    batch = _batch(tok, model)
    cpu = make_learner(copy.deepcopy(model), LearnerSettings())
    gpu = make_learner(copy.deepcopy(model), LearnerSettings(device="cuda"))
    amp = make_learner(copy.deepcopy(model), LearnerSettings(device="cuda", bf16=True))
    with torch.no_grad():
        ref = cpu._logprobs(cpu.model, batch)
        fp32 = gpu._logprobs(gpu.model, batch.to("cuda")).cpu()
        bf16 = amp._logprobs(amp.model, batch.to("cuda")).cpu()
    real = batch.attention_BL.bool()
    assert (fp32 - ref)[real].abs().max() < 1e-4
    assert (bf16 - ref)[real].abs().mean() < 0.05


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device (run by scripts/gpu_check.py)")
def test_one_learner_step_loss_and_grad_norm_cpu_against_gpu(micro):
    """One optimiser step (lr 1e-3, so the weights move) on the same batch from the same
    weights: loss and gradient norm on the GPU in float32 within 1e-4 relative of the
    CPU's, and the updated weights within 1e-5; the policy version goes 0 -> 1 on both.
    With bf16 autocast the master weights and AdamW state stay float32 on the GPU."""
    model, _, tok = micro
    batch = _batch(tok, model)
    rl = RLConfig(lr=1e-3)
    cpu = make_learner(copy.deepcopy(model), LearnerSettings(rl=rl))
    gpu = make_learner(copy.deepcopy(model), LearnerSettings(rl=rl, device="cuda"))
    m_cpu, m_gpu = cpu.train_step(batch), gpu.train_step(batch)
    for key in ("loss/policy", "loss/grad_norm"):
        if key in m_cpu:
            assert abs(m_gpu[key] - m_cpu[key]) <= 1e-4 * max(1.0, abs(m_cpu[key])), key
    assert m_cpu["loss/grad_norm"] > 0
    w_cpu, w_gpu = cpu.weights(), gpu.weights()
    assert all(w_gpu[k].is_cuda for k in w_gpu)
    assert max(float((w_gpu[k].cpu() - w_cpu[k]).abs().max()) for k in w_cpu) < 1e-5
    assert cpu.version == gpu.version == 1
    amp = make_learner(copy.deepcopy(model), LearnerSettings(rl=rl, device="cuda", bf16=True))
    amp.train_step(batch)
    state = next(iter(amp.optimizer.state.values()))
    assert next(amp.model.parameters()).dtype == torch.float32
    assert state["exp_avg"].dtype == torch.float32 and state["exp_avg"].is_cuda


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device (run by scripts/gpu_check.py)")
def test_inflight_update_on_gpu_switches_versions_mid_sequence(micro):
    """Engine on the GPU (graphs on), greedy, EOS ignored: weights of another model,
    handed over as CUDA tensors (the learner's ``weights()`` on the same device), land
    while a 200-token request decodes. Its versions read 0...0 1...1 with the switch
    inside the sequence; the tokens before the switch are the old model's greedy
    continuation (the CPU engine's, same prompt); the update's stall is recorded."""
    old, new, tok = micro
    prompt = tuple(tok(PROMPT)["input_ids"])
    req = GenerationRequest("r", prompt, SamplingParams(200, temperature=0.0, ignore_eos=True))
    ref, _ = _generate(old, tok, EngineConfig(), [req])
    eng = build_engine("torch", old, tok, EngineConfig(device="cuda"))
    weights = {k: v.detach().clone().cuda() for k, v in new.state_dict().items()}
    try:
        eng.submit(req)
        deadline = time.monotonic() + 60
        while eng.stats().generated_tokens < 20:
            assert time.monotonic() < deadline, "engine produced no tokens"
            time.sleep(0.001)
        eng.update_weights(weights, version=1)
        c = eng.get(timeout=120)
        stall_ms = eng.stats().extra["last_update_ms"]
    finally:
        eng.close()
    assert c is not None and len(c.tokens) == 200
    v = c.token_versions
    k = v.index(1)
    assert 0 < k < 200 and v == (0,) * k + (1,) * (200 - k)
    assert c.tokens[:k] == ref[0].tokens[:k]
    assert 0 < stall_ms < 1000


def test_graph_buckets_by_hand():
    """Batch buckets double from 8 up to the slots: 1 -> 8, 9 -> 16, 33 -> 64; with 48
    slots 40 -> 64 is capped to 48. Length buckets: multiples of max(128, next_pow2 / 4):
    100 -> 128; 164 -> 256 (quantum 128); 600 -> 768 (next_pow2 1024, quantum 256);
    1100 -> 1536 (quantum 512); capped at the capacity: 1100 of 1200 -> 1200."""
    from recipe_arena.engines.decode_graph import batch_bucket, length_bucket

    assert [batch_bucket(n, 64) for n in (1, 8, 9, 33, 64)] == [8, 8, 16, 64, 64]
    assert batch_bucket(40, 48) == 48
    assert [length_bucket(t, 4096) for t in (100, 128, 164, 600, 1100)] == [
        128,
        128,
        256,
        768,
        1536,
    ]
    assert length_bucket(1100, 1200) == 1200
