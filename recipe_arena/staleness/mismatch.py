"""The engine/trainer mismatch of one batch and what the active correction did to it.

Every run logs these per learner step (``staleness/`` namespace; the suffixes are
verl's ``rollout_corr/`` names, so a reader of a verl or OpenRLHF run finds them). With
the per-token ratio of the trainer's probability to the engine's on the sampled tokens,

    r_t = exp(logp_trainer(y_t) - logp_engine(y_t))      (pi_old / pi_behavior)

and the means over the N trained tokens (the mask before the correction):

    kl           = mean_t (logp_engine - logp_trainer)                k1 estimate of
                                                                      KL(engine || trainer)
    k3_kl        = mean_t (r_t - 1 - log r_t)                         k3 estimate of the
                                                                      same KL (>= 0 per token)
    chi2_token   = mean_t r_t^2 - 1                                   chi-square divergence
                                                                      of trainer from engine
    chi2_seq     = mean_b exp(2 sum_t log r_bt) - 1                   the same for the
                                                                      sequence ratio
    rollout_is_eff_sample_size = (sum_t w_t)^2 / (N' sum_t w_t^2)     effective sample size
                                                                      of the IS weights the
                                                                      correction applied, over
                                                                      its N' kept tokens, in (0, 1]
    rollout_is_mean            = mean over kept tokens of w_t
    correction_masked_frac     = 1 - N' / N                           tokens the correction
                                                                      dropped from the loss
    correction_clipped_frac    = #{kept t : w_t != r_t} / N           tokens whose IS weight
                                                                      is not their raw ratio
                                                                      (truncated), 0 when the
                                                                      correction applies no
                                                                      weights (all w_t = 1)

Under samples from the engine E[r] = 1, so chi2_token = Var(r): the variance factor an
importance-weighted gradient pays (ESS ~ N / (1 + chi2)); k1 and k3 both estimate
KL(engine || trainer), k1 unbiased but of either sign per token, k3 non-negative. All
are sample means over one batch: when the engine and the trainer agree to float
rounding (a float32 engine), kl and the chi-squares can come out slightly below 0.
chi2_seq clamps each sequence's summed log-ratio to [-20, 20] nats so one long row
cannot overflow the mean (exp(40) ~ 2e17 stays finite).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
else:
    from recipe_arena.core.lazy import torch

SEQ_LOG_RATIO_CLAMP = 20.0
"""|sum_t log r_bt| above which chi2_seq clamps a sequence's log-ratio (nats)."""


def correction_metrics(
    trainer_BL: torch.Tensor,
    engine_BL: torch.Tensor,
    mask_BL: torch.Tensor,
    weights_BL: torch.Tensor | None = None,
    kept_BL: torch.Tensor | None = None,
) -> dict[str, float]:
    """The module docstring's metrics of one batch. ``trainer_BL``/``engine_BL``: the
    trainer's (pi_old) and the engine's logprobs of the sampled tokens; ``mask_BL``: the
    trained tokens before the correction; ``weights_BL``/``kept_BL``: the token weights
    and the mask the correction returned (None: weight 1 everywhere, nothing dropped).
    Empty when no token is trained."""
    mask = mask_BL.detach() > 0
    if not bool(mask.any()):
        return {}
    kept = mask if kept_BL is None else mask & (kept_BL.detach() > 0)
    log_r_BL = (trainer_BL.detach() - engine_BL.detach()).float() * mask
    d = log_r_BL[mask]
    r = torch.exp(d)
    n = float(mask.sum())
    seq_B = log_r_BL.sum(-1).clamp(-SEQ_LOG_RATIO_CLAMP, SEQ_LOG_RATIO_CLAMP)
    has_B = mask.any(-1)
    out = {
        "staleness/kl": float((-d).mean()),
        "staleness/k3_kl": float((r - 1.0 - d).mean()),
        "staleness/chi2_token": float(r.square().mean() - 1.0),
        "staleness/chi2_seq": float(torch.exp(2.0 * seq_B[has_B]).mean() - 1.0),
        "staleness/correction_masked_frac": 1.0 - float(kept.sum()) / n,
    }
    if weights_BL is None:
        w = torch.ones(int(kept.sum()), device=d.device)
        clipped = 0.0
    else:
        w = weights_BL.detach().float()[kept]
        r_kept = torch.exp(log_r_BL[kept])
        applies = bool((w != 1.0).any())
        off = ~torch.isclose(w, r_kept, rtol=1e-5, atol=1e-7)
        clipped = float(off.sum()) / n if applies else 0.0
    if w.numel() > 0:
        out["staleness/rollout_is_eff_sample_size"] = float(
            w.sum().square() / (w.numel() * w.square().sum()).clamp(min=1e-30)
        )
        out["staleness/rollout_is_mean"] = float(w.mean())
    out["staleness/correction_clipped_frac"] = clipped
    return out
