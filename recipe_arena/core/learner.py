"""The learner: one optimiser step per LearnerBatch, then a new policy version.

The step, named in order: trainer logprobs (with gradient, inside the forward wrappers)
-> loss hook (the staleness strategy's weights, extra loss and mask, then the policy
loss) -> backward, clip, step -> after-update hook -> version + 1. The hooks are the
strategies' (``core.hooks``), built from the config by ``recipe_arena.wiring``. A plain
class (the loop calls it in its own thread or process).

With ``epochs = 1`` (OLMo 3's setting: one minibatch, one epoch per batch) pi_old is
the trainer's own forward in value, so the PPO ratio is 1 and TIS carries the
engine/trainer and staleness correction. With ``epochs = K > 1`` the batch is trained
K times (PPO's sample reuse): pi_old is the trainer's logprobs before the first update,
the ratio departs from 1 from the second update on and the clip binds. The policy
version still goes up by one per batch: the version counts the weights actors see.

Strategies that change the trainer's forward itself do so through forward wrappers:
shared quantisation runs it on the same fake-quantised weights as the engine
(straight-through gradient, ``staleness.shared_quant``), and routing replay sends each
token of a mixture-of-experts model to the experts the engine chose
(``staleness.deepseek_mask``).
"""

from __future__ import annotations

import copy
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from recipe_arena.core.hooks import LearnerHooks, LossArgs, LossTerms
from recipe_arena.core.logprobs import fp32_head, sequence_logprobs
from recipe_arena.core.schedule import lr_at
from recipe_arena.core.types import LearnerBatch, length_buckets

if TYPE_CHECKING:  # annotations only: the core reads the section it is given
    from recipe_arena.config import RLConfig


@dataclass(frozen=True)
class LearnerSettings:
    """What the learner reads: the RL section (lr and its schedule, AdamW, gradient
    clip, epochs, micro-batching, temperature), the hooks the strategies provide, and
    where it runs. Built from the config by ``recipe_arena.wiring``."""

    rl: RLConfig
    hooks: LearnerHooks
    """The loss terms, forward wrappers and after-update metrics (``core.hooks``)."""
    reference: bool = False
    """Keep a frozen reference model and hand its logprobs to the loss (a KL term)."""
    device: str = "cpu"
    """torch device of the model, its reference and the optimiser state; batches are
    moved there (``rl.device``)."""
    bf16: bool = False
    """Forwards under bfloat16 autocast; master weights, gradients and AdamW state stay
    float32 (``rl.bf16``)."""


class Learner:
    def __init__(
        self,
        model: nn.Module,
        settings: LearnerSettings,
        version: int = 0,
        ref_model: nn.Module | None = None,
    ) -> None:
        self.device = torch.device(settings.device)
        self.model = model.to(self.device)
        self.settings = settings
        self.version = version
        rl = settings.rl
        self.optimizer = torch.optim.AdamW(
            model.parameters(), lr=rl.lr, weight_decay=rl.weight_decay, betas=rl.adam_betas
        )
        self.hooks = settings.hooks
        self.autocast = settings.bf16 or rl.fp16
        self.autocast_dtype = torch.float16 if rl.fp16 else torch.bfloat16
        self.scaler = torch.amp.GradScaler(self.device.type, init_scale=2.0**10, enabled=rl.fp16)
        """float16 (``rl.fp16``): the loss scaled so small gradients do not underflow; a step
        whose gradients overflow is skipped and the scale halved. Starts at 2^10, not
        torch's 2^16, which overflows on the first steps and loses them in a short run."""
        self.ref_model: nn.Module | None = None
        if settings.reference:  # the reference: the given model, else the starting policy
            ref = ref_model if ref_model is not None else copy.deepcopy(model)
            self.ref_model = ref.to(self.device).eval().requires_grad_(False)

    def _logprobs(self, model: nn.Module, batch: LearnerBatch) -> torch.Tensor:
        """The trainer's forward inside the strategies' forward wrappers (module
        docstring); a wrapper may replace parameters for the forward."""
        with ExitStack() as stack:
            params: dict[str, torch.Tensor] | None = None
            for wrap in self.hooks.forward:
                replaced = stack.enter_context(wrap(model, batch))
                if replaced is not None:
                    params = {**(params or {}), **replaced}
            stack.enter_context(
                torch.autocast(self.device.type, self.autocast_dtype, enabled=self.autocast)
            )
            stack.enter_context(fp32_head(model, self.settings.rl.lm_head_fp32))
            return sequence_logprobs(
                model, batch.tokens_BL, batch.attention_BL, self.settings.rl.temperature, params
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
    ) -> LossTerms:
        """The loss hook at this learner's version."""
        return self.hooks.loss(LossArgs(batch, logp_BL, old_BL, ref_BL, self.version))

    def compute_loss(
        self, batch: LearnerBatch, old_logprobs_BL: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """Loss of ``batch`` under the current weights, one forward over all its rows, and
        its metrics (no step). ``old_logprobs_BL``: pi_old's logprobs; None takes the
        current forward's (ratio 1)."""
        self.model.train()
        batch = batch.to(self.device)
        logp_BL = self._logprobs(self.model, batch)
        if old_logprobs_BL is not None:
            old_logprobs_BL = old_logprobs_BL.to(self.device)
        old_BL = logp_BL.detach() if old_logprobs_BL is None else old_logprobs_BL
        out = self._loss(batch, logp_BL, old_BL, self._ref_logprobs(batch))
        return out.loss, {**out.metrics, **mismatch_metrics(old_BL, batch, self.version)}

    def train_step(self, batch: LearnerBatch) -> dict[str, float]:
        """``epochs`` optimiser updates on ``batch``; the policy version goes up by one.

        Each update accumulates gradients over length-bucketed row micro-batches
        (``rl.microbatch_tokens``): micro-batch m back-propagates its loss numerator and
        the summed gradient is divided by the whole batch's count under the mask the
        staleness strategy returned (``policy_loss.base``), so the gradient is the one of a
        single forward over the padded batch, without computing on its padding.
        Metrics are those of the last update, computed on the whole batch (its ratio
        and clip fractions show how far the reuse moved the policy)."""
        rl = self.settings.rl
        batch = batch.to(self.device)
        buckets = length_buckets(batch.lengths_B.tolist(), rl.microbatch_tokens)
        parts = [batch.select(rows) for rows in buckets]
        refs = olds = None
        with torch.no_grad():
            if self.ref_model is not None:
                refs = [self._logprobs(self.ref_model, p) for p in parts]
            if rl.epochs > 1:
                olds = [self._logprobs(self.model, p) for p in parts]
        self.model.train()
        floor = 1.0 if rl.lr_schedule == "constant" else rl.lr_floor
        lr = lr_at(self.version, rl.steps, rl.warmup_steps, rl.lr, floor)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        logps: list[torch.Tensor] = []
        for _ in range(rl.epochs):
            self.optimizer.zero_grad(set_to_none=True)
            logps, count = [], 0.0
            for i, part in enumerate(parts):
                logp_BL = self._logprobs(self.model, part)
                old_BL = logp_BL.detach() if olds is None else olds[i]
                out = self._loss(part, logp_BL, old_BL, None if refs is None else refs[i])
                self.scaler.scale(out.numerator).backward()  # type: ignore[no-untyped-call]
                count += out.count
                logps.append(logp_BL.detach())
            _divide_gradients(self.model, max(count, 1.0))
            self.scaler.unscale_(self.optimizer)
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), rl.grad_clip)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        with torch.no_grad():  # the whole batch's metrics, from the last update's forwards
            logp_BL = _unbucket(logps, buckets, batch.tokens_BL.shape)
            old_BL = logp_BL if olds is None else _unbucket(olds, buckets, logp_BL.shape)
            ref_BL = None if refs is None else _unbucket(refs, buckets, logp_BL.shape)
            metrics = dict(self._loss(batch, logp_BL, old_BL, ref_BL).metrics)
        metrics.update(batch.metrics)
        metrics.update(mismatch_metrics(old_BL, batch, self.version))
        if self.hooks.on_update is not None:
            metrics.update(self.hooks.on_update(self.model))
        metrics["loss/grad_norm"] = float(norm)
        if self.scaler.is_enabled():
            metrics["loss/grad_scale"] = float(self.scaler.get_scale())
        metrics["loss/lr"] = lr
        metrics["throughput/microbatches"] = float(len(parts))
        self.version += 1
        return metrics

    def weights(self) -> dict[str, torch.Tensor]:
        """Detached copies of the parameters, ready to broadcast, on the learner's
        device: an engine on the same device copies them in without a trip through
        host memory."""
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "version": self.version}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.version = int(state["version"])


def _divide_gradients(model: nn.Module, count: float) -> None:
    """Turn the accumulated numerator gradients into the gradient of numerator / count."""
    for p in model.parameters():
        if p.grad is not None:
            p.grad.div_(count)


def _unbucket(
    parts: list[torch.Tensor], buckets: list[list[int]], shape: torch.Size
) -> torch.Tensor:
    """Per-token tensors of row micro-batches put back at their rows of the full batch."""
    out_BL = torch.zeros(shape, device=parts[0].device)
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
