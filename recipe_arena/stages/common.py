"""Shared pieces of the supervised stages (base training, SFT): the optimiser and its
schedule, the step loop with a progress bar, rendering conversations, and the held-out
evaluation of a checkpoint. The cache helpers live in ``recipe_arena.cache`` (re-exported
here for the stages that import them from this module).

The schedule (``core.schedule``) is linear warm-up then cosine decay to 10% of the peak,
the usual shape for short pretraining and SFT runs; AdamW (``config_train.ADAM_BETAS``,
``WEIGHT_DECAY`` unless the stage sets its own) and gradient clipping at 1.0 as in most
open pretraining recipes (OLMo, nanoGPT).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from recipe_arena.cache import (  # noqa: F401 - re-exported for the stages
    CODE_VERSION,
    STALE_TMP_S,
    build_cached,
    cache_key,
    cache_root,
    write_json_atomic,
)
from recipe_arena.config import RunConfig
from recipe_arena.config_train import ADAM_BETAS, WEIGHT_DECAY
from recipe_arena.core.schedule import lr_at
from recipe_arena.data.schema import DOMAINS, Domain
from recipe_arena.progress import StageBar
from recipe_arena.rundir import RunDir

Batch = tuple[torch.Tensor, torch.Tensor]
"""(input_ids_BT, labels_BT); labels are -100 where no loss is taken."""


def train_steps(
    model: PreTrainedModel,
    batches: Iterator[Batch],
    *,
    steps: int,
    lr: float,
    warmup: int,
    stage: str,
    run: RunDir | None,
    log_every: int = 10,
    device: str = "cpu",
    betas: tuple[float, float] = ADAM_BETAS,
    weight_decay: float = WEIGHT_DECAY,
) -> list[float]:
    """Run ``steps`` optimiser steps of next-token cross-entropy on ``batches``; log
    ``loss/train`` and ``lr`` under ``stage``; return the per-step losses. The model,
    and each batch as it is drawn, go to ``device``; the model stays there."""
    model.to(device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=betas, weight_decay=weight_decay)
    losses: list[float] = []
    bar = StageBar(stage, steps)
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, warmup, lr)
        input_ids_BT, labels_BT = (t.to(device) for t in next(batches))
        loss = model(input_ids=input_ids_BT, labels=labels_BT).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        bar.update(1, f"loss {losses[-1]:.3f}")
        if run is not None and (step % log_every == 0 or step == steps - 1):
            window = losses[-log_every:]
            run.log(
                stage,
                step,
                {
                    "loss/train": sum(window) / len(window),
                    "lr": opt.param_groups[0]["lr"],
                    "grad_norm": float(grad_norm),
                },
            )
    bar.close()
    model.train(False)
    return losses


def render(tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]]) -> str:
    """The conversation as text through the tokenizer's chat template."""
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    assert isinstance(text, str)
    return text


def heldout_eval(
    cfg: RunConfig, checkpoint: Path, domains: Sequence[Domain] = DOMAINS
) -> dict[str, float]:
    """Held-out pass@1 per domain of ``checkpoint`` on the world's held-out rows of
    ``domains`` (all four by default; cached next to it, see
    ``eval.final.evaluate_checkpoint``, so a cached base model is evaluated once)."""
    from recipe_arena.data.micro import generate_split
    from recipe_arena.eval.final import evaluate_checkpoint

    n, seed = cfg.world.heldout_per_domain, cfg.world.data_seed
    heldout = [r for d in domains for r in generate_split(d, "heldout", n, seed)]
    return evaluate_checkpoint(cfg, checkpoint, heldout).metrics
