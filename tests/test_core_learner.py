"""Learner metrics by hand, and one real optimiser step on a fixed batch."""

from __future__ import annotations

import math

import pytest
import torch

from recipe_arena.config import RLConfig
from recipe_arena.core.learner import mismatch_metrics
from recipe_arena.core.types import LearnerBatch
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.policy_loss import LossConfig
from recipe_arena.wiring import LearnerSettings, make_learner


def _batch(behavior: list[float], versions: list[int]) -> LearnerBatch:
    n = len(behavior)
    return LearnerBatch(
        tokens_BL=torch.tensor([[8] * (n + 1)]),
        mask_BL=torch.tensor([[0.0] + [1.0] * n]),
        advantages_BL=torch.tensor([[0.0] + [0.625] * n]),
        behavior_logprobs_BL=torch.tensor([[0.0, *behavior]]),
        versions_BL=torch.tensor([[-1, *versions]]),
    )


def _positive_batch() -> LearnerBatch:
    """One sequence: two prompt tokens, three completion tokens with A = +0.625."""
    return LearnerBatch(
        tokens_BL=torch.tensor([[8, 9, 10, 11, 12]]),
        mask_BL=torch.tensor([[0.0, 0.0, 1.0, 1.0, 1.0]]),
        advantages_BL=torch.tensor([[0.0, 0.0, 0.625, 0.625, 0.625]]),
        behavior_logprobs_BL=torch.zeros(1, 5),
        versions_BL=torch.tensor([[-1, -1, 0, 0, 0]]),
    )


def test_mismatch_metrics_by_hand() -> None:
    """trainer - engine = (+0.1, -0.2): mean |d| = 0.15, max 0.2,
    k3 = mean(e^d - d - 1) = ((e^0.1 - 1.1) + (e^-0.2 - 0.8)) / 2;
    learner version 3, token versions (3, 2): lags (0, 1), half each."""
    batch = _batch([-1.1, -0.8], [3, 2])
    trainer = torch.tensor([[0.0, -1.0, -1.0]])
    m = mismatch_metrics(trainer, batch, learner_version=3)
    assert m["staleness/logprob_diff_mean"] == pytest.approx(0.15)
    assert m["staleness/logprob_diff_max"] == pytest.approx(0.2)
    k3 = ((math.exp(0.1) - 1.1) + (math.exp(-0.2) - 0.8)) / 2
    assert m["staleness/kl_engine_trainer"] == pytest.approx(k3, rel=1e-4)
    assert m["staleness/lag_hist/0"] == 0.5 and m["staleness/lag_hist/1"] == 0.5
    assert m["staleness/lag_max"] == 1


def test_train_step_raises_logprob_of_positive_advantage_tokens() -> None:
    """A = +0.625 on every completion token (the correct rollout of the seed example):
    after one step with lr 1e-2 the trainer's log-probability of those tokens goes up,
    and the version goes from 0 to 1."""
    model, _ = build_micro(
        TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64), seed=0
    )
    learner = make_learner(model, LearnerSettings(rl=RLConfig(lr=1e-2, temperature=1.0)))
    batch = _positive_batch()
    from recipe_arena.core.logprobs import sequence_logprobs

    with torch.no_grad():
        before = sequence_logprobs(model, batch.tokens_BL)[0, 2:].sum()
    metrics = learner.train_step(batch)
    with torch.no_grad():
        after = sequence_logprobs(model, batch.tokens_BL)[0, 2:].sum()
    assert after > before and learner.version == 1
    assert metrics["loss/ratio_mean"] == pytest.approx(1.0)


def test_epochs_reuse_the_batch_against_a_fixed_pi_old() -> None:
    """epochs = 3 on one batch: three updates, one version (0 -> 1). The last update's
    ratio is pi_theta2 / pi_old with pi_old taken before the first update, so after two
    updates that raised the tokens' log-probability it is above 1 (with epochs = 1 it is
    exactly 1). The result equals doing it by hand: old logprobs once, then three
    compute_loss / backward / clip / step rounds on a copy of the same model."""
    import copy

    from recipe_arena.core.logprobs import sequence_logprobs

    model, _ = build_micro(
        TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64), seed=0
    )
    twin = copy.deepcopy(model)
    batch = _positive_batch()
    settings = LearnerSettings(rl=RLConfig(lr=1e-3, temperature=1.0, epochs=3))
    learner = make_learner(model, settings)
    metrics = learner.train_step(batch)
    assert learner.version == 1
    assert metrics["loss/ratio_mean"] > 1.0

    by_hand = make_learner(twin, LearnerSettings(rl=RLConfig(lr=1e-3, temperature=1.0)))
    with torch.no_grad():
        old_BL = sequence_logprobs(twin, batch.tokens_BL)
    for _ in range(3):
        loss, _ = by_hand.compute_loss(batch, old_BL)
        by_hand.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(twin.parameters(), 1.0)
        by_hand.optimizer.step()
    for a, b in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)  # gradients summed, then / count
    one = make_learner(
        build_micro(
            TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64), seed=0
        )[0],
        LearnerSettings(rl=RLConfig(lr=1e-3, temperature=1.0)),
    )
    assert one.train_step(batch)["loss/ratio_mean"] == 1.0


def test_length_buckets_by_hand() -> None:
    """Lengths (10, 3, 5, 4), at most 12 padded tokens: sorted rows 1 (3), 3 (4), 2 (5),
    0 (10); {1, 3} pads to 2 x 4 = 8; adding row 2 would pad to 3 x 5 = 15 > 12, so it
    opens a bucket; {2, 0} would be 2 x 10 = 20 > 12, so row 0 goes alone."""
    from recipe_arena.core.types import length_buckets

    assert length_buckets([10, 3, 5, 4], 12) == [[1, 3], [2], [0]]
    assert length_buckets([10, 3, 5, 4], None) == [[0, 1, 2, 3]]
    assert length_buckets([7], 2) == [[0]]  # longer than the budget: alone, not dropped


def test_normaliser_count_by_hand() -> None:
    """Mask rows (1,1,1,0), (0,0,0,0), (1,0,0,0) and losses 1 everywhere: token: 4
    trained tokens, numerator 4; sample: 2 rows with a trained token, each mean 1,
    numerator 2; constant: B x L_const = 3 x 5 = 15, numerator 4."""
    from recipe_arena.policy_loss.base import reduce

    mask = torch.tensor([[1.0, 1, 1, 0], [0, 0, 0, 0], [1, 0, 0, 0]])
    ones = torch.ones(3, 4)
    assert [(float(n), c) for n, c in [reduce(ones, mask, "token")]] == [(4.0, 4.0)]
    assert [(float(n), c) for n, c in [reduce(ones, mask, "sample")]] == [(2.0, 2.0)]
    assert [(float(n), c) for n, c in [reduce(ones, mask, "constant", 5)]] == [(4.0, 15.0)]


def _ragged_batch() -> LearnerBatch:
    """Four rows of lengths 9, 4, 6, 3 (right-padded to 9) with mixed-sign advantages
    and behaviour logprobs near the trainer's."""
    lengths, prompt = [9, 4, 6, 3], 2
    b, L = len(lengths), max(lengths)
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(3, 40, (b, L), generator=gen)
    attention = torch.zeros(b, L, dtype=torch.long)
    mask = torch.zeros(b, L)
    adv = torch.zeros(b, L)
    for i, (n, a) in enumerate(zip(lengths, [0.5, -0.25, 0.75, -1.0], strict=True)):
        attention[i, :n] = 1
        mask[i, prompt:n] = 1.0
        adv[i, prompt:n] = a
    tokens = tokens * attention
    return LearnerBatch(
        tokens_BL=tokens,
        mask_BL=mask,
        advantages_BL=adv,
        behavior_logprobs_BL=-3.7 * mask,
        versions_BL=torch.where(mask > 0, 0, -1),
        attention_BL=attention,
    )


@pytest.mark.parametrize(
    ("how", "kl_beta"), [("token", 0.0), ("sample", 0.0), ("constant", 0.0), ("token", 0.1)]
)
def test_microbatches_give_the_gradient_of_one_forward(how: str, kl_beta: float) -> None:
    """Rows of lengths 9, 4, 6, 3 trained in length buckets of at most 12 padded tokens
    ({3, 4}, {6}, {9}) and in one padded forward: every normalisation is a row sum over
    a count, so the accumulated gradient, hence the updated weights, and the metrics
    (computed on the whole batch) agree to float rounding; with a k3 KL term the
    reference model's logprobs are taken per micro-batch too."""
    spec = TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64)
    batch = _ragged_batch()
    results = []
    for tokens in (None, 12):
        model, _ = build_micro(spec, seed=0)
        settings = LearnerSettings(
            rl=RLConfig(lr=1e-2, temperature=1.0, max_new_tokens=8, microbatch_tokens=tokens),
            loss=LossConfig(normalisation=how, kl_beta=kl_beta),
        )
        metrics = make_learner(model, settings).train_step(batch)
        results.append((model, metrics))
    (one, m_one), (split, m_split) = results
    assert m_one["throughput/microbatches"] == 1 and m_split["throughput/microbatches"] == 3
    assert m_split["loss/grad_norm"] > 0
    for a, b in zip(one.parameters(), split.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    for key in ("loss/total", "loss/grad_norm", "staleness/logprob_diff_mean"):
        assert m_split[key] == pytest.approx(m_one[key], rel=1e-5, abs=1e-7)


def test_learner_lr_schedule_by_hand() -> None:
    """lr 1e-3, warm-up 4: the update from version v uses (v + 1) / 4 x lr while v < 4,
    so versions 0 and 1 give 2.5e-4 and 5e-4; after it the default floor of 1.0 keeps
    1e-3 (versions 4 and 50 of 10 steps). Cosine to a floor of 0.1 over 10 steps: version
    7 is halfway through the 6 decay steps, 0.1 + 0.9 x 0.5 x (1 + cos(pi/2)) = 0.55,
    and version 10 reaches the floor, 1e-4."""
    model, _ = build_micro(
        TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64), seed=0
    )

    def lr_of(version: int, floor: float) -> float:
        schedule = "constant" if floor == 1.0 else "cosine"
        rl = RLConfig(
            lr=1e-3, warmup_steps=4, steps=10, lr_schedule=schedule, lr_floor=min(floor, 1.0)
        )
        settings = LearnerSettings(rl=rl)
        return make_learner(model, settings, version=version).train_step(_positive_batch())[
            "loss/lr"
        ]

    assert [lr_of(v, 1.0) for v in (0, 1, 4, 50)] == pytest.approx([2.5e-4, 5e-4, 1e-3, 1e-3])
    assert [lr_of(v, 0.1) for v in (7, 10)] == pytest.approx([5.5e-4, 1e-4])


def test_train_step_sets_the_scheduled_lr_from_the_version() -> None:
    """A learner resumed at version 1 (one update done) with W = 4 takes update 2 at
    lr / 2, and its optimiser's param groups carry that rate (resume needs no extra
    state: the rate is a function of the version)."""
    model, _ = build_micro(
        TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64), seed=0
    )
    learner = make_learner(
        model, LearnerSettings(rl=RLConfig(lr=1e-2, temperature=1.0, warmup_steps=4)), version=1
    )
    metrics = learner.train_step(_positive_batch())
    assert metrics["loss/lr"] == pytest.approx(5e-3)
    assert learner.optimizer.param_groups[0]["lr"] == pytest.approx(5e-3)


@pytest.mark.parametrize("how", ["token", "sample", "constant"])
def test_masking_strategy_gives_the_same_gradient_in_microbatches(how: str) -> None:
    """DeepSeek's stale-token mask (max_token_lag 0, learner version 1) removes rows 0 and
    2 (their tokens were sampled at version 0) and keeps rows 1 and 3 (version 1). The
    loss is a row sum over the tokens left divided by their count (2 + 1 = 3 tokens for
    token; 2 rows for sample; B x L = 4 x 8 for constant), whatever the split: trained in
    one forward and in the micro-batches {3, 4}, {6}, {9}, the updated weights agree.
    (Normalising each micro-batch over the strategy's mask but weighting it by its share
    of the input mask made the split change the gradient.)"""
    from recipe_arena.staleness import DeepSeekMaskParams

    spec = TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64)
    batch = _ragged_batch()
    versions = torch.tensor([0, 1, 0, 1])[:, None].expand_as(batch.versions_BL)
    batch.versions_BL = torch.where(batch.mask_BL > 0, versions, -1)
    results = []
    for tokens in (None, 12):
        model, _ = build_micro(spec, seed=0)
        settings = LearnerSettings(
            rl=RLConfig(lr=1e-2, temperature=1.0, max_new_tokens=8, microbatch_tokens=tokens),
            loss=LossConfig(normalisation=how),
            staleness=DeepSeekMaskParams(delta=100.0, max_token_lag=0),
        )
        metrics = make_learner(model, settings, version=1).train_step(batch)
        results.append((model, metrics))
    (one, m_one), (split, m_split) = results
    assert m_split["throughput/microbatches"] == 3
    assert m_one["staleness/masked_token_frac"] == pytest.approx((7 + 4) / (7 + 2 + 4 + 1))
    assert m_split["loss/grad_norm"] == pytest.approx(m_one["loss/grad_norm"], rel=1e-4)
    for a, b in zip(one.parameters(), split.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
