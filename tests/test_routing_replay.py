"""MoE routing replay on the micro mixture-of-experts model (a real Mixtral), with the
real torch engine recording each token's experts and the trainer replaying them."""

from __future__ import annotations

import copy

import pytest
import torch

from recipe_arena.advantages import CenteredParams
from recipe_arena.config import EngineConfig, RLConfig
from recipe_arena.core.batch import build_learner_batch
from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.core.types import Rollout, RolloutGroup
from recipe_arena.data.schema import Message, PromptRow
from recipe_arena.engines import GenerationRequest, SamplingParams, build_engine
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.models.moe import moe_routers
from recipe_arena.staleness import DeepSeekMaskParams
from recipe_arena.staleness.deepseek_mask import replay_routing
from recipe_arena.wiring import LearnerSettings, advantage_hook, make_learner

PROMPT = (5, 17, 23, 42, 8, 9, 31)


def _moe(k: int) -> tuple[torch.nn.Module, object]:
    spec = TinyModelSpec(
        hidden_size=32,
        num_layers=2,
        num_heads=1,
        intermediate_size=32,
        max_position_embeddings=128,
        num_experts=4,
        experts_per_token=k,
    )
    model, tok = build_micro(spec, seed=3)
    with torch.no_grad():  # experts that matter: a random init's outputs are near-uniform
        for layer in model.model.layers:
            layer.mlp.experts.down_proj.mul_(30.0)
    return model, tok


def _sample(model: torch.nn.Module, tok: object, n: int = 2) -> list:
    engine = build_engine("torch", model, tok, EngineConfig(max_batch_size=4))
    try:
        params = SamplingParams(max_new_tokens=20, temperature=1.0, n=n, seed=11, ignore_eos=True)
        return engine.generate([GenerationRequest("r", PROMPT, params)])
    finally:
        engine.close()


def _live_routes(model: torch.nn.Module, tokens_1L: torch.Tensor) -> torch.Tensor:
    """The experts the model itself routes each position to: (L, N, K)."""
    taken: list[torch.Tensor] = []
    hooks = [
        r.register_forward_hook(lambda m, a, out: taken.append(out[2].clone()))
        for r in moe_routers(model)
    ]
    with torch.no_grad():
        model(input_ids=tokens_1L)
    for h in hooks:
        h.remove()
    return torch.stack(taken, dim=1)


def test_engine_records_the_routes_the_trainer_takes() -> None:
    """Same weights on both sides: the engine's record covers P + T - 1 positions (the
    prompt and every sampled token but the last) of N = 2 layers x K = 2 experts, equals
    the trainer's own routing at those positions, and replaying it changes nothing."""
    model, tok = _moe(k=2)
    c = _sample(model, tok, n=1)[0]
    tokens_1L = torch.tensor([PROMPT + c.tokens])
    assert c.expert_ids is not None
    assert tuple(c.expert_ids.shape) == (len(PROMPT) + len(c.tokens) - 1, 2, 2)
    live = _live_routes(model, tokens_1L)[: c.expert_ids.shape[0]]
    assert torch.equal(live.sort(-1).values, c.expert_ids.sort(-1).values)
    ids_1LNK = torch.full((1, tokens_1L.shape[1], 2, 2), -1, dtype=torch.long)
    ids_1LNK[0, : c.expert_ids.shape[0]] = c.expert_ids
    with torch.no_grad():
        plain = sequence_logprobs(model, tokens_1L)
        with replay_routing(model, ids_1LNK):
            replayed = sequence_logprobs(model, tokens_1L)
    torch.testing.assert_close(plain, replayed)
    torch.testing.assert_close(plain[0, len(PROMPT) :], torch.tensor(c.logprobs), atol=1e-4, rtol=0)


def _router_update(model: torch.nn.Module) -> torch.nn.Module:
    """A copy whose routers changed and nothing else: each router's rows are rotated by
    one expert (expert e's scores go to e + 1), so most tokens pick another expert."""
    updated = copy.deepcopy(model)
    with torch.no_grad():
        for router in moe_routers(updated):
            router.weight.copy_(router.weight.roll(1, dims=0))
    return updated


def test_after_a_router_update_replay_matches_the_engine_and_live_routing_does_not() -> None:
    """Top-1 routing (a gate weight of 1 whatever the scores). The engine sampled under
    the old routers; the trainer's routers were then updated. Replaying the engine's
    experts reproduces its logprobs exactly (attention and experts are unchanged, the
    gate weight is 1 either way); the trainer's own routing sends tokens elsewhere and
    its logprobs differ."""
    model, tok = _moe(k=1)
    c = _sample(model, tok, n=1)[0]
    updated = _router_update(model)
    tokens_1L = torch.tensor([PROMPT + c.tokens])
    assert c.expert_ids is not None
    live = _live_routes(updated, tokens_1L)[: c.expert_ids.shape[0]]
    assert (live != c.expert_ids).float().mean() > 0.3  # the update moved most tokens
    ids_1LNK = torch.full((1, tokens_1L.shape[1], 2, 1), -1, dtype=torch.long)
    ids_1LNK[0, : c.expert_ids.shape[0]] = c.expert_ids
    engine_T = torch.tensor(c.logprobs)
    with torch.no_grad():
        without = sequence_logprobs(updated, tokens_1L)[0, len(PROMPT) :]
        with replay_routing(updated, ids_1LNK):
            replayed = sequence_logprobs(updated, tokens_1L)[0, len(PROMPT) :]
    torch.testing.assert_close(replayed, engine_T, atol=1e-4, rtol=0)
    assert (without - engine_T).abs().max() > 0.1


def test_replayed_gates_come_from_live_scores_so_the_router_learns() -> None:
    """Top-2 routing: under replay the gate weights are the live router's softmax at the
    replayed experts, renormalised, so the routers get a gradient."""
    model, tok = _moe(k=2)
    c = _sample(model, tok, n=1)[0]
    tokens_1L = torch.tensor([PROMPT + c.tokens])
    assert c.expert_ids is not None
    ids = torch.full((1, tokens_1L.shape[1], 2, 2), -1, dtype=torch.long)
    ids[0, : c.expert_ids.shape[0]] = c.expert_ids
    with replay_routing(model, ids):
        sequence_logprobs(model, tokens_1L).sum().backward()
    for router in moe_routers(model):
        assert router.weight.grad is not None and router.weight.grad.abs().sum() > 0


def _group(completions: list, row: PromptRow) -> RolloutGroup:
    return RolloutGroup(
        row=row,
        rollouts=tuple(
            Rollout(
                prompt_id=row.id,
                prompt_tokens=PROMPT,
                completion_tokens=c.tokens,
                behavior_logprobs=c.logprobs,
                token_versions=c.token_versions,
                finish_reason=c.finish_reason,
                domain="math",
                reward=float(i),
                expert_ids=c.expert_ids,
            )
            for i, c in enumerate(completions)
        ),
    )


@pytest.mark.parametrize("replay", [True, False])
def test_learner_replays_routes_under_deepseek_mask(replay: bool) -> None:
    """Through the batch builder and the learner: after the router update, the
    engine-vs-trainer logprob gap the learner reports is ~0 with routing replay and
    large without (deepseek_mask's routing_replay switch)."""
    model, tok = _moe(k=1)
    row = PromptRow(id="p", messages=[Message(role="user", content="x")], domain="math")
    batch = build_learner_batch(
        [_group(_sample(model, tok), row)], advantage_hook(CenteredParams()), 0
    )
    assert batch.expert_ids_BLNK is not None and batch.expert_ids_BLNK.shape[2:] == (2, 1)
    staleness = DeepSeekMaskParams(routing_replay=replay)
    learner = make_learner(
        _router_update(model), LearnerSettings(rl=RLConfig(), staleness=staleness)
    )
    _, metrics = learner.compute_loss(batch)
    gap = metrics["staleness/logprob_diff_max"]
    assert gap < 1e-4 if replay else gap > 0.1


@pytest.mark.parametrize("keep_kv", [False, True])
def test_an_update_in_flight_rerecords_the_recomputed_prefix(keep_kv: bool) -> None:
    """Top-1 routing, the engine paused and driven one step at a time: 6 tokens under
    the old routers, then the router update of ``_router_update`` lands, then the rest.
    With ``keep_kv_on_update=false`` the engine recomputes the cached prefix (P + 5
    positions) under the new weights, so every recorded position is the updated model's
    own routing. With the KV kept, the prefix keeps the routes it was decoded with: the
    old model's, which the rotation moved (a wrong re-record would give the new ones)."""
    model, tok = _moe(k=1)
    updated = _router_update(model)
    cfg = EngineConfig(max_batch_size=4, keep_kv_on_update=keep_kv)
    engine = build_engine("torch", model, tok, cfg)
    try:
        engine.pause()
        params = SamplingParams(max_new_tokens=20, temperature=1.0, n=1, seed=11, ignore_eos=True)
        engine.submit(GenerationRequest("r", PROMPT, params))
        for _ in range(6):
            assert engine.step()
        engine.update_weights(updated.state_dict(), version=1)
        while engine.step():
            pass
        c = engine.get(timeout=10)
    finally:
        engine.close()
    assert c is not None and c.expert_ids is not None
    assert c.token_versions == (0,) * 6 + (1,) * 14
    tokens_1L = torch.tensor([PROMPT + c.tokens])
    n = len(PROMPT) + len(c.tokens) - 1
    assert c.expert_ids.shape[0] == n
    prefix = len(PROMPT) + 5
    new_live = _live_routes(updated, tokens_1L)[:n]
    old_live = _live_routes(model, tokens_1L)[:prefix]
    assert (new_live[:prefix] != old_live).float().mean() > 0.3
    if keep_kv:
        assert torch.equal(c.expert_ids[:prefix], old_live)
    else:
        assert torch.equal(c.expert_ids, new_live)
