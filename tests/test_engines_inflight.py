"""The torch engine under in-flight weight updates, concurrency and bad input."""

from __future__ import annotations

import random
import threading
import time

import pytest
import torch

from recipe_arena.config import EngineConfig
from recipe_arena.engines import EngineError, GenerationRequest, SamplingParams, build_engine
from recipe_arena.models.factory import build_micro

PROMPT = "<|im_start|>user\nwhat is 3*4?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def models():
    torch.set_num_threads(1)
    old, tok = build_micro(seed=3)
    new, _ = build_micro(seed=4)  # same shapes, different weights
    return old, new, tok


def _req(rid: str, prompt, **sampling) -> GenerationRequest:
    return GenerationRequest(rid, tuple(prompt), SamplingParams(**sampling))


def _update_mid_sequence(eng, state_dict, after_tokens: int) -> None:
    """Pause once ``after_tokens`` tokens exist, swap weights (version 1), resume."""
    deadline = time.monotonic() + 30
    while eng.stats().generated_tokens < after_tokens:
        assert time.monotonic() < deadline, "engine produced no tokens"
        time.sleep(0.001)
    eng.pause()
    eng.update_weights(state_dict, version=1)
    eng.resume()


def _split(versions) -> int:
    k = versions.index(1)
    assert 0 < k < len(versions)
    assert versions == (0,) * k + (1,) * (len(versions) - k)
    return k


@pytest.mark.parametrize("keep_kv", [True, False])
def test_request_spanning_an_update_switches_version_inside_the_sequence(models, keep_kv):
    """Greedy, so every token is an argmax we can recompute. Let k be the first token
    stamped version 1. Tokens before k are the old model's greedy continuation. After
    the switch:
    - recompute mode: the whole prefix prompt+tokens[:k] was re-encoded by the new
      model, so tokens[k:] are exactly the new model's greedy continuation of it;
    - keep-KV mode: keys/values of prompt+tokens[:k-1] stay those of the old model and
      the new model runs from tokens[k-1] on, so tokens[k:] are the argmaxes of the new
      model fed tokens[k-1:] on top of the old model's cache of that prefix."""
    old, new, tok = models
    prompt = list(tok(PROMPT)["input_ids"])
    eng = build_engine("torch", old, tok, EngineConfig(keep_kv_on_update=keep_kv))
    try:
        eng.submit(_req("r", prompt, max_new_tokens=80, temperature=0.0, ignore_eos=True))
        _update_mid_sequence(eng, new.state_dict(), after_tokens=5)
        c = eng.get(timeout=60)
    finally:
        eng.close()
    assert c is not None and c.finish_reason == "length" and len(c.tokens) == 80
    k = _split(c.token_versions)
    toks = list(c.tokens)
    with torch.no_grad():
        before = old.generate(
            torch.tensor([prompt]), max_new_tokens=k, do_sample=False, eos_token_id=None
        )
        assert toks[:k] == before[0, len(prompt) :].tolist()
        if not keep_kv:
            after = new.generate(
                torch.tensor([prompt + toks[:k]]),
                max_new_tokens=80 - k,
                do_sample=False,
                eos_token_id=None,
            )
            assert toks[k:] == after[0, len(prompt) + k :].tolist()
        else:
            past = old(torch.tensor([prompt + toks[: k - 1]]), use_cache=True).past_key_values
            logits = new(torch.tensor([toks[k - 1 : -1]]), past_key_values=past).logits[0]
            assert toks[k:] == logits.argmax(-1).tolist()


def test_requests_submitted_during_updates_are_not_lost(models):
    """24 requests are submitted while another thread pushes 15 weight updates
    (versions 1..15). Every request comes back exactly once, completed, with
    non-decreasing versions in 0..15, and the engine ends at version 15."""
    old, new, tok = models
    sds = [old.state_dict(), new.state_dict()]
    eng = build_engine("torch", old, tok, EngineConfig(max_batch_size=8))
    rng = random.Random(0)
    prompt = list(tok(PROMPT)["input_ids"])

    def learner() -> None:
        for v in range(1, 16):
            eng.update_weights(sds[v % 2], version=v)
            time.sleep(0.005)

    try:
        t = threading.Thread(target=learner)
        t.start()
        for i in range(24):
            eng.submit(
                _req(
                    f"q{i}",
                    prompt[: rng.randint(3, len(prompt))],
                    max_new_tokens=rng.randint(1, 40),
                    seed=i,
                )
            )
            time.sleep(0.002)
        got = [eng.get(timeout=60) for _ in range(24)]
        t.join()
        assert eng.get(timeout=0.05) is None
        assert eng.stats().version == 15
    finally:
        eng.close()
    assert sorted(c.request_id for c in got) == sorted(f"q{i}" for i in range(24))
    for c in got:
        assert c.finish_reason in ("stop", "length") and len(c.tokens) == len(c.token_versions) >= 1
        assert list(c.token_versions) == sorted(c.token_versions) and 0 <= c.token_versions[0] <= 15


def test_static_mode_waits_for_the_longest_member(models):
    """Batch size 2, lengths [10, 2, 2, 2, 2, 2] (EOS ignored). The prefill samples a
    sequence's first token, each decode step one more, so a length-L sequence needs
    L-1 steps. Continuous: A (10) runs 9 steps while B..F each join at the next step
    and leave after one: 9 steps. Static: {A,B} runs 9 steps, then {C,D} 1, {E,F} 1:
    11 steps. Greedy tokens are the same in both modes."""
    old, _, tok = models
    prompt = list(tok("abc")["input_ids"])
    results = {}
    for mode in ("continuous", "static"):
        eng = build_engine("torch", old, tok, EngineConfig(max_batch_size=2, mode=mode))
        try:
            eng.pause()
            for i, n in enumerate([10, 2, 2, 2, 2, 2]):
                eng.submit(
                    _req(f"m{i}", prompt, max_new_tokens=n, temperature=0.0, ignore_eos=True)
                )
            eng.resume()
            outs = sorted((eng.get(timeout=30) for _ in range(6)), key=lambda c: c.request_id)
            results[mode] = (eng.stats().extra["steps"], [c.tokens for c in outs])
        finally:
            eng.close()
    assert results["continuous"][0] == 9 and results["static"][0] == 11
    assert results["continuous"][1] == results["static"][1]


def test_short_requests_stream_back_before_long_ones(models):
    """A 3-token request submitted after a 60-token one finishes first: completions
    are handed back as each finishes, not in submission order."""
    old, _, tok = models
    prompt = list(tok("xyz")["input_ids"])
    eng = build_engine("torch", old, tok)
    try:
        eng.pause()
        eng.submit(_req("long", prompt, max_new_tokens=60, temperature=0.0, ignore_eos=True))
        eng.submit(_req("short", prompt, max_new_tokens=3, temperature=0.0, ignore_eos=True))
        eng.resume()
        first, second = eng.get(timeout=30), eng.get(timeout=30)
    finally:
        eng.close()
    assert (first.request_id, len(first.tokens)) == ("short", 3)
    assert (second.request_id, len(second.tokens)) == ("long", 60)


def test_seeded_sampling_is_reproducible_and_score_matches(models):
    """A seeded request samples the same tokens alone or batched with others; another
    seed gives another sequence (30 draws from ~100 near-uniform tokens: a collision
    has probability ~1e-60). ``score`` at temperature 1 returns the behaviour logprobs
    of a T=1 sample (same distribution, < 1e-4)."""
    old, _, tok = models
    prompt = list(tok(PROMPT)["input_ids"])
    eng = build_engine("torch", old, tok)
    try:
        a = eng.generate([_req("a", prompt, max_new_tokens=30, seed=7, ignore_eos=True)])[0]
        others = [_req(f"o{i}", prompt[: 5 + i], max_new_tokens=10 + i, seed=i) for i in range(5)]
        b = eng.generate([*others, _req("b", prompt, max_new_tokens=30, seed=7, ignore_eos=True)])[
            -1
        ]
        c = eng.generate([_req("c", prompt, max_new_tokens=30, seed=8, ignore_eos=True)])[0]
        scored = eng.score(prompt, a.tokens)
    finally:
        eng.close()
    assert a.tokens == b.tokens and a.tokens != c.tokens
    assert max(abs(x - y) for x, y in zip(scored, a.logprobs, strict=True)) < 1e-4


def test_bad_requests_get_clear_errors(models):
    """Each bad input is refused at submit with a message that names the problem."""
    old, _, tok = models
    eng = build_engine("torch", old, tok, context=64)
    try:
        cases = [
            (_req("e", (), max_new_tokens=5), "empty prompt"),
            (_req("z", (5, 6), max_new_tokens=0), "max_new_tokens=0"),
            (_req("l", tuple([5] * 64), max_new_tokens=5), "does not fit the context of 64"),
            (_req("v", (5, 10_000), max_new_tokens=5), "outside the vocabulary"),
            (_req("t", (5,), max_new_tokens=5, temperature=-1.0), "temperature"),
        ]
        for req, msg in cases:
            with pytest.raises(EngineError, match=msg):
                eng.submit(req)
        with pytest.raises(EngineError, match="twice"):
            eng.generate([_req("d", (5,), max_new_tokens=2), _req("d", (6,), max_new_tokens=2)])
        with pytest.raises(EngineError, match="unknown parameter"):
            eng.update_weights({"not.a.weight": torch.zeros(1)}, version=1)
        # a prompt that fits but leaves little room is cut at the context: 60 + 4 = 64
        c = eng.generate([_req("edge", tuple([5] * 60), max_new_tokens=50, ignore_eos=True)])[0]
        assert (len(c.tokens), c.finish_reason) == (4, "length")
    finally:
        eng.close()
    with pytest.raises(ValueError, match="unknown engine 'tpu'; choose one of: torch, hf, vllm"):
        build_engine("tpu", old, tok)


def test_pause_resume_and_live_stats(models):
    """Paused, submitted samples wait (waiting=2, running=0, nothing generated).
    Resumed and paused again mid-run: both run, and the cache holds, per sequence, its
    prompt and every token sampled so far (the last one's keys are written on the next
    step, but its slot position is reserved), so
    cache_used_fraction = (P1 + P2 + generated) / (max_batch_size * context)."""
    old, _, tok = models
    p1, p2 = list(tok("abc")["input_ids"]), list(tok("hello there")["input_ids"])
    eng = build_engine("torch", old, tok, EngineConfig(max_batch_size=2), context=128)
    try:
        eng.pause()
        eng.submit(_req("a", p1, max_new_tokens=100, temperature=0.0, ignore_eos=True))
        eng.submit(_req("b", p2, max_new_tokens=100, temperature=0.0, ignore_eos=True))
        time.sleep(0.05)
        s = eng.stats()
        assert (s.waiting, s.running, s.generated_tokens) == (2, 0, 0)
        eng.resume()
        while eng.stats().generated_tokens < 10:
            time.sleep(0.001)
        eng.pause()  # returns after the step in progress
        s = eng.stats()
        assert (s.waiting, s.running) == (0, 2) and 10 <= s.generated_tokens < 200
        assert s.cache_used_fraction == pytest.approx(
            (len(p1) + len(p2) + s.generated_tokens) / (2 * 128)
        )
        eng.resume()
        outs = [eng.get(timeout=30), eng.get(timeout=30)]
    finally:
        eng.close()
    assert sorted(len(c.tokens) for c in outs) == [100, 100]


def test_a_failing_decode_step_loses_nothing(models):
    """A fault injected into the runner (a mock: a kernel failure cannot be produced on
    purpose) on the 5th decode step: both running samples come back through ``get``
    with their partial tokens and finish_reason 'abort' (prefill sampled 1 token, then
    4 good steps: 5 tokens each), then EngineError names the failure. Each aborted
    sample is handed to the outbox 0.3 s late (a second mock, widening the window a
    loaded machine opens): the engine marked itself failed before queueing them, and a
    reader that found the queue empty saw the failure first and lost both samples."""
    old, _, tok = models
    prompt = list(tok("abc")["input_ids"])
    eng = build_engine("torch", old, tok)
    real, calls = eng.runner.decode, []
    put = eng._outbox.put

    def slow_put(c):
        if c.finish_reason == "abort":
            time.sleep(0.3)
        put(c)

    eng._outbox.put = slow_put

    def failing(*args):
        calls.append(1)
        if len(calls) == 5:
            raise RuntimeError("injected kernel failure")
        return real(*args)

    eng.runner.decode = failing
    eng.pause()
    eng.submit(_req("a", prompt, max_new_tokens=50, temperature=0.0, ignore_eos=True))
    eng.submit(_req("b", prompt, max_new_tokens=50, temperature=0.0, ignore_eos=True))
    eng.resume()
    got = [eng.get(timeout=30), eng.get(timeout=30)]
    assert sorted(c.request_id for c in got) == ["a", "b"]
    assert all(c.finish_reason == "abort" and len(c.tokens) == 5 for c in got)
    with pytest.raises(EngineError, match="injected kernel failure"):
        eng.get(timeout=1)
    with pytest.raises(EngineError, match="decode loop failed"):
        eng.submit(_req("c", prompt, max_new_tokens=5))
    eng.close()
