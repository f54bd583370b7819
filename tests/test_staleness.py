"""Staleness strategies with hand-derived values: TIS, Kimi's regulariser, shared
quantisation, DeepSeek's sequence bound and stale-token mask, the no-op; the registry."""

from __future__ import annotations

import math

import pytest
import torch

from recipe_arena.core.hooks import RunFacts
from recipe_arena.staleness import (
    STALENESS,
    DeepSeekMaskParams,
    KimiRegularizerParams,
    NoCorrectionParams,
    SharedQuantParams,
    StalenessInput,
    TISParams,
    apply_staleness,
)
from recipe_arena.staleness.shared_quant import fake_quant, is_quantised, quantise_state_dict
from recipe_arena.strategy import StrategyParams


def _inp(
    old: list[float],
    behavior: list[float],
    current: list[float] | None = None,
    versions: list[int] | None = None,
    learner_version: int = 0,
) -> StalenessInput:
    n = len(old)
    return StalenessInput(
        logprobs_BL=torch.tensor([current if current is not None else old]),
        old_logprobs_BL=torch.tensor([old]),
        behavior_logprobs_BL=torch.tensor([behavior]),
        advantages_BL=torch.ones(1, n),
        mask_BL=torch.ones(1, n),
        versions_BL=torch.tensor([versions or [0] * n]),
        learner_version=learner_version,
    )


OLD = [math.log(0.5), math.log(0.9), math.log(0.2)]
BEH = [math.log(0.4), math.log(0.3), math.log(0.4)]


def test_tis_weight_is_trainer_over_engine_probability_capped() -> None:
    """p_trainer/p_engine: 0.5/0.4 = 1.25 (kept), 0.9/0.3 = 3 -> cap 2, 0.2/0.4 = 0.5 (kept).
    One of three tokens hits the cap: fraction capped 1/3; mean weight (1.25+2+0.5)/3 = 1.25."""
    out = apply_staleness(TISParams(cap=2.0), _inp(OLD, BEH))
    assert torch.allclose(out.token_weights_BL, torch.tensor([[1.25, 2.0, 0.5]]), atol=1e-6)
    assert out.metrics["staleness/tis_capped_frac"] == pytest.approx(1 / 3)
    assert out.metrics["staleness/tis_weight_mean"] == pytest.approx(1.25)


def test_tis_cap_changes_which_tokens_are_capped() -> None:
    """Cap 1.0: 1.25 and 3 are capped to 1, 0.5 stays: fraction 2/3."""
    out = apply_staleness(TISParams(cap=1.0), _inp(OLD, BEH))
    assert torch.allclose(out.token_weights_BL, torch.tensor([[1.0, 1.0, 0.5]]), atol=1e-6)
    assert out.metrics["staleness/tis_capped_frac"] == pytest.approx(2 / 3)


def test_tis_weight_comes_from_old_not_current_logprobs() -> None:
    """Current logprobs log 0.1 everywhere (a policy that moved), old as above: the
    weights are still old/behaviour (1.25, 2, 0.5), not 0.1/0.4 = 0.25 etc."""
    out = apply_staleness(TISParams(), _inp(OLD, BEH, current=[math.log(0.1)] * 3))
    assert torch.allclose(out.token_weights_BL, torch.tensor([[1.25, 2.0, 0.5]]), atol=1e-6)


def test_none_leaves_everything_unchanged() -> None:
    out = apply_staleness(NoCorrectionParams(), _inp([-1.0, -2.0], [-3.0, -0.1]))
    assert torch.equal(out.token_weights_BL, torch.ones(1, 2))
    assert torch.equal(out.extra_loss_BL, torch.zeros(1, 2))
    assert torch.equal(out.mask_BL, torch.ones(1, 2))


def test_kimi_regularizer_value_and_gradient() -> None:
    """tau = 0.5, logp_theta - logp_behavior = (0.2, -0.4): extra = 0.25 * (0.04, 0.16)
    = (0.01, 0.04), mean 0.025; d extra / d logp_theta = tau * diff = (0.1, -0.2)."""
    cur = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    inp = StalenessInput(
        logprobs_BL=cur,
        old_logprobs_BL=cur.detach(),
        behavior_logprobs_BL=torch.tensor([[-1.2, -1.6]]),
        advantages_BL=torch.ones(1, 2),
        mask_BL=torch.ones(1, 2),
        versions_BL=torch.zeros(1, 2, dtype=torch.long),
        learner_version=0,
    )
    out = apply_staleness(KimiRegularizerParams(tau=0.5), inp)
    assert torch.allclose(out.extra_loss_BL, torch.tensor([[0.01, 0.04]]), atol=1e-6)
    assert out.metrics["staleness/kimi_regularizer"] == pytest.approx(0.025)
    out.extra_loss_BL.sum().backward()
    assert cur.grad is not None
    assert torch.allclose(cur.grad, torch.tensor([[0.1, -0.2]]), atol=1e-6)


def test_shared_quant_adds_kimi_regularizer_unless_null() -> None:
    """The loss side of shared_quant is Kimi's regulariser (same extra as
    kimi_regularizer with its tau) or, with regularizer null, nothing; both sides run
    8-bit weights (quant_bits 8), and only this strategy asks for quantisation."""
    inp = _inp([-1.0, -2.0], [-1.2, -1.6])
    with_reg = apply_staleness(SharedQuantParams(), inp)
    direct = apply_staleness(KimiRegularizerParams(), inp)
    assert torch.equal(with_reg.extra_loss_BL, direct.extra_loss_BL)
    assert with_reg.extra_loss_BL.sum() > 0
    alone = apply_staleness(SharedQuantParams(regularizer=None), inp)
    assert torch.equal(alone.extra_loss_BL, torch.zeros(1, 2))
    w = {"layers.0.q_proj.weight": torch.tensor([[1.0, -0.5, 0.25]])}
    facts = RunFacts(max_new_tokens=8, max_staleness=1)
    engine = STALENESS["shared_quant"].actor_hooks(SharedQuantParams(), facts).engine_weights
    assert torch.equal(
        engine(w)["layers.0.q_proj.weight"], quantise_state_dict(w, 8)["layers.0.q_proj.weight"]
    )
    four = STALENESS["shared_quant"].actor_hooks(SharedQuantParams(quant_bits=4), facts)
    assert torch.equal(
        four.engine_weights(w)["layers.0.q_proj.weight"], fake_quant(w["layers.0.q_proj.weight"], 4)
    )
    others = [e for name, e in STALENESS.items() if name != "shared_quant"]
    assert all(e.actor_hooks is None for e in others)


def test_fake_quant_by_hand() -> None:
    """Row (1, -0.5, 0.25), 8 bits: s = 1/127; -0.5 * 127 = -63.5 rounds (half to even)
    to -64, 0.25 * 127 = 31.75 to 32: (1, -64/127, 32/127). Row (0.1, 0.1, -0.3): s =
    0.3/127, values 42.33 -> 42, -127: (42 s, 42 s, -0.3). 2 bits: qmax 1, s = 1, row 1
    -> round(1, -0.5, 0.25) = (1, 0, 0) (-0.5 rounds half to even, to 0)."""
    w = torch.tensor([[1.0, -0.5, 0.25], [0.1, 0.1, -0.3]])
    q = fake_quant(w, 8)
    assert torch.allclose(q[0], torch.tensor([1.0, -64 / 127, 32 / 127]))
    assert torch.allclose(q[1], torch.tensor([42 * 0.3 / 127, 42 * 0.3 / 127, -0.3]))
    assert torch.allclose(fake_quant(w, 2)[0], torch.tensor([1.0, 0.0, 0.0]))


def test_only_decoder_linear_weights_are_quantised() -> None:
    """Projections and stacked expert weights are; embeddings, norms, router and LM head
    are not (and a quantised state dict leaves those tensors untouched)."""
    t2, t1 = torch.randn(4, 4), torch.randn(4)
    assert is_quantised("model.layers.0.self_attn.q_proj.weight", t2)
    assert is_quantised("model.layers.0.mlp.down_proj.weight", t2)
    assert is_quantised("model.layers.0.mlp.experts.gate_up_proj", torch.randn(2, 4, 4))
    for name in ("model.embed_tokens.weight", "lm_head.weight", "model.layers.0.mlp.gate.weight"):
        assert not is_quantised(name, t2)
    assert not is_quantised("model.layers.0.input_layernorm.weight", t1)
    sd = {"model.embed_tokens.weight": t2, "model.layers.0.self_attn.o_proj.weight": t2}
    q = quantise_state_dict(sd, 8)
    assert q["model.embed_tokens.weight"] is t2
    assert not torch.equal(q["model.layers.0.self_attn.o_proj.weight"], t2)


def _deepseek_batch() -> StalenessInput:
    """Row 0: A = -1, behaviour - theta = (0.3, 0.1): mean 0.2. Row 1: A = -1, mean
    0.02. Row 2: A = +1, mean 0.5. Versions: row 1's tokens at (3, 1) with learner 3."""
    theta = torch.tensor([[-1.0, -1.0], [-1.0, -1.0], [-1.0, -1.0]])
    beh = theta + torch.tensor([[0.3, 0.1], [0.01, 0.03], [0.5, 0.5]])
    return StalenessInput(
        logprobs_BL=theta,
        old_logprobs_BL=theta,
        behavior_logprobs_BL=beh,
        advantages_BL=torch.tensor([[-1.0, -1.0], [-1.0, -1.0], [1.0, 1.0]]),
        mask_BL=torch.ones(3, 2),
        versions_BL=torch.tensor([[3, 3], [3, 1], [2, 2]]),
        learner_version=3,
    )


def test_deepseek_sequence_bound_drops_negative_far_off_policy_rows() -> None:
    """delta 0.1, lag bound 5 (no token stale): row 0 (A < 0, 0.2 > 0.1) dropped; row 1
    (0.02 <= 0.1) kept; row 2 (0.5 > 0.1 but A > 0) kept. Fractions: 1/3 of sequences,
    2/6 of tokens; mean off-policy KL (0.2 + 0.02 + 0.5)/3 = 0.24."""
    out = apply_staleness(DeepSeekMaskParams(delta=0.1, max_token_lag=5), _deepseek_batch())
    assert out.mask_BL.tolist() == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
    assert out.metrics["staleness/masked_seq_frac"] == pytest.approx(1 / 3)
    assert out.metrics["staleness/masked_token_frac"] == pytest.approx(2 / 6)
    assert out.metrics["staleness/offpolicy_kl_mean"] == pytest.approx(0.24)


def test_deepseek_stale_token_mask() -> None:
    """delta 1 (no sequence dropped), max_token_lag 1, learner 3: lags (0,0), (0,2), (1,1):
    only row 1's second token (lag 2 > 1) is masked. With max_token_lag 0 the lag-1
    tokens of row 2 go too."""
    out = apply_staleness(DeepSeekMaskParams(delta=1.0, max_token_lag=1), _deepseek_batch())
    assert out.mask_BL.tolist() == [[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
    assert out.metrics["staleness/stale_token_frac"] == pytest.approx(1 / 6)
    strict = apply_staleness(DeepSeekMaskParams(delta=1.0, max_token_lag=0), _deepseek_batch())
    assert strict.mask_BL.tolist() == [[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]
    replay = STALENESS["deepseek_mask"].learner_hooks
    assert len(replay(DeepSeekMaskParams()).forward) == 1
    assert replay(DeepSeekMaskParams(routing_replay=False)).forward == ()
    assert STALENESS["tis"].learner_hooks is None


def test_registry_is_a_plain_dict_and_unknown_names_fail() -> None:
    assert isinstance(STALENESS, dict)
    assert {"none", "tis", "kimi_regularizer", "shared_quant", "deepseek_mask"} <= set(STALENESS)
    with pytest.raises(ValueError, match="not in this registry"):
        apply_staleness(StrategyParams(name="kimi_regularizerx"), _inp([-1.0], [-1.0]))
