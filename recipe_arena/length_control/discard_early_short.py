"""Discard early short samples (DeepSeek-AI 2026, "DeepSeek-V4.1-Flash", arXiv:2609.19969;
seed Table 9.2, row "Length control": "discards early short samples to counter the bias
of asynchronous generation toward short rollouts"). Our precise definition:

    a group is discarded  iff  phi + D > (k + 1) * W

phi: decode steps from the opening of the generation window (the engine's last weight
update) to the group's first token; W: mean decode steps per window (between two
updates); D: the steps a full-length response takes (the response cap, or
``full_length``); k: rl.max_staleness.

Why: with in-flight updates the learner drops a group whose oldest token lags more than
k versions, i.e. one still generating k + 1 windows after its start. Which groups those
are depends on their length, so training sees a short-biased sample: of the groups that
start late in a window, the long ones go stale while the short ones finish early in the
next window and are trained. The rule discards every group that starts too late in its
window for a full-length response to be trained, short ones included; what is kept is
selected by start phase alone, which does not depend on length, and can never go
stale, so the trained length distribution is the sampled one (and no stale prompt is
resampled until it happens to come out short). The price is the discarded share,
max(0, D / W - k) of the groups; with D <= k W nothing is discarded, nor is anything
stale.

Deviations: the report gives no formula. The window is measured in the torch engine's
decode steps (one token per running sequence per step); with an engine that does not
count them (hf, vLLM), or before the first window has closed, nothing is discarded.
"""

from __future__ import annotations

from typing import Literal

import torch
from pydantic import Field

from recipe_arena.core.strategy import StrategyParams
from recipe_arena.length_control.base import LengthInput, LengthResult


class DiscardEarlyShortParams(StrategyParams):
    name: Literal["discard_early_short"] = "discard_early_short"
    full_length: int | None = Field(None, ge=1)
    """D, decode steps a full-length response takes (tokens, >= 1); None: the response
    cap rl.max_new_tokens, which guarantees no kept group goes stale. A smaller D (a
    high percentile of the lengths) discards less and lets the few longer ones go stale."""


def discard_early_short(inp: LengthInput, params: DiscardEarlyShortParams) -> LengthResult:
    """Keep the group iff phi + D <= (k + 1) W (module docstring); counts what it drops."""
    g = inp.rewards_G.shape[0]
    known = bool((inp.phase_steps_G >= 0).all()) and inp.window_steps is not None
    keep = True
    if known and g:
        phase = int(inp.phase_steps_G.min())
        full = params.full_length if params.full_length is not None else inp.response_cap
        keep = phase + full <= (inp.max_staleness + 1) * float(inp.window_steps or 0.0)
    keep_G = torch.full((g,), keep, dtype=torch.bool)
    return LengthResult(
        inp.rewards_G,
        keep_G,
        {
            "length/discarded_short": float(g if not keep else 0),
            "length/discarded_groups": float(not keep),
        },
    )
