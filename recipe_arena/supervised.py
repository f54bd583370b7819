"""Supervised next-token training, shared by the base and SFT stages and the micro judge:
the step loop (``train_steps``), the SFT mask of a conversation (``assistant_mask``) and
its length-grouped batches (``sft_batches``).

The schedule (``core.schedule``) is linear warm-up then cosine decay to 10% of the peak,
the usual shape for short pretraining and SFT runs; AdamW (``config_train.ADAM_BETAS``,
``WEIGHT_DECAY`` unless the stage sets its own) and gradient clipping at 1.0 as in most
open pretraining recipes (OLMo, nanoGPT).

Mask (``assistant_mask``): 1 on the tokens an assistant turn produces, its content and
its end-of-turn token; 0 on system and user turns with their template markers and on
the assistant header ``<|im_start|>assistant\\n`` (the generation prompt supplies it at
inference, so the model never has to produce it). Found by rendering growing prefixes
of the conversation through the tokenizer's chat template, so it works for any template
whose renderings are prefixes of each other (ChatML, Llama 3, OLMo 3).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import torch
from transformers import PreTrainedTokenizerBase

from recipe_arena.config_train import ADAM_BETAS, WEIGHT_DECAY
from recipe_arena.core.schedule import lr_at
from recipe_arena.progress import StageBar


class MetricsLog(Protocol):
    """Where ``train_steps`` logs (a ``rundir.RunDir``)."""

    def log(self, stage: str, step: int, metrics: dict[str, float]) -> None: ...


Batch = tuple[torch.Tensor, torch.Tensor]
"""(input_ids_BT, labels_BT); labels are -100 where no loss is taken."""


def train_steps(
    model: torch.nn.Module,
    batches: Iterator[Batch],
    *,
    steps: int,
    lr: float,
    warmup: int,
    stage: str,
    run: MetricsLog | None,
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


def assistant_mask(
    tokenizer: PreTrainedTokenizerBase, messages: Sequence[dict[str, str]]
) -> tuple[list[int], list[int]]:
    """(input_ids, mask) of the whole conversation; mask is 1 exactly on each assistant
    turn's content and its end-of-turn token (see the module docstring)."""
    return assistant_masks(tokenizer, [messages])[0]


def assistant_masks(
    tokenizer: PreTrainedTokenizerBase, conversations: Sequence[Sequence[dict[str, str]]]
) -> list[tuple[list[int], list[int]]]:
    """``assistant_mask`` of each conversation, with all their distinct renderings
    tokenized in one call, as ``apply_chat_template`` tokenizes a rendering (no special
    tokens added). Why: a call's overhead outweighs the work on a short conversation, and
    the micro judge masks ~30,000 of them, many repeated."""
    texts: list[str] = []
    turns: list[tuple[int, list[tuple[int, int]]]] = []  # text indices: full; per turn
    for messages in conversations:
        if messages and messages[0]["role"] == "assistant":
            raise ValueError(
                "conversation starts with an assistant turn; start with system or user"
            )
        full = len(texts)
        texts.append(_text(tokenizer, messages, gen=False))
        mine = []
        for k, msg in enumerate(messages):
            if msg["role"] != "assistant":
                continue
            before = len(texts)
            texts.append(_text(tokenizer, messages[:k], gen=True))
            upto = full  # the conversation up to this turn is the whole of it when it ends it
            if k + 1 < len(messages):
                upto = len(texts)
                texts.append(_text(tokenizer, messages[: k + 1], gen=False))
            mine.append((before, upto))
        turns.append((full, mine))
    unique = list(dict.fromkeys(texts))  # repeated conversations are tokenized once
    ids_of = dict(
        zip(
            unique,
            tokenizer(unique, add_special_tokens=False)["input_ids"] if unique else [],
            strict=True,
        )
    )
    encoded = [ids_of[t] for t in texts]
    eos = tokenizer.eos_token_id
    out = []
    for full, mine in turns:
        ids = [int(i) for i in encoded[full]]
        mask = [0] * len(ids)
        for before, upto in mine:
            start, prefix = len(encoded[before]), encoded[upto]
            turn = ids[start : len(prefix)]
            if ids[: len(prefix)] != list(prefix) or eos not in turn:
                raise ValueError(
                    "chat template renderings are not prefixes of each other; cannot mask"
                )
            last_eos = start + len(turn) - 1 - turn[::-1].index(eos)
            for t in range(start, last_eos + 1):
                mask[t] = 1
        out.append((ids, mask))
    return out


def _text(tokenizer: PreTrainedTokenizerBase, messages: Sequence[dict[str, str]], gen: bool) -> str:
    text: Any = tokenizer.apply_chat_template(
        list(messages), add_generation_prompt=gen, tokenize=False
    )
    return str(text)


LENGTH_GROUP = 8
"""Batches per length group of ``sft_batches``: each group of 8 batches is drawn at once,
sorted by length and cut into batches, so a batch pads to members of similar length
(HF Trainer's ``group_by_length`` does the same). The micro judge draws its batches
ungrouped (``rewards.micro_judge``), so each mixes the kinds of verdict."""


def sft_batches(
    examples: Sequence[tuple[list[int], list[int]]],
    batch_size: int,
    pad_id: int,
    seed: int,
    group: int = LENGTH_GROUP,
    unit: int = 1,
) -> Iterator[Batch]:
    """Endless batches drawn with replacement, right-padded to the longest member;
    labels are -100 on padding and wherever the mask is 0. ``group`` batches at a time
    are drawn together and split by length (``LENGTH_GROUP``), then yielded in a random
    order; ``group=1`` draws each batch on its own. ``unit`` consecutive examples
    (``examples[unit * i : unit * (i + 1)]``) are drawn as one and stay in one batch (the
    micro judge's verdict pairs); ``batch_size`` and ``len(examples)`` must be multiples
    of it. With ``unit=1`` the draws are those of each example on its own."""
    if group < 1:
        raise ValueError(f"group={group} must be >= 1")
    if unit < 1 or batch_size % unit or len(examples) % unit:
        raise ValueError(
            f"unit={unit} must be >= 1 and divide batch_size={batch_size} and the "
            f"{len(examples)} examples"
        )
    rng = random.Random(seed)
    per_batch, units = batch_size // unit, len(examples) // unit
    while True:
        starts = [unit * rng.randrange(units) for _ in range(per_batch * group)]
        drawn = [examples[s : s + unit] for s in starts]
        if group > 1:
            drawn.sort(key=lambda members: max(len(ids) for ids, _ in members))
        batches = [
            [e for members in drawn[i * per_batch : (i + 1) * per_batch] for e in members]
            for i in range(group)
        ]
        if group > 1:
            rng.shuffle(batches)
        for chosen in batches:
            yield _padded(chosen, batch_size, pad_id)


def _padded(chosen: Sequence[tuple[list[int], list[int]]], batch_size: int, pad_id: int) -> Batch:
    T = max(len(ids) for ids, _ in chosen)
    input_ids_BT = torch.full((batch_size, T), pad_id, dtype=torch.long)
    labels_BT = torch.full((batch_size, T), -100, dtype=torch.long)
    for b, (ids, mask) in enumerate(chosen):
        ids_T = torch.tensor(ids)
        input_ids_BT[b, : len(ids)] = ids_T
        labels_BT[b, : len(ids)] = torch.where(torch.tensor(mask, dtype=torch.bool), ids_T, -100)
    return input_ids_BT, labels_BT
