"""The learner: one optimiser step per LearnerBatch, then a new policy version.

The step, named in order: trainer logprobs (with gradient) -> staleness strategy (TIS
weights, extra loss, masks) -> OlmoRL policy loss -> backward, clip, step -> version + 1.
A plain class (the loop calls it in its own thread or process).

With ``epochs = 1`` (OLMo 3's setting: one minibatch, one epoch per batch) pi_old is
the trainer's own forward in value, so the PPO ratio is 1 and TIS carries the
engine/trainer and staleness correction. With ``epochs = K > 1`` the batch is trained
K times (PPO's sample reuse): pi_old is the trainer's logprobs before the first update,
the ratio departs from 1 from the second update on and the clip binds. The policy
version still goes up by one per batch: the version counts the weights actors see.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.core.loss import PolicyLossInput, normaliser_count, policy_loss
from recipe_arena.core.schedule import lr_at
from recipe_arena.core.types import LearnerBatch, length_buckets
from recipe_arena.staleness import StalenessInput, StalenessParams, get_staleness


@dataclass(frozen=True)
class LearnerSettings:
    lr: float
    temperature: float
    """Trainer logprobs use the sampling temperature so they compare with the engine's."""
    clip_low: float = 0.2
    clip_high: float = 0.272
    normalisation: str = "token"
    kl_beta: float = 0.0
    constant_len: int = 1
    staleness: str = "tis"
    staleness_params: StalenessParams = StalenessParams()
    grad_clip: float = 1.0
    weight_decay: float = 0.0
    epochs: int = 1
    """Optimiser updates per batch, each over the whole batch (module docstring)."""
    microbatch_tokens: int | None = None
    """Padded tokens per learner forward (rows of similar length together); None: one
    forward over the whole padded batch. The gradient is the same either way."""
    warmup_steps: int = 0
    total_steps: int = 1
    lr_floor: float = 1.0
    """Schedule (``core.schedule.lr_at``): update k (0-based: the version it starts from)
    warms up over ``warmup_steps``, then decays by a cosine to ``lr_floor * lr`` at
    ``total_steps``; a floor of 1.0 keeps ``lr`` constant after warm-up."""


class Learner:
    def __init__(
        self,
        model: nn.Module,
        settings: LearnerSettings,
        version: int = 0,
        ref_model: nn.Module | None = None,
    ) -> None:
        self.model = model
        self.settings = settings
        self.version = version
        self.staleness_fn = get_staleness(settings.staleness)
        self.optimizer = torch.optim.AdamW(
            model.parameters(),
            lr=settings.lr,
            weight_decay=settings.weight_decay,
            betas=(0.9, 0.99),
        )
        self.ref_model: nn.Module | None = None
        if settings.kl_beta > 0:  # the reference: the given model, else the starting policy
            ref = ref_model if ref_model is not None else copy.deepcopy(model)
            self.ref_model = ref.eval().requires_grad_(False)

    def _logprobs(self, model: nn.Module, batch: LearnerBatch) -> torch.Tensor:
        return sequence_logprobs(
            model, batch.tokens_BL, batch.attention_BL, self.settings.temperature
        )

    def _ref_logprobs(self, batch: LearnerBatch) -> torch.Tensor | None:
        if self.ref_model is None:
            return None
        with torch.no_grad():
            return self._logprobs(self.ref_model, batch)

    def _loss(
        self,
        batch: LearnerBatch,
        logp_BL: torch.Tensor,
        old_BL: torch.Tensor,
        ref_BL: torch.Tensor | None,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """Staleness strategy then policy loss, from logprobs already computed (the
        engine-vs-trainer metrics are the caller's: once per batch, not per micro-batch)."""
        s = self.settings
        st = self.staleness_fn(
            StalenessInput(
                logprobs_BL=logp_BL,
                old_logprobs_BL=old_BL,
                behavior_logprobs_BL=batch.behavior_logprobs_BL,
                advantages_BL=batch.advantages_BL,
                mask_BL=batch.mask_BL,
                versions_BL=batch.versions_BL,
                learner_version=self.version,
                params=s.staleness_params,
            )
        )
        out = policy_loss(
            PolicyLossInput(
                logprobs_BL=logp_BL,
                old_logprobs_BL=old_BL,
                advantages_BL=batch.advantages_BL,
                mask_BL=st.mask_BL,
                token_weights_BL=st.token_weights_BL,
                extra_loss_BL=st.extra_loss_BL,
                ref_logprobs_BL=ref_BL,
                clip_low=s.clip_low,
                clip_high=s.clip_high,
                normalisation=s.normalisation,
                kl_beta=s.kl_beta,
                constant_len=s.constant_len,
            )
        )
        return out.loss, {**out.metrics, **st.metrics}

    def compute_loss(
        self, batch: LearnerBatch, old_logprobs_BL: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """Loss of ``batch`` under the current weights, one forward over all its rows, and
        its metrics (no step). ``old_logprobs_BL``: pi_old's logprobs; None takes the
        current forward's (ratio 1)."""
        self.model.train()
        logp_BL = self._logprobs(self.model, batch)
        old_BL = logp_BL.detach() if old_logprobs_BL is None else old_logprobs_BL
        loss, metrics = self._loss(batch, logp_BL, old_BL, self._ref_logprobs(batch))
        return loss, {**metrics, **mismatch_metrics(old_BL, batch, self.version)}

    def train_step(self, batch: LearnerBatch) -> dict[str, float]:
        """``epochs`` optimiser updates on ``batch``; the policy version goes up by one.

        Each update accumulates gradients over length-bucketed row micro-batches
        (``microbatch_tokens``): micro-batch m contributes its loss times
        count(m) / count(batch) (``normaliser_count``), so the gradient is the one of a
        single forward over the padded batch, without computing on its padding.
        Metrics are those of the last update, computed on the whole batch (its ratio
        and clip fractions show how far the reuse moved the policy)."""
        s = self.settings
        buckets = length_buckets(batch.lengths_B.tolist(), s.microbatch_tokens)
        parts = [batch.select(rows) for rows in buckets]
        total = normaliser_count(batch.mask_BL, s.normalisation, s.constant_len)
        refs = olds = None
        with torch.no_grad():
            if self.ref_model is not None:
                refs = [self._logprobs(self.ref_model, p) for p in parts]
            if s.epochs > 1:
                olds = [self._logprobs(self.model, p) for p in parts]
        self.model.train()
        lr = lr_at(self.version, s.total_steps, s.warmup_steps, s.lr, s.lr_floor)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        logps: list[torch.Tensor] = []
        for _ in range(s.epochs):
            self.optimizer.zero_grad(set_to_none=True)
            logps = []
            for i, part in enumerate(parts):
                logp_BL = self._logprobs(self.model, part)
                old_BL = logp_BL.detach() if olds is None else olds[i]
                loss, _ = self._loss(part, logp_BL, old_BL, None if refs is None else refs[i])
                share = normaliser_count(part.mask_BL, s.normalisation, s.constant_len)
                (loss * (share / max(total, 1.0))).backward()  # type: ignore[no-untyped-call]
                logps.append(logp_BL.detach())
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), s.grad_clip)
            self.optimizer.step()
        with torch.no_grad():  # the whole batch's metrics, from the last update's forwards
            logp_BL = _unbucket(logps, buckets, batch.tokens_BL.shape)
            old_BL = logp_BL if olds is None else _unbucket(olds, buckets, logp_BL.shape)
            ref_BL = None if refs is None else _unbucket(refs, buckets, logp_BL.shape)
            _, metrics = self._loss(batch, logp_BL, old_BL, ref_BL)
        metrics.update(mismatch_metrics(old_BL, batch, self.version))
        metrics["loss/grad_norm"] = float(norm)
        metrics["loss/lr"] = lr
        metrics["throughput/microbatches"] = float(len(parts))
        self.version += 1
        return metrics

    def weights(self) -> dict[str, torch.Tensor]:
        """Detached copies of the parameters, ready to broadcast."""
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "version": self.version}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.version = int(state["version"])


def _unbucket(
    parts: list[torch.Tensor], buckets: list[list[int]], shape: torch.Size
) -> torch.Tensor:
    """Per-token tensors of row micro-batches put back at their rows of the full batch."""
    out_BL = torch.zeros(shape)
    for part_BL, rows in zip(parts, buckets, strict=True):
        out_BL[rows, : part_BL.shape[1]] = part_BL
    return out_BL


def mismatch_metrics(
    trainer_BL: torch.Tensor, batch: LearnerBatch, learner_version: int
) -> dict[str, float]:
    """Engine-vs-trainer logprob difference |logp_trainer - logp_engine| (mean, max), the
    k3 estimate of KL(engine || trainer) on the sampled tokens, and the staleness lag
    histogram (tokens per learner_version - token_version)."""
    mask = batch.mask_BL.bool()
    if not mask.any():
        return {}
    d = (trainer_BL.detach() - batch.behavior_logprobs_BL)[mask]
    k3 = torch.exp(d) - d - 1.0
    lag = (learner_version - batch.versions_BL[mask]).clamp(min=0)
    out = {
        "staleness/logprob_diff_mean": float(d.abs().mean()),
        "staleness/logprob_diff_max": float(d.abs().max()),
        "staleness/kl_engine_trainer": float(k3.mean()),
        "staleness/lag_mean": float(lag.float().mean()),
        "staleness/lag_max": float(lag.max()),
    }
    for k, n in zip(*torch.unique(lag, return_counts=True), strict=True):
        out[f"staleness/lag_hist/{int(k)}"] = float(n) / float(mask.sum())
    return out
