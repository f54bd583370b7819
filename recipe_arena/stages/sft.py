"""Think SFT: chat conversations whose assistant turns are thinking traces (a think
block, then the answer), loss on assistant tokens only.

Data: a fresh draw of train-split problems from all four domains (never held-out ones),
one assistant reference per problem. A share of the conversations opens with a system
prompt, and a share has two user/assistant exchanges, so the model learns to answer the
last question of a longer context; every assistant turn is a target.

Mask and batches: ``supervised.assistant_mask`` and ``supervised.sft_batches``.

Stored and shared: with ``pipeline.reuse_prefix`` (a study's runs) the trained weights
and the stage's training records are stored in the model cache under a key of
everything the training reads (``sft_cache_entry``), and a run whose key matches copies
them instead of training. Stored prefixes (``prefix_cache``) that differ only in what
comes after SFT (DPO's selection, the audit, the prompt filter's domains, the verifiers,
the sampler's precision) then train SFT once: about 2 minutes each on micro.

Deviation from OLMo 3 (Dolci-Think-SFT): synthetic traces written by the generators
rather than traces from a stronger reasoning model, and a few hundred steps instead of
epochs over 2.3M examples.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import shutil
from pathlib import Path

import torch

from recipe_arena.cache import build_cached, cache_key, cache_root, entry_ready
from recipe_arena.config import RunConfig
from recipe_arena.data.micro import Example, generate_examples
from recipe_arena.data.schema import DOMAINS
from recipe_arena.integrity import CHECKSUMS, _sha256
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


CHECKPOINT_DIR = "checkpoint"
RECORDS_FILE = "sft_records.jsonl"
"""A stored SFT entry: the trained checkpoint and the stage's metrics.jsonl records."""


def checkpoint_digest(path: Path) -> str:
    """SHA-256 of a checkpoint directory's content: of its ``checksums.json`` (written by
    ``save_checkpoint``, the SHA-256 of every file) when it has one, else of the same
    listing made here, a checkpoint's cached evaluations (eval-*.json) aside."""
    listed = path / CHECKSUMS
    if listed.is_file():
        return hashlib.sha256(listed.read_bytes()).hexdigest()
    files = sorted(p for p in path.rglob("*") if p.is_file())
    sums = {
        str(f.relative_to(path)): _sha256(f) for f in files if not f.name.startswith(("eval-", "."))
    }
    return hashlib.sha256(json.dumps(sums, sort_keys=True).encode()).hexdigest()


def sft_cache_entry(cfg: RunConfig, init: Path, threads: int) -> Path:
    """Where SFT from ``init`` under ``cfg`` with ``threads`` torch threads is stored:
    keyed by the starting checkpoint's content, the SFT settings (less ``evaluate`` and
    ``device``, which enters as the device it resolves to), the world's settings (its
    data seed draws the conversations), the seed and the thread count (the
    floating-point sums)."""
    key = cache_key(
        {
            "stage": "sft",
            "init": checkpoint_digest(init),
            "sft": cfg.sft.model_dump(mode="json", exclude={"evaluate", "device"}),
            "device": cfg.device_for("sft"),
            "world": cfg.world.model_dump(mode="json", exclude={"checkpoint", "cache_dir"}),
            "seed": cfg.seed,
            "threads": threads,
        }
    )
    return cache_root(cfg.world.cache_dir) / "sft" / key


def run_sft(cfg: RunConfig, run: RunDir, init: Path) -> Path:
    """SFT from checkpoint ``init``; returns ``<run>/checkpoints/sft``. Logs ``loss/train``
    and ``lr`` under ``sft``, then held-out pass@1 per domain when ``sft.evaluate``. With
    ``pipeline.reuse_prefix`` the trained checkpoint and its records come from the model
    cache when a run with the same key stored them (module docstring)."""
    out = run.checkpoints / "sft"
    if cfg.pipeline.reuse_prefix:
        entry = sft_cache_entry(cfg, init, torch.get_num_threads())
        stored = entry_ready(entry)
        build_cached(entry, lambda tmp: _store(cfg, run, init, tmp))  # verifies a stored one
        if stored:
            print(f"stage sft: trained weights reused from {entry} (pipeline.reuse_prefix)")
        _restore(entry, run, out)
    else:
        _train(cfg, run, init, out)
    if cfg.sft.evaluate:
        log_heldout_eval(cfg, run, "sft", cfg.sft.steps, out)
    return out


def _train(cfg: RunConfig, run: RunDir | None, init: Path, out: Path) -> Path:
    """Train SFT from ``init`` (records to ``run``) and save the checkpoint at ``out``."""
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
    return save_checkpoint(model, tok, out)


def _store(cfg: RunConfig, run: RunDir, init: Path, tmp: Path) -> None:
    """Train into the entry being built at ``tmp`` and keep the records the training
    logged; the run's own records are dropped here and put back by ``_restore``, as
    for a run that found the entry stored."""
    run.drop_records(lambda r: r.get("stage") == "sft")
    _train(cfg, run, init, tmp / CHECKPOINT_DIR)
    path = run.metrics_path
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    mine = [line for line in lines if json.loads(line).get("stage") == "sft"]
    (tmp / RECORDS_FILE).write_text("".join(line + "\n" for line in mine), encoding="utf-8")
    run.drop_records(lambda r: r.get("stage") == "sft")


def _restore(entry: Path, run: RunDir, out: Path) -> None:
    """Copy the stored checkpoint to ``out`` and append the stored records to the run's
    metrics.jsonl."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(entry / CHECKPOINT_DIR, out)
    with open(run.metrics_path, "a", encoding="utf-8") as f:
        f.write((entry / RECORDS_FILE).read_text(encoding="utf-8"))
