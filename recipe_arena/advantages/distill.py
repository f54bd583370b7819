"""On-policy distillation advantages (Kimi K3's multi-teacher OPD, "MOPD"; DeepSeek's
OPD from its RL checkpoint; Agarwal et al. 2024, "On-Policy Distillation of Language
Models"; Lu & Thinking Machines 2025, "On-Policy Distillation").

The student samples its own responses; a teacher scores the sampled tokens, and each
token's advantage is how much more likely the teacher found it than the student did:

    A_t = clip(log pi_teacher(y_t | x, y_<t) - log pi_student(y_t | x, y_<t), -c, c)

on completion tokens (0 elsewhere), with log pi_student the behaviour logprob of the
sampled token (the student sampled it: on-policy). Under the policy-gradient loss this
is a per-token estimate of minus the reverse KL, KL(pi_student || pi_teacher). Rewards
are not used. Each row's teacher is whichever one the prompt was routed to (its domain
and effort level, ``distill.teachers``); the metrics are given overall and per teacher.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from recipe_arena.advantages.base import AdvantageInput, AdvantageResult
from recipe_arena.core.lazy import torch
from recipe_arena.strategy import Strategy, StrategyParams


class DistillParams(StrategyParams):
    name: Literal["distill"] = "distill"
    clip: float = Field(5.0, gt=0, examples=[0.5])
    """c, the bound of the per-token advantage (nats, > 0). 5 nats is a likelihood ratio
    of about 150: it leaves the usual gap of a token the teacher prefers untouched and
    only cuts the rare tokens one model gives almost no mass (a near -inf log-probability
    would otherwise dominate the step). Kimi K3 clips without stating its bound."""


def _gap_metrics(
    gap_BL: torch.Tensor, clipped_BL: torch.Tensor, on_BL: torch.Tensor
) -> dict[str, float]:
    n = float(on_BL.sum())
    if n == 0:
        return {"gap_mean": 0.0, "gap_abs_mean": 0.0, "clipped_frac": 0.0, "tokens": 0.0}
    return {
        "gap_mean": float((gap_BL * on_BL).sum()) / n,
        "gap_abs_mean": float((gap_BL.abs() * on_BL).sum()) / n,
        "clipped_frac": float((clipped_BL * on_BL).sum()) / n,
        "tokens": n,
    }


def distill_advantages(inp: AdvantageInput, params: DistillParams) -> AdvantageResult:
    """A_t = clip(logp_teacher - logp_student, -c, c) on the mask; metrics per teacher
    (``distill/<teacher>/gap_mean``, ``gap_abs_mean``, ``clipped_frac``, ``tokens``)
    and over all rows (``distill/all/...``). The gap is the unclipped difference."""
    if inp.teacher_logprobs_BL is None:
        raise ValueError(
            "advantage 'distill' needs teacher log-probabilities: no teacher scored the "
            "rollouts (the distillation stages attach them; see distill.teachers)"
        )
    mask_BL = inp.mask_BL.float()
    gap_BL = (inp.teacher_logprobs_BL.float() - inp.behavior_logprobs_BL.float()) * mask_BL
    adv_BL = gap_BL.clamp(-params.clip, params.clip) * mask_BL
    clipped_BL = (gap_BL.abs() > params.clip).float()
    metrics = {f"distill/all/{k}": v for k, v in _gap_metrics(gap_BL, clipped_BL, mask_BL).items()}
    names = inp.teacher_B or ()
    for teacher in sorted(set(names)):
        row_B = torch.tensor([n == teacher for n in names], dtype=torch.float32)
        on_BL = mask_BL * row_B[:, None]
        for k, v in _gap_metrics(gap_BL, clipped_BL, on_BL).items():
            metrics[f"distill/{teacher}/{k}"] = v
    metrics["advantage/abs_mean"] = metrics["distill/all/gap_abs_mean"]
    return AdvantageResult(adv_BL, metrics)


STRATEGY = Strategy(DistillParams, distill_advantages)
