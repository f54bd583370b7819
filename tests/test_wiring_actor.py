"""What the actor hands the learner, through the real actor and torch engine: the
weights the engine runs after an update under shared quantisation, the rewards length
control and the spurious-reward control set, as the learner batch carries them; and
the prompt a multi-turn DPO pair's rejected response is sampled from."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import torch

from recipe_arena.advantages import CenteredParams
from recipe_arena.compose import load_config
from recipe_arena.config import DPOConfig, EngineConfig, RunConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core.actor import Actor, ActorTask
from recipe_arena.core.batch import build_learner_batch
from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.data.micro import generate_split
from recipe_arena.engines import build_engine
from recipe_arena.engines.base import GenerationRequest, SamplingParams
from recipe_arena.length_control import TokenBudgetParams
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.spurious import spurious_rewards
from recipe_arena.stages.dpo_pairs import build_pairs, prompt_ids
from recipe_arena.staleness import SharedQuantParams
from recipe_arena.staleness.shared_quant import quantise_state_dict
from recipe_arena.wiring import ActorSettings, actor_spec, advantage_hook, make_actor

SPEC = TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1)


@pytest.fixture(scope="module")
def scorer():  # type: ignore[no-untyped-def]
    with build_scorer(RewardsConfig(workers=1)) as s:
        yield s


def _actor(model, tok, settings: ActorSettings, scorer) -> Actor:  # type: ignore[no-untyped-def]
    return make_actor(
        0,
        model,
        tok,
        "torch",
        EngineConfig(max_batch_size=8),
        RewardsConfig(),
        settings,
        scorer=scorer,
    )


# ----------------------------------------------------------------------------- shared quant
def _sharp(seed: int) -> tuple[torch.nn.Module, object]:
    """A random micro model with its projections scaled up, so that int8 rounding shows
    in the logprobs (a random init is near-uniform)."""
    model, tok = build_micro(
        TinyModelSpec(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128), seed=seed
    )
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("_proj.weight"):
                p.mul_(4.0)
    return model, tok


def test_engine_runs_the_quantised_new_weights_after_an_update(scorer) -> None:  # type: ignore[no-untyped-def]
    """staleness=shared_quant (8 bits): after ``update_weights(W_new)`` the engine's
    logprobs of a fixed sequence equal a forward on Q(W_new) (float rounding, < 1e-4)
    and differ from a forward on W_new itself by far more. Before the update they are
    Q(W_old)'s. An actor that quantised only its first weights would run W_new."""
    old, tok = _sharp(0)
    new, _ = _sharp(1)
    new_weights = {k: v.clone() for k, v in new.state_dict().items()}
    settings = ActorSettings(
        group_size=2, temperature=1.0, max_new_tokens=4, staleness=SharedQuantParams(quant_bits=8)
    )
    prompt = tuple(tok("What is 3+4?", add_special_tokens=False)["input_ids"])
    completion = tuple(tok("<think></think>7", add_special_tokens=False)["input_ids"])
    tokens = torch.tensor([prompt + completion])

    def forward(weights: dict[str, torch.Tensor]) -> torch.Tensor:
        m = copy.deepcopy(new)
        m.load_state_dict(weights)
        with torch.no_grad():
            return sequence_logprobs(m, tokens)[0, len(prompt) :]

    q_old = forward(quantise_state_dict(old.state_dict(), 8))
    actor = _actor(old, tok, settings, scorer)
    try:
        before = torch.tensor(actor.engine.score(prompt, completion))
        actor.update_weights(new_weights, 1)
        after = torch.tensor(actor.engine.score(prompt, completion))
    finally:
        actor.engine.close()
    torch.testing.assert_close(before, q_old, atol=1e-4, rtol=0)
    q_new, full_new = forward(quantise_state_dict(new_weights, 8)), forward(new_weights)
    torch.testing.assert_close(after, q_new, atol=1e-4, rtol=0)
    assert (after - full_new).abs().max() > 100 * (after - q_new).abs().max().clamp(min=1e-7)


# ----------------------------------------------------------------------------- token budget
def test_over_budget_rewards_reach_the_learner_batch(scorer) -> None:  # type: ignore[no-untyped-def]
    """length_control=token_budget through the actor: a random model answers a math row
    (verifier 0 on every response); the row's budget is set to the group's shortest
    length b. A response exactly at b keeps its verifier reward 0 (the budget binds only
    above it), every longer one gets -1. The learner batch carries those rewards, and
    each row's advantage is r_i - mean(r) (centred): with k of G rollouts over budget,
    -1 + k/G over budget and +k/G at it. Sampled first without length control to learn
    the lengths (sampling is seeded by the task, so the second pass draws the same)."""
    model, tok = build_micro(SPEC, seed=0)
    plain = ActorSettings(group_size=6, temperature=1.0, max_new_tokens=12)
    rows = generate_split("math", "train", 8, seed=0)
    tasks = [ActorTask(r, seed=10 + i, tag=f"t{i}") for i, r in enumerate(rows)]
    actor = _actor(model, tok, plain, scorer)
    try:
        lengths = [g.sampled_lengths for g in actor.rollouts(tasks)]
    finally:
        actor.engine.close()
    i = next(i for i, ls in enumerate(lengths) if len(set(ls)) > 1)  # a group of mixed lengths
    budget = min(lengths[i])
    task = dataclasses.replace(
        tasks[i], row=tasks[i].row.model_copy(update={"token_budget": budget}), tag="b"
    )
    settings = dataclasses.replace(plain, length_control=TokenBudgetParams())
    actor = _actor(model, tok, settings, scorer)
    try:
        group = actor.rollouts([task])[0]
    finally:
        actor.engine.close()
    assert group.sampled_lengths == lengths[i]
    want = [-1.0 if n > budget else 0.0 for n in lengths[i]]
    assert group.rewards_G.tolist() == want and 0.0 in want and -1.0 in want
    k = want.count(-1.0)
    assert group.metrics["length/budget_violations"] == k
    batch = build_learner_batch([group], advantage_hook(CenteredParams()), int(tok.pad_token_id))
    assert batch.rewards_B is not None and batch.rewards_B.tolist() == want
    adv_B = (batch.advantages_BL * batch.mask_BL).sum(-1) / batch.mask_BL.sum(-1)
    g = len(want)
    assert adv_B.tolist() == pytest.approx([r + k / g for r in want])


# ----------------------------------------------------------------------------- spurious
@pytest.mark.parametrize(("enabled", "p"), [(True, 1.0), (True, 0.5), (False, 1.0)])
def test_spurious_reward_setting_reaches_the_rewards_the_learner_sees(
    enabled: bool,
    p: float,
    scorer,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """``spurious_reward.enabled=<e> spurious_reward.p=<p>`` composed as a run composes
    it, actor settings taken from the RL stage's ``actor_spec``: a random model's math
    answers score 0 with the verifier. Enabled with p = 1 every reward the learner batch
    carries is 1 (a bit that is 1 with probability 1); with p = 0.5 the rewards are
    ``spurious_rewards(task seed, G, 0.5)``; disabled they are the verifier's 0s."""
    cfg = load_config(
        [
            "recipe=olmo3_think",
            "budget=smoke",
            f"spurious_reward.enabled={str(enabled).lower()}",
            f"spurious_reward.p={p}",
        ]
    )
    spec = actor_spec(cfg, tmp_path, 0)
    settings = dataclasses.replace(spec.settings, max_new_tokens=8, window_quota=None)
    model, tok = build_micro(SPEC, seed=0)
    rows = generate_split("math", "train", 2, seed=0)
    tasks = [ActorTask(r, seed=20 + i, tag=f"s{i}") for i, r in enumerate(rows)]
    actor = _actor(model, tok, settings, scorer)
    try:
        groups = actor.rollouts(tasks)
    finally:
        actor.engine.close()
    g = cfg.rl.group_size
    batch = build_learner_batch(groups, advantage_hook(cfg.advantage), int(tok.pad_token_id))
    assert batch.rewards_B is not None
    if not enabled:
        want = [0.0] * (2 * g)
    elif p == 1.0:
        want = [1.0] * (2 * g)
    else:
        want = [x for t in tasks for x in spurious_rewards(t.seed, g, p).tolist()]
    assert batch.rewards_B.tolist() == want
    verifier = [r.verifier_reward for grp in groups for r in grp.rollouts]
    assert verifier == ([0.0] * (2 * g) if enabled else [None] * (2 * g))


# ----------------------------------------------------------------------------- DPO pairs
def test_multiturn_rejected_response_is_sampled_after_the_whole_conversation() -> None:
    """dpo.multiturn_fraction 1: every pair opens with an earlier exchange. Each rejected
    response is the weak engine's sample for the pair's whole prompt (earlier exchange
    included) at the chunk's seed (dpo sampling is seeded per request and sample, so a
    request alone draws what it drew in its chunk); sampled after the final user turn
    alone, most responses come out different."""
    cfg = RunConfig(
        dpo=DPOConfig(
            max_new_tokens=8,
            multiturn_fraction=1.0,
            max_length_delta=None,
            domain_weights={"math": 1.0, "code": 0.0, "ifeval": 0.0, "chat": 0.0},
        )
    )
    model, tok = build_micro(seed=0)
    engine = build_engine("torch", model, tok)
    try:
        pairs = build_pairs(
            cfg, tok, engine, None, target=6, context_limit=512, progress=lambda m: None
        )
        by_id = {c.id: c for c in pairs.candidates}
        params = SamplingParams(
            max_new_tokens=cfg.dpo.max_new_tokens, temperature=cfg.dpo.temperature, seed=cfg.seed
        )
        differ = 0
        assert pairs.kept and all(p.subset == "multiturn" for p in pairs.kept)
        for p in pairs.kept:
            cand = by_id[p.id]
            assert len(cand.messages) == 3
            assert p.prompt_tokens == prompt_ids(tok, cand, cfg)
            whole = engine.generate([GenerationRequest("w", p.prompt_tokens, params)])[0]
            assert tuple(whole.tokens) == p.rejected_tokens
            last = dataclasses.replace(cand, messages=cand.messages[-1:])
            alone = engine.generate([GenerationRequest("l", prompt_ids(tok, last, cfg), params)])
            differ += tuple(alone[0].tokens) != p.rejected_tokens
    finally:
        engine.close()
    assert differ > len(pairs.kept) / 2
