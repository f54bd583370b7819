"""Think SFT: chat conversations whose assistant turns are thinking traces (a think
block, then the answer), loss on assistant tokens only.

Data: a fresh draw of train-split problems from all four domains (never held-out ones),
one assistant reference per problem. A share of the conversations opens with a system
prompt, and a share has two user/assistant exchanges, so the model learns to answer the
last question of a longer context; every assistant turn is a target.

Mask and batches: ``supervised.assistant_mask`` and ``supervised.sft_batches``.

Deviation from OLMo 3 (Dolci-Think-SFT): synthetic traces written by the generators
rather than traces from a stronger reasoning model, and a few hundred steps instead of
epochs over 2.3M examples.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import torch

from recipe_arena.config import RunConfig
from recipe_arena.data.micro import Example, generate_examples
from recipe_arena.data.schema import DOMAINS
from recipe_arena.models.factory import load_checkpoint, save_checkpoint
from recipe_arena.rundir import RunDir
from recipe_arena.stages.common import log_heldout_eval
from recipe_arena.supervised import assistant_mask, sft_batches, train_steps

SYSTEM_PROMPT = "You are a helpful assistant. Think inside <think></think>, then answer."
_SFT_DATA_SEED_OFFSET = 2_000_003
"""SFT draws data_seed + this: a different draw from the base corpus and the RL rows."""


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
        log_heldout_eval(cfg, run, "sft", cfg.sft.steps, out)
    return out
