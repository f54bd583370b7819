"""Think SFT: chat conversations whose assistant turns are thinking traces (a think
block, then the answer), loss on assistant tokens only.

Data: a fresh draw of train-split problems from all four domains (never held-out ones),
one assistant reference per problem. A share of the conversations opens with a system
prompt, and a share has two user/assistant exchanges, so the model learns to answer the
last question of a longer context; every assistant turn is a target.

Mask (``assistant_mask``): 1 on the tokens an assistant turn produces, its content and
its end-of-turn token; 0 on system and user turns with their template markers and on
the assistant header ``<|im_start|>assistant\\n`` (the generation prompt supplies it at
inference, so the model never has to produce it). Found by rendering growing prefixes
of the conversation through the tokenizer's chat template, so it works for any template
whose renderings are prefixes of each other (ChatML, Llama 3, OLMo 3).

Deviation from OLMo 3 (Dolci-Think-SFT): synthetic traces written by the generators
rather than traces from a stronger reasoning model, and a few hundred steps instead of
epochs over 2.3M examples.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from recipe_arena.config import RunConfig
from recipe_arena.data.micro import Example, generate_examples
from recipe_arena.data.schema import DOMAINS
from recipe_arena.models.factory import load_checkpoint, save_checkpoint
from recipe_arena.rundir import RunDir
from recipe_arena.stages.common import Batch, heldout_eval, train_steps

SYSTEM_PROMPT = "You are a helpful assistant. Think inside <think></think>, then answer."
_SFT_DATA_SEED_OFFSET = 2_000_003
"""SFT draws data_seed + this: a different draw from the base corpus and the RL rows."""


def _ids(
    tokenizer: PreTrainedTokenizerBase, messages: Sequence[dict[str, str]], gen: bool
) -> list[int]:
    enc: Any = tokenizer.apply_chat_template(
        list(messages), add_generation_prompt=gen, tokenize=True
    )
    ids = enc if isinstance(enc, list) else enc["input_ids"]
    return [int(i) for i in ids]


def assistant_mask(
    tokenizer: PreTrainedTokenizerBase, messages: Sequence[dict[str, str]]
) -> tuple[list[int], list[int]]:
    """(input_ids, mask) of the whole conversation; mask is 1 exactly on each assistant
    turn's content and its end-of-turn token (see the module docstring)."""
    if messages and messages[0]["role"] == "assistant":
        raise ValueError("conversation starts with an assistant turn; start with system or user")
    eos = tokenizer.eos_token_id
    ids = _ids(tokenizer, messages, gen=False)
    mask = [0] * len(ids)
    for k, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        start = len(_ids(tokenizer, messages[:k], gen=True))
        end = len(_ids(tokenizer, messages[: k + 1], gen=False))
        turn = ids[start:end]
        if ids[:end] != _ids(tokenizer, messages[: k + 1], gen=False) or eos not in turn:
            raise ValueError("chat template renderings are not prefixes of each other; cannot mask")
        last_eos = start + len(turn) - 1 - turn[::-1].index(eos)
        for t in range(start, last_eos + 1):
            mask[t] = 1
    return ids, mask


def sft_examples_per_domain(cfg: RunConfig) -> int:
    """``sft.examples_per_domain``, capped at what the run draws (steps * batch_size
    conversations over four domains, at least 20 each), so short runs build small sets."""
    drawn = math.ceil(cfg.sft.steps * cfg.sft.batch_size / len(DOMAINS))
    return min(cfg.sft.examples_per_domain, max(20, drawn))


def sft_conversations(cfg: RunConfig) -> list[list[dict[str, str]]]:
    """The SFT set: one conversation per drawn example, some with a system prompt and
    some with an earlier exchange (a short math or chat one) before it."""
    seed = cfg.world.data_seed + _SFT_DATA_SEED_OFFSET
    rng = random.Random(seed)
    n = sft_examples_per_domain(cfg)
    pools = {d: generate_examples(d, "train", n, seed) for d in DOMAINS}
    short = pools["math"] + pools["chat"]

    def turn(ex: Example) -> list[dict[str, str]]:
        shares = cfg.sft.careful_fraction.get(ex.row.domain, {})
        careful = shares.get(ex.row.effort, 1.0) if ex.row.effort else 1.0
        response = ex.response if rng.random() < careful else ex.quick_response
        return [
            *(m.model_dump() for m in ex.row.messages),
            {"role": "assistant", "content": response},
        ]

    convs = []
    for ex in (e for d in DOMAINS for e in pools[d]):
        msgs = turn(ex)
        if rng.random() < cfg.sft.two_turn_fraction:
            msgs = turn(rng.choice(short)) + msgs
        if rng.random() < cfg.sft.system_prompt_fraction:
            msgs = [{"role": "system", "content": SYSTEM_PROMPT}, *msgs]
        convs.append(msgs)
    rng.shuffle(convs)
    return convs


LENGTH_GROUP = 8
"""Batches per length group of ``sft_batches``: each group of 8 batches is drawn at once,
sorted by length and cut into batches, so a batch pads to members of similar length
(HF Trainer's ``group_by_length`` does the same). On the micro world's SFT set 52% of a
randomly drawn batch's tokens are real, 88% of a grouped one's. The micro judge draws
its batches ungrouped (``stages.micro_judge``): grouping its verdicts by length put one
kind of verdict in a batch, and it learned less."""


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


def run_sft(cfg: RunConfig, run: RunDir, init: Path) -> Path:
    """SFT from checkpoint ``init``; returns ``<run>/checkpoints/sft``. Logs ``loss/train``
    and ``lr`` under ``sft``, then held-out pass@1 per domain when ``sft.evaluate``."""
    model, tok = load_checkpoint(init)
    limit = model.config.max_position_embeddings
    examples = [assistant_mask(tok, c) for c in sft_conversations(cfg)]
    examples = [e for e in examples if len(e[0]) <= limit]  # over-long two-turn ones
    torch.manual_seed(cfg.seed)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    train_steps(
        model,
        sft_batches(examples, cfg.sft.batch_size, int(pad), cfg.seed),
        steps=cfg.sft.steps,
        lr=cfg.sft.lr,
        warmup=min(cfg.sft.warmup_steps, cfg.sft.steps),
        stage="sft",
        run=run,
        device=cfg.device_for("sft"),
        betas=cfg.sft.adam_betas,
        weight_decay=cfg.sft.weight_decay,
    )
    out = save_checkpoint(model, tok, run.checkpoints / "sft")
    if cfg.sft.evaluate:
        run.log("sft", cfg.sft.steps, heldout_eval(cfg, out))
    return out
