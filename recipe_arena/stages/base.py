"""Base training for the micro world: random weights -> a micro base model that knows
the single-step facts.

Stands in for pretraining + mid-training. The corpus is generated train-split problems
with their careful reference responses (a think block that works step by step, then
the answer) from all four domains, math weighted up, rendered as ChatML conversations
and packed into one token stream; the loss is next-token prediction on every token of
random ``seq_len`` windows, as in pretraining (no masking, documents cut at window
edges). The base model therefore always thinks step by step; the quick form (an empty
think block) first appears in SFT, which mixes the two (``sft.careful_fraction``).

Why the chat template in a base corpus: a micro character model has no capacity to
spare for learning a second format in a few hundred SFT steps, and OLMo 3's
mid-training mix (Dolmino) already contains chat-formatted question-answer and thinking
data. So the base model is evaluated with the same prompt format as SFT and RL.

Plain documents (``base.plain_fraction``, 0 by default): a share of each domain's
documents written as plain question-answer text in the simple prompt template (the
prompt, ``Assistant:``, the reply, the EOS token), most of them with the quick reply
(``base.plain_careful_fraction``). Real pretraining text holds such documents, and
RL-Zero prompts the base model in that format; its smoke base model uses them
(``recipes/rl_zero_base/smoke.yaml``). At 0 the corpus and the cache key are exactly
those of the ChatML-only base model.

The result is cached under a key that hashes everything it depends on (the base config,
the model spec, the data seed, CODE_VERSION) and reused across runs and recipes.

Deviation from the issue: none in behaviour; the corpus size per domain is a config
field (``base.corpus``) rather than ``world.train_per_domain``, so that the RL train set
can be small while the base model still sees enough problems to learn the facts.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Iterator
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from recipe_arena.cache import entry_ready
from recipe_arena.config import RunConfig
from recipe_arena.config_world import MicroWorld
from recipe_arena.data.micro import generate_examples
from recipe_arena.data.schema import Domain
from recipe_arena.data.templates import prompt_text
from recipe_arena.models.factory import build_micro
from recipe_arena.models.spec import TinyModelSpec
from recipe_arena.rundir import RunDir
from recipe_arena.stages.common import (
    build_cached,
    cache_key,
    cache_root,
    log_heldout_eval,
    render,
)
from recipe_arena.supervised import Batch, train_steps

_BASE_DATA_SEED_OFFSET = 1_000_003
"""The base corpus uses data_seed + this, so it is a different draw from the RL train rows
(both from the train split: held-out problems never enter the corpus)."""


_TOKENS_PER_DOC = 100
"""Rough mean length of a rendered base document in tokens (math ~85, code ~150,
ifeval ~200, chat ~90); only sizes the corpus of short runs."""


def micro_model(cfg: RunConfig) -> TinyModelSpec:
    """The shape of the model the base stage builds: the micro world's
    (``world.model``); other worlds bring a trained model."""
    if not isinstance(cfg.world, MicroWorld):
        raise ValueError(
            f"stage 'base' trains the micro world's model; world {cfg.world.name!r} brings "
            "its own: drop 'base' from pipeline.stages"
        )
    return cfg.world.model


def base_cache_entry(cfg: RunConfig) -> Path:
    """Where the base checkpoint for ``cfg`` lives (it may not exist yet).
    The plain-document fields enter the key only when ``base.plain_fraction`` is above
    0, so the ChatML-only base model keeps the key it had before they existed."""
    plain = {"plain_fraction", "plain_careful_fraction"}
    unkeyed = {"evaluate"} | (plain if cfg.base.plain_fraction == 0 else set())
    key = cache_key(
        {
            "stage": "base",
            "base": cfg.base.model_dump(mode="json", exclude=unkeyed),
            "model": micro_model(cfg).model_dump(mode="json"),
            "data_seed": cfg.world.data_seed,
            "world": cfg.world.name,
        }
    )
    return cache_root(cfg.world.cache_dir) / "base" / key


def corpus_sizes(cfg: RunConfig) -> dict[Domain, int]:
    """Documents per domain: ``base.corpus``, scaled down in proportion when training
    reads fewer tokens than that (steps * batch_size * seq_len, with documents of about
    ``_TOKENS_PER_DOC`` tokens), so a short run does not generate a corpus it never
    sees; at least 20 per domain."""
    wanted = cfg.base.steps * cfg.base.batch_size * cfg.base.seq_len / _TOKENS_PER_DOC
    total = sum(cfg.base.corpus.values())
    scale = min(1.0, wanted / total) if total else 1.0
    return {d: max(min(n, 20), math.ceil(n * scale)) for d, n in cfg.base.corpus.items()}


def seeded_subset(n: int, fraction: float, label: str) -> set[int]:
    """``floor(fraction * n + 0.5)`` of ``range(n)`` (nearest, halves up), drawn without
    replacement by ``random.Random(label)``: a generator of its own, so the corpus
    order does not depend on the fractions."""
    k = math.floor(fraction * n + 0.5)
    return set(random.Random(label).sample(range(n), k)) if k else set()


def plain_documents(cfg: RunConfig, domain: Domain, n: int) -> dict[int, bool]:
    """Which of a domain's ``n`` base documents are written plain (index -> whether it
    keeps the careful think block): the ``seeded_subset`` of ``base.plain_fraction``
    (label ``plain|DOMAIN|SEED``); of those, in increasing index order, the positions in
    the ``seeded_subset`` of ``base.plain_careful_fraction`` (label
    ``careful|DOMAIN|SEED``) stay careful. SEED is the corpus seed."""
    seed = cfg.world.data_seed + _BASE_DATA_SEED_OFFSET
    plain = sorted(seeded_subset(n, cfg.base.plain_fraction, f"plain|{domain}|{seed}"))
    careful = seeded_subset(len(plain), cfg.base.plain_careful_fraction, f"careful|{domain}|{seed}")
    return {i: j in careful for j, i in enumerate(plain)}


def base_corpus(cfg: RunConfig, tokenizer: PreTrainedTokenizerBase) -> torch.Tensor:
    """The packed token stream (1-D long tensor): shuffled rendered conversations, ChatML
    except the ``plain_documents`` of each domain, which are the prompt in the simple
    template (generation prompt included) followed by the careful or quick response and
    the EOS token: the very text an RL-Zero rollout is."""
    seed = cfg.world.data_seed + _BASE_DATA_SEED_OFFSET
    docs: list[str] = []
    for domain, n in corpus_sizes(cfg).items():
        plain = plain_documents(cfg, domain, n)
        for i, ex in enumerate(generate_examples(domain, "train", n, seed)):
            msgs = [m.model_dump() for m in ex.row.messages]
            if i in plain:
                response = ex.response if plain[i] else ex.quick_response
                text = prompt_text(tokenizer, msgs, "simple")
                docs.append(text + response + tokenizer.eos_token)
            else:
                reply = {"role": "assistant", "content": ex.response}
                docs.append(render(tokenizer, [*msgs, reply]))
    random.Random(seed).shuffle(docs)
    ids = tokenizer(docs, add_special_tokens=False)["input_ids"]
    return torch.tensor([t for doc in ids for t in doc], dtype=torch.long)


def packed_batches(
    stream_N: torch.Tensor, batch_size: int, seq_len: int, seed: int
) -> Iterator[Batch]:
    """Endless batches of random windows of ``seq_len`` tokens; labels = inputs (the
    model shifts them), so every token is a target."""
    gen = torch.Generator().manual_seed(seed)
    if len(stream_N) <= seq_len:
        raise ValueError(f"base corpus has {len(stream_N)} tokens, fewer than seq_len={seq_len}")
    while True:
        starts_B = torch.randint(0, len(stream_N) - seq_len, (batch_size,), generator=gen)
        input_ids_BT = torch.stack([stream_N[s : s + seq_len] for s in starts_B.tolist()])
        yield input_ids_BT, input_ids_BT.clone()


def _train(cfg: RunConfig, run: RunDir | None, out: Path) -> None:
    model, tok = build_micro(micro_model(cfg), seed=cfg.base.seed)
    t0 = time.time()
    stream_N = base_corpus(cfg, tok)
    torch.manual_seed(cfg.base.seed)
    losses = train_steps(
        model,
        packed_batches(stream_N, cfg.base.batch_size, cfg.base.seq_len, cfg.base.seed),
        steps=cfg.base.steps,
        lr=cfg.base.lr,
        warmup=min(cfg.base.warmup_steps, cfg.base.steps),
        stage="base",
        run=run,
    )
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    meta = {
        "corpus_tokens": len(stream_N),
        "steps": cfg.base.steps,
        "first_loss": losses[0] if losses else None,
        "final_loss": sum(losses[-20:]) / len(losses[-20:]) if losses else None,
        "seconds": time.time() - t0,
    }
    (out / "base_meta.json").write_text(json.dumps(meta, indent=2))


def train_base(cfg: RunConfig, run: RunDir | None) -> Path:
    """The cached micro base checkpoint for ``cfg`` (trained on first use), or
    ``world.checkpoint`` when one is given. Logs held-out pass@1 per domain under the
    ``base`` stage when ``base.evaluate`` is on (the numbers are cached too; on a first
    run the chat scores wait for the micro judge, ``eval.deferred``)."""
    if cfg.world.checkpoint is not None:
        return Path(cfg.world.checkpoint)
    entry = base_cache_entry(cfg)
    cached = entry_ready(entry)
    build_cached(entry, lambda tmp: _train(cfg, run, tmp))
    meta = json.loads((entry / "base_meta.json").read_text())
    if run is not None:
        run.log("base", cfg.base.steps, {"cached": float(cached), "seconds": meta["seconds"]})
        if cfg.base.evaluate:
            log_heldout_eval(cfg, run, "base", cfg.base.steps, entry)
    return entry
