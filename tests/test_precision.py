"""Precision settings of the learner: the LM head in float32 under autocast
(``rl.lm_head_fp32``) and float16 autocast with loss scaling (``rl.fp16``)."""

from __future__ import annotations

import torch
from torch import nn

from recipe_arena.config import RLConfig
from recipe_arena.core.logprobs import fp32_head
from recipe_arena.core.types import LearnerBatch
from recipe_arena.models.factory import TinyModelSpec, build_micro
from recipe_arena.wiring import LearnerSettings, make_learner


class _Head(nn.Module):
    """A one-layer 'model': hidden state -> LM head, under whatever autocast is on."""

    def __init__(self) -> None:
        super().__init__()
        self.lm_head = nn.Linear(1, 1, bias=False)
        with torch.no_grad():
            self.lm_head.weight.fill_(1.0)

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lm_head(x)


def test_fp32_head_keeps_the_bits_bfloat16_drops() -> None:
    """x = 1 + 2^-10, weight 1. bfloat16 has 7 stored mantissa bits, so under bfloat16
    autocast x rounds to 1 and the logit is 1.0; with the head in float32 it is
    1 + 2^-10 = 1.0009765625 exactly (float32 keeps 23 bits). Outside the block the head
    is the module's own again."""
    m = _Head()
    x = torch.tensor([[1.0 + 2**-10]])
    with torch.autocast("cpu", torch.bfloat16):
        plain = m(x)
        with fp32_head(m):
            wide = m(x)
        after = m(x)
    assert float(plain.detach()) == 1.0
    assert wide.dtype == torch.float32 and float(wide.detach()) == 1.0 + 2**-10
    assert float(after.detach()) == 1.0
    with torch.autocast("cpu", torch.bfloat16), fp32_head(m, enabled=False):
        assert float(m(x).detach()) == 1.0


def _batch() -> LearnerBatch:
    return LearnerBatch(
        tokens_BL=torch.tensor([[8, 9, 10, 11, 12, 13], [8, 9, 14, 15, 0, 0]]),
        mask_BL=torch.tensor([[0.0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 0, 0]]),
        advantages_BL=torch.tensor([[0.0, 0, 2, 2, 2, 2], [0, 0, -2, -2, 0, 0]]),
        behavior_logprobs_BL=torch.full((2, 6), -4.0),
        versions_BL=torch.zeros((2, 6), dtype=torch.long),
        attention_BL=torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]),
    )


def _step(rl: RLConfig) -> tuple[dict[str, float], list[torch.Tensor]]:
    model, _ = build_micro(
        TinyModelSpec(hidden_size=16, num_layers=1, num_heads=1, intermediate_size=32), seed=0
    )
    learner = make_learner(model, LearnerSettings(rl=rl))
    metrics = learner.train_step(_batch())
    return metrics, [p.detach().clone() for p in model.parameters()]


def test_fp16_step_is_close_to_the_float32_step_and_scaled() -> None:
    """One AdamW step at lr 1e-3 under float16 autocast moves each weight by about lr
    (Adam's first step is lr * sign(g) wherever g is not tiny), as the float32 step
    does: the two updates agree to well under lr on average, the gradient norms to a
    few percent, and the loss scaler holds a scale above 1 (the float16 loss was scaled
    up before backward, then unscaled before the clip)."""
    rl32, rl16 = RLConfig(lr=1e-3), RLConfig(lr=1e-3, fp16=True)
    m32, w32 = _step(rl32)
    m16, w16 = _step(rl16)
    model, _ = build_micro(
        TinyModelSpec(hidden_size=16, num_layers=1, num_heads=1, intermediate_size=32), seed=0
    )
    w0 = [p.detach() for p in model.parameters()]
    moved32 = torch.cat([(a - b).flatten() for a, b in zip(w32, w0, strict=True)])
    moved16 = torch.cat([(a - b).flatten() for a, b in zip(w16, w0, strict=True)])
    assert moved16.abs().max() > 5e-4  # the float16 step trained
    assert (moved16 - moved32).abs().mean() < 2e-4
    assert abs(m16["loss/grad_norm"] - m32["loss/grad_norm"]) < 0.05 * m32["loss/grad_norm"]
    learner = make_learner(
        build_micro(
            TinyModelSpec(hidden_size=16, num_layers=1, num_heads=1, intermediate_size=32), seed=0
        )[0],
        LearnerSettings(rl=rl16),
    )
    learner.train_step(_batch())
    assert learner.scaler.get_scale() > 1.0


def test_fp16_and_bf16_together_are_refused() -> None:
    import pytest

    with pytest.raises(ValueError, match="choose one autocast dtype"):
        RLConfig(fp16=True, bf16=True)
