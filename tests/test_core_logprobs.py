"""sequence_logprobs aligns position l with token l and matches a direct computation."""

from __future__ import annotations

import torch

from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.models.factory import TinyModelSpec, build_micro


def test_alignment_and_padding_against_direct_softmax() -> None:
    """Position l must equal log softmax(logits[l-1] / T)[token l]; position 0 and padding are 0,
    and a right-padded row gives the same values as the same row alone."""
    model, _ = build_micro(
        TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64)
    )
    model.eval()
    tokens = torch.tensor([[8, 9, 10, 11, 12], [8, 9, 10, 0, 0]])
    attn = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    with torch.no_grad():
        lp = sequence_logprobs(model, tokens, attn, temperature=0.7)
        logits = model(input_ids=tokens[:1]).logits[0] / 0.7
        direct = torch.log_softmax(logits, -1)
        alone = sequence_logprobs(model, tokens[1:, :3], None, temperature=0.7)
    assert lp[0, 0] == 0
    for pos in range(1, 5):
        assert torch.isclose(lp[0, pos], direct[pos - 1, tokens[0, pos]], atol=1e-5)
    assert torch.equal(lp[1, 3:], torch.zeros(2))
    assert torch.allclose(lp[1, :3], alone[0], atol=1e-5)
