"""DPO with delta learning: the loss, the pair builder (length cap, multi-turn pairs),
early stopping and the size choice, on hand-derived numbers and real micro models."""

from __future__ import annotations

import math

import pytest
import torch

from recipe_arena.config import DPOConfig, RunConfig
from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.engines import build_engine
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.stages.dpo import (
    SizeResult,
    batch_order,
    choose,
    dpo_loss,
    pair_batch,
    reference_logps,
    response_logps,
)
from recipe_arena.stages.dpo_pairs import (
    PreferencePair,
    build_pairs,
    length_cap_filter,
    length_percentiles,
    length_report,
    pair_candidates,
    validation_rows,
)


def _cfg(**dpo: object) -> RunConfig:
    return RunConfig(dpo=DPOConfig(**dpo))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- loss
def test_dpo_loss_two_pairs_by_hand() -> None:
    """beta = 0.5; summed response log-probabilities (policy chosen, policy rejected,
    reference chosen, reference rejected):

        pair 1: (-2, -5, -3, -4): chosen reward 0.5 * (-2 + 3) = +0.5,
                rejected reward 0.5 * (-5 + 4) = -0.5, margin h1 = +1
        pair 2: (-4, -1, -4, -3): chosen reward 0, rejected 0.5 * (-1 + 3) = +1, h2 = -1

    L = mean(-log sigmoid(h)) = (log(1 + e^-1) + log(1 + e)) / 2
      = (0.3132617 + 1.3132617) / 2 = 0.8132617.
    Reward accuracy 1/2; mean margin 0; mean chosen reward 0.25, mean rejected 0.25.
    dL/d pc_1 = -(1/2) * beta * sigmoid(-h1) = -0.25 * 0.2689414 = -0.0672354;
    dL/d pr_2 = +(1/2) * beta * sigmoid(-h2) = 0.25 * 0.7310586 = +0.1827646."""
    pc = torch.tensor([-2.0, -4.0], requires_grad=True)
    pr = torch.tensor([-5.0, -1.0], requires_grad=True)
    loss, m = dpo_loss(pc, pr, torch.tensor([-3.0, -4.0]), torch.tensor([-4.0, -3.0]), beta=0.5)
    assert loss.item() == pytest.approx(0.8132617, abs=1e-6)
    assert m["dpo/reward_accuracy"] == 0.5
    assert m["dpo/margin"] == pytest.approx(0.0)
    assert m["dpo/chosen_reward"] == pytest.approx(0.25)
    assert m["dpo/rejected_reward"] == pytest.approx(0.25)
    loss.backward()
    assert pc.grad is not None and pr.grad is not None
    assert pc.grad[0].item() == pytest.approx(-0.0672354, abs=1e-6)
    assert pr.grad[1].item() == pytest.approx(0.1827646, abs=1e-6)


def test_dpo_loss_beta_scales_the_margin() -> None:
    """One pair with log-ratio difference 2: beta 0.1 gives -log sigmoid(0.2) = 0.5981389,
    beta 1 gives -log sigmoid(2) = 0.1269280."""
    args = (torch.tensor([0.0]), torch.tensor([-2.0]), torch.tensor([0.0]), torch.tensor([0.0]))
    assert dpo_loss(*args, beta=0.1)[0].item() == pytest.approx(0.5981389, abs=1e-6)
    assert dpo_loss(*args, beta=1.0)[0].item() == pytest.approx(0.1269280, abs=1e-6)


def test_response_logps_sum_only_the_response_and_ignore_padding() -> None:
    """A pair batch pads rows to the longest; each response's log-probability must equal
    the sum of its own tokens' log-probabilities computed on the unpadded sequence, from
    the first response position on (the prompt is not scored)."""
    model, _ = build_micro(seed=0)
    model.train(False)
    pairs = [
        PreferencePair("a", "math", (5, 6, 7), (8, 9), (10, 11, 12, 13)),
        PreferencePair("b", "math", (5, 6), (14,), (15, 16)),
    ]
    chosen_B, rejected_B = response_logps(model, pair_batch(pairs, pad_id=0))
    with torch.no_grad():
        for b, p in enumerate(pairs):
            for got, resp in ((chosen_B[b], p.chosen_tokens), (rejected_B[b], p.rejected_tokens)):
                seq_1L = torch.tensor([[*p.prompt_tokens, *resp]])
                want = sequence_logprobs(model, seq_1L)[0, len(p.prompt_tokens) :].sum()
                assert got.item() == pytest.approx(want.item(), abs=1e-5)


# ----------------------------------------------------------------------------- length cap
def _pair(delta_chosen: int, delta_rejected: int, subset: str = "math") -> PreferencePair:
    return PreferencePair(
        f"{subset}{delta_chosen}-{delta_rejected}",
        subset,
        (1,),
        (2,) * delta_chosen,
        (3,) * delta_rejected,
    )


def test_length_cap_drops_pairs_whose_chosen_is_more_than_cap_longer() -> None:
    """Cap 100 (default): chosen 150 vs rejected 50 (delta 100) is kept, 151 vs 50 (101)
    dropped, 10 vs 200 (-190) kept; a multiturn cap of 10 drops 30 vs 19 (11) and keeps
    29 vs 19 (10); a subset cap of None keeps 500 vs 1 (chat)."""
    cfg = DPOConfig(subset_length_delta={"multiturn": 10, "chat": None})
    pairs = [
        _pair(150, 50),
        _pair(151, 50),
        _pair(10, 200),
        _pair(30, 19, "multiturn"),
        _pair(29, 19, "multiturn"),
        _pair(500, 1, "chat"),
    ]
    kept, dropped = length_cap_filter(pairs, cfg.length_cap)
    assert [p.length_delta for p in kept] == [100, -190, 10, 499]
    assert [p.length_delta for p in dropped] == [101, 11]
    every, none = length_cap_filter(pairs, DPOConfig(max_length_delta=None).length_cap)
    assert len(every) == 6 and not none


def test_length_percentiles_before_and_after_the_cap() -> None:
    """Deltas 0, 10, 20, 30, 140. Linear interpolation: p50 = 20; p80 sits at rank
    0.8 * 4 = 3.2, so 30 + 0.2 * (140 - 30) = 52. After a cap of 100 (140 dropped): deltas
    0..30, p80 at rank 0.8 * 3 = 2.4, so 20 + 0.4 * 10 = 24; p10 at rank 0.3 gives 3."""
    pairs = [_pair(d + 5, 5) for d in (0, 10, 20, 30, 140)]
    before = length_percentiles(pairs)
    assert before["p50"] == pytest.approx(20) and before["p80"] == pytest.approx(52)
    kept, _ = length_cap_filter(pairs, DPOConfig().length_cap)
    report = length_report(pairs, kept)
    assert report["all"]["after"]["p80"] == pytest.approx(24)
    assert report["all"]["after"]["p10"] == pytest.approx(3)
    assert report["math"]["before"]["n"] == 5 and report["math"]["after"]["n"] == 4


# ----------------------------------------------------------------------------- pair builder
def test_pair_builder_applies_the_cap_and_multiturn_pairs_differ_only_in_the_final_turn() -> None:
    """Real pair builder on a random micro model (weak model) with references as chosen:
    rejected samples are capped at 8 tokens, so every rejected response has at most 8
    tokens; a pair is kept iff chosen - rejected <= 20 (math references run ~20-35
    characters, so both fates occur); every multi-turn pair's prompt holds the earlier
    exchange and ends with the final user turn opened for the assistant, shared by chosen
    and rejected (a pair is one prompt with two responses)."""
    cfg = _cfg(
        max_new_tokens=8,
        max_length_delta=20,
        multiturn_fraction=0.5,
        domain_weights={"math": 1.0, "code": 0.0, "ifeval": 0.0, "chat": 0.0},
    )
    model, tok = build_micro(seed=0)
    engine = build_engine("torch", model, tok)
    try:
        pairs = build_pairs(
            cfg, tok, engine, None, target=24, context_limit=512, progress=lambda m: None
        )
    finally:
        engine.close()
    assert pairs.before_cap and pairs.kept
    assert all(len(p.rejected_tokens) <= 8 for p in pairs.before_cap)
    assert all(p.length_delta <= 20 for p in pairs.kept)
    kept_ids = {p.id for p in pairs.kept}
    dropped = [p for p in pairs.before_cap if p.id not in kept_ids]
    assert dropped and all(p.length_delta > 20 for p in dropped)
    assert pairs.counts["dropped_length"] == len(dropped)
    by_id = {c.id: c for c in pairs.candidates}
    multi = [p for p in pairs.before_cap if p.subset == "multiturn"]
    assert multi
    for p in multi:
        cand = by_id[p.id]
        assert [m["role"] for m in cand.messages] == ["user", "assistant", "user"]
        text = tok.decode(list(p.prompt_tokens), skip_special_tokens=False)
        assert cand.messages[1]["content"] in text
        assert text.endswith(cand.row.prompt_text + "<|im_end|>\n<|im_start|>assistant\n")
        assert p.chosen_tokens == (
            *tok(cand.reference, add_special_tokens=False)["input_ids"],
            tok.eos_token_id,
        )


def test_pair_candidates_follow_domain_weights_and_multiturn_fraction() -> None:
    """40 prompts at weights math 0.75 / ifeval 0.25: quotas 30 and 10. Multi-turn share
    0 gives no earlier exchange; 1 gives one to every pair."""
    weights = {"math": 0.75, "code": 0.0, "ifeval": 0.25, "chat": 0.0}
    none = pair_candidates(_cfg(domain_weights=weights, multiturn_fraction=0.0), 40)
    assert sorted(c.domain for c in none).count("math") == 30
    assert sum(c.domain == "ifeval" for c in none) == 10
    assert all(len(c.messages) == 1 and c.subset == c.domain for c in none)
    every = pair_candidates(_cfg(domain_weights=weights, multiturn_fraction=1.0), 40)
    assert all(len(c.messages) == 3 and c.subset == "multiturn" for c in every)


def test_validation_rows_avoid_pair_prompts_and_the_heldout_split() -> None:
    """The validation slice has the configured size per domain, shares no problem with
    the pair prompts, and comes from the train split (no held-out row id)."""
    cfg = _cfg(validation_prompts={"math": 30, "ifeval": 5})
    cands = pair_candidates(cfg, 200)
    rows = validation_rows(cfg, cands)
    assert (
        sum(r.domain == "math" for r in rows) == 30 and sum(r.domain == "ifeval" for r in rows) == 5
    )
    assert not {r.prompt_text for r in rows} & {c.row.prompt_text for c in cands}
    assert all("-train-" in r.id for r in rows)


def test_chosen_policy_samples_the_chosen_response() -> None:
    """dpo.chosen=policy: the chosen response is the policy engine's sample (at most
    max_new_tokens = 6 tokens), not the reference solution."""
    cfg = _cfg(chosen="policy", max_new_tokens=6, max_length_delta=None)
    model, tok = build_micro(seed=0)
    weak, policy = build_engine("torch", model, tok), build_engine("torch", model, tok)
    try:
        pairs = build_pairs(
            cfg, tok, weak, policy, target=4, context_limit=512, progress=lambda m: None
        )
    finally:
        weak.close()
        policy.close()
    assert all(len(p.chosen_tokens) <= 6 for p in pairs.kept)


# ----------------------------------------------------------------------------- training pieces
def test_reference_logps_match_a_direct_forward() -> None:
    """Reference log-probabilities are computed once in chunks; each equals the pair's
    response log-probability from one forward of that pair alone."""
    model, _ = build_micro(seed=1)
    pairs = [_pair(3 + i % 4, 2 + i % 3) for i in range(40)]  # more than one chunk (32)
    chosen_P, rejected_P = reference_logps(model, pairs, pad_id=0)
    with torch.no_grad():
        c_B, r_B = response_logps(model, pair_batch(pairs[35:36], 0))
    assert chosen_P[35].item() == pytest.approx(c_B.item(), abs=1e-5)
    assert rejected_P[35].item() == pytest.approx(r_B.item(), abs=1e-5)


def test_early_stopping_keeps_the_best_and_stops_after_patience() -> None:
    """Validations at steps 4, 8, 12, 16 score 0.1, 0.3, 0.3, 0.25 with patience 2: new
    bests at 4 and 8; 12 ties (not a new best) and 16 is lower, so after 16 the run stops
    with the best 0.3 at step 8. Patience 3 would not stop yet."""
    r = SizeResult(size=64, patience=2)
    news = [r.offer(step, s) for step, s in ((4, 0.1), (8, 0.3), (12, 0.3), (16, 0.25))]
    assert news == [True, True, False, False]
    assert r.stop and r.best_step == 8 and r.best_score == 0.3
    r3 = SizeResult(size=64, patience=3)
    for step, s in ((4, 0.1), (8, 0.3), (12, 0.3), (16, 0.25)):
        r3.offer(step, s)
    assert not r3.stop


def test_size_sweep_chooses_the_best_validation_and_the_smaller_size_on_ties() -> None:
    """Sizes 64, 128, 256 with best scores 0.30, 0.34, 0.34: 128 wins (ties go small)."""
    results = []
    for size, score in ((64, 0.30), (128, 0.34), (256, 0.34)):
        r = SizeResult(size=size, patience=2)
        r.offer(4, score)
        results.append(r)
    assert choose(results).size == 128


def test_batch_order_visits_every_pair_once_per_epoch() -> None:
    """5 pairs, batches of 2, 5 steps = 10 draws: two full epochs, each a permutation."""
    order = batch_order(5, steps=5, batch_size=2, seed=0)
    flat = [i for b in order for i in b]
    assert len(order) == 5 and all(len(b) == 2 for b in order)
    assert sorted(flat[:5]) == list(range(5)) and sorted(flat[5:]) == list(range(5))
    assert math.isclose(len(flat), 10)


def test_train_size_follows_steps_schedule_validation_and_moves_toward_chosen(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """6 pairs, batch 2, 2 epochs: ceil(6 * 2 / 2) = 6 steps. Warm-up 2 at peak 0.01:
    the logged rates of steps 1 and 2 are 0.005 and 0.01 (linear warm-up, step+1 over 2).
    Validation every 4 steps and at the last: steps 4 and 6. The validation metric here is
    the chosen responses' mean log-probability, which DPO raises relative to the rejected:
    after training, the summed log-ratio margin of every pair is positive (the DPO loss of
    the batch below log 2 = 0.693, its value at the reference)."""
    from recipe_arena.config import RunConfig
    from recipe_arena.rundir import RunDir, read_metrics
    from recipe_arena.stages.dpo import train_size

    cfg = _cfg(batch_size=2, epochs=2.0, lr=0.01, warmup_steps=2, eval_every=4, patience=5)
    model, _ = build_micro(
        TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64), seed=0
    )
    pairs = [
        PreferencePair(f"p{i}", "math", (5, 6 + i), (20 + i, 30, 31), (40 + i, 50, 51))
        for i in range(6)
    ]
    ref = reference_logps(model, pairs, pad_id=0)
    init = {k: v.clone() for k, v in model.state_dict().items()}
    batch = pair_batch(pairs, 0)

    def validate(m):  # type: ignore[no-untyped-def]
        with torch.no_grad():
            return float(response_logps(m, batch)[0].mean()), {}

    run = RunDir(RunConfig(out_dir=str(tmp_path)), tmp_path / "run")
    result = train_size(cfg, model, init, pairs, ref, validate, run, pad_id=0)
    logged = [r for r in read_metrics(tmp_path / "run") if r["stage"] == "dpo"]
    assert [r["step"] for r in logged] == [1, 2, 3, 4, 5, 6]
    assert logged[0]["lr"] == pytest.approx(0.005) and logged[1]["lr"] == pytest.approx(0.01)
    assert [s for s, _ in result.curve] == [4, 6]
    assert result.best_state is not None
    model.load_state_dict(result.best_state)
    with torch.no_grad():
        c_B, r_B = response_logps(model, batch)
    loss, m = dpo_loss(c_B, r_B, ref[0], ref[1], beta=0.1)
    assert loss.item() < math.log(2) and m["dpo/reward_accuracy"] == 1.0


def _sweep_falling(tmp_path, **dpo: object):  # type: ignore[no-untyped-def]
    """``_sweep`` of a 4-pair set at ``dpo`` settings (batch 2, 1 epoch, lr 0.01,
    validation every step) under a validation that scores minus the squared distance of
    the weights from the start: 0 at the start, below 0 after any step. Returns (start
    score, results, chosen, the model, its starting weights)."""
    from recipe_arena.config import RunConfig
    from recipe_arena.rundir import RunDir
    from recipe_arena.stages.dpo import _sweep

    cfg = _cfg(batch_size=2, epochs=1.0, lr=0.01, eval_every=1, **dpo)
    model, _ = build_micro(
        TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64), seed=0
    )
    pairs = [
        PreferencePair(f"p{i}", "math", (5, 6 + i), (20 + i, 30, 31), (40 + i, 50, 51))
        for i in range(4)
    ]
    init = {k: v.clone() for k, v in model.state_dict().items()}

    def validate(m):  # type: ignore[no-untyped-def]
        d = sum(float(((v - init[k]) ** 2).sum()) for k, v in m.state_dict().items())
        return -d, {}

    run = RunDir(RunConfig(out_dir=str(tmp_path)), tmp_path / "run")
    return (*_sweep(cfg, run, model, pairs, validate, pad=0), model, init)


def test_sweep_keeps_the_start_when_no_size_validates_above_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A validation that scores minus the squared distance of the weights from the start:
    the start scores 0 and every DPO step (lr 0.01 moves the weights) scores below 0, so
    the chosen candidate is the start (size 0, step 0) and the model's weights are the
    starting ones, exactly. Both sizes (2 and 4 pairs) still train and are reported."""
    start, results, best, _, init = _sweep_falling(tmp_path, sizes=[2, 4], patience=5)
    assert start == 0.0 and [r.size for r in results] == [2, 4]
    assert all(r.best_score < 0.0 for r in results)
    assert best.size == 0 and best.best_step == 0 and best.best_state is not None
    assert all(torch.equal(best.best_state[k], v) for k, v in init.items())


def test_select_last_hands_on_the_final_weights_of_the_largest_size(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The same falling validation with ``dpo.select=last`` and patience 1: validation
    alone would keep the start and stop after the first validation. ``last`` trains only
    the largest size (4 pairs, batch 2, 1 epoch: 2 steps), every step despite the
    patience, and hands on the weights after step 2 with that step's validation score:
    not the start's weights."""
    start, results, best, model, init = _sweep_falling(
        tmp_path, sizes=[2, 4], patience=1, select="last"
    )
    assert [r.size for r in results] == [4] and best is results[0]
    assert [s for s, _ in best.curve] == [1, 2] and best.best_step == 2
    assert best.best_score == best.curve[-1][1] < best.curve[0][1] < start == 0.0
    assert best.best_state is not None
    assert all(torch.equal(best.best_state[k], v) for k, v in model.state_dict().items())
    assert not all(torch.equal(best.best_state[k], v) for k, v in init.items())


def test_sampling_temperature_reaches_the_weak_model() -> None:
    """Near-greedy sampling (temperature 0.01) gives the same rejected response under two
    run seeds; at temperature 1 the two seeds' responses differ."""
    model, tok = build_micro(seed=0)
    engine = build_engine("torch", model, tok)
    out = {}
    try:
        for temp in (0.01, 1.0):
            for seed in (0, 1):
                cfg = RunConfig(
                    seed=seed,
                    dpo=DPOConfig(temperature=temp, max_new_tokens=12, max_length_delta=None),
                )
                pairs = build_pairs(
                    cfg, tok, engine, None, target=3, context_limit=512, progress=lambda m: None
                )
                out[temp, seed] = [p.rejected_tokens for p in pairs.kept]
    finally:
        engine.close()
    assert out[0.01, 0] == out[0.01, 1]
    assert out[1.0, 0] != out[1.0, 1]


def test_optimiser_settings_reach_the_dpo_step(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """dpo.adam_betas and dpo.weight_decay are the AdamW settings of ``train_size``: the
    defaults, (0.9, 0.95) and 0.01, train bitwise the same weights as the same values
    given explicitly; betas (0.5, 0.6) change AdamW's moments from the second step on, and
    a weight decay of 0.5 shrinks every weight by (1 - lr * 0.5) each step, so either
    gives other weights after 3 steps."""
    from recipe_arena.stages.dpo import train_size

    pairs = [
        PreferencePair(f"p{i}", "math", (5, 6 + i), (20 + i, 30, 31), (40 + i, 50, 51))
        for i in range(4)
    ]

    def trained(**dpo: object) -> dict[str, torch.Tensor]:
        model, _ = build_micro(
            TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64),
            seed=0,
        )
        cfg = _cfg(batch_size=2, epochs=1.5, lr=0.01, warmup_steps=0, eval_every=10, **dpo)
        init = {k: v.clone() for k, v in model.state_dict().items()}
        ref = reference_logps(model, pairs, pad_id=0)
        train_size(cfg, model, init, pairs, ref, lambda m: (0.0, {}), None, pad_id=0)
        return {k: v.clone() for k, v in model.state_dict().items()}

    default = trained()
    explicit = trained(adam_betas=(0.9, 0.95), weight_decay=0.01)
    assert all(torch.equal(default[k], explicit[k]) for k in default)
    for changed in (trained(adam_betas=(0.5, 0.6)), trained(weight_decay=0.5)):
        assert any(not torch.equal(default[k], changed[k]) for k in default)
