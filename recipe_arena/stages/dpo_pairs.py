"""Delta-learning preference pairs for the DPO stage (Geng et al. 2025; OLMo 3 sec. 4.3).

Each pair puts a strong model's response (chosen) against a deliberately weak model's
(rejected) on the same prompt: the quality of the pair is the difference between the
two, not either alone. In the micro world the strong model is, by default, the
generator's reference solutions, the traces the SFT data imitated (OLMo 3's chosen came
from Qwen3-32B, the source of its SFT traces), and the weak model is the base checkpoint
the SFT stage started from, sampled at temperature 1 (OLMo 3's rejected came from
Qwen3-0.6B). ``dpo.chosen=policy`` samples the chosen from the DPO stage's own starting
checkpoint instead.

Prompts are a draw of their own from the train split, mixed by ``dpo.domain_weights``.
A share (``dpo.multiturn_fraction``) opens with an earlier exchange (a short math or chat
problem with its reference answer, OLMo 3's synthetic-context form): chosen and rejected
then share that whole context and differ only in the final assistant turn. Such pairs
form the ``multiturn`` subset; every other pair's subset is its domain.

Length-bias control: a pair whose chosen response is more than ``dpo.length_cap(subset)``
tokens longer than its rejected one is dropped (OLMo 3: 100 tokens for its chat and
multi-turn subsets). ``length_percentiles`` reports the chosen-minus-rejected length
difference before and after the cap.

Deviation from OLMo 3: no LM judge picks the rejected response among several weak
models (the delta-aware GPT-judged pairs of OLMo 3 Instruct); the pairing is the
heuristic one (strong model against weak model).
"""

from __future__ import annotations

import collections
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from recipe_arena.config import RunConfig
from recipe_arena.data.chat import conversation
from recipe_arena.data.micro import generate_examples, generate_split
from recipe_arena.data.schema import Domain, PromptRow
from recipe_arena.data.templates import encode_messages
from recipe_arena.engines.base import GenerationRequest, SamplingParams
from recipe_arena.stages.prompt_filter import domain_quotas

PAIR_SEED_OFFSET = 3_000_017
"""Pair prompts use data_seed + this: a draw apart from the SFT set and the RL rows."""
VALIDATION_SEED_OFFSET = 4_000_037
"""The validation slice uses data_seed + this (train split: held-out rows stay untouched)."""
CANDIDATE_FACTOR = 4
"""Prompts drawn per wanted pair at most (the length cap drops some pairs)."""
CHUNK = 64
"""Prompts per generate call: bounds memory and gives progress lines."""
PERCENTILES = (10, 50, 80, 90)
"""Length-difference percentiles reported (OLMo 3 quotes the 80th)."""


@dataclass(frozen=True)
class Candidate:
    """A pair prompt before responses: the conversation up to its final user turn."""

    id: str
    domain: Domain
    subset: str
    messages: tuple[dict[str, str], ...]
    reference: str
    row: PromptRow
    """The final turn's prompt row (ground truth for scoring the responses)."""


@dataclass(frozen=True)
class PreferencePair:
    """One prompt's token ids with a chosen and a rejected response, each ending where
    its turn ends (the end-of-turn token, or the cap of a truncated sample)."""

    id: str
    subset: str
    prompt_tokens: tuple[int, ...]
    chosen_tokens: tuple[int, ...]
    rejected_tokens: tuple[int, ...]

    @property
    def length_delta(self) -> int:
        """len(chosen) - len(rejected), in tokens."""
        return len(self.chosen_tokens) - len(self.rejected_tokens)


def length_cap_filter(
    pairs: Sequence[PreferencePair], cap_of: Any
) -> tuple[list[PreferencePair], list[PreferencePair]]:
    """(kept, dropped): a pair is dropped iff ``cap_of(subset)`` is not None and its
    chosen response is more than that many tokens longer than its rejected one."""
    kept: list[PreferencePair] = []
    dropped: list[PreferencePair] = []
    for p in pairs:
        cap = cap_of(p.subset)
        (dropped if cap is not None and p.length_delta > cap else kept).append(p)
    return kept, dropped


def length_percentiles(
    pairs: Sequence[PreferencePair], qs: Sequence[int] = PERCENTILES
) -> dict[str, float]:
    """``p<q>`` of the chosen-minus-rejected length difference (linear interpolation
    between order statistics, numpy's default), and the pair count ``n``."""
    if not pairs:
        return {"n": 0.0}
    delta_P = torch.tensor([float(p.length_delta) for p in pairs], dtype=torch.float64)
    out = {f"p{q}": float(torch.quantile(delta_P, q / 100)) for q in qs}
    out["n"] = float(len(pairs))
    return out


def length_report(
    before: Sequence[PreferencePair], after: Sequence[PreferencePair]
) -> dict[str, dict[str, dict[str, float]]]:
    """subset (and ``all``) -> {before, after} -> percentiles."""
    out = {"all": {"before": length_percentiles(before), "after": length_percentiles(after)}}
    for subset in sorted({p.subset for p in before}):
        out[subset] = {
            "before": length_percentiles([p for p in before if p.subset == subset]),
            "after": length_percentiles([p for p in after if p.subset == subset]),
        }
    return out


# ----------------------------------------------------------------------------- prompts
def pair_candidates(cfg: RunConfig, n: int) -> list[Candidate]:
    """``n`` pair prompts from the train split, split over domains by
    ``dpo.domain_weights`` (largest remainder), in a seeded shuffled order; a
    ``dpo.multiturn_fraction`` share opens with an earlier exchange."""
    seed = cfg.world.data_seed + PAIR_SEED_OFFSET
    rng = random.Random(seed)
    quotas = domain_quotas(n, {str(d): w for d, w in cfg.dpo.domain_weights.items()})
    pools = {d: generate_examples(d, "train", q, seed) for d, q in quotas.items()}  # type: ignore[arg-type]
    context = generate_examples("math", "train", 50, seed + 1) + generate_examples(
        "chat", "train", 50, seed + 1
    )
    out: list[Candidate] = []
    for ex in (e for pool in pools.values() for e in pool):
        msgs = [m.model_dump() for m in ex.row.messages]
        subset: str = ex.row.domain
        if rng.random() < cfg.dpo.multiturn_fraction:
            earlier = rng.choice(context)
            msgs = conversation(earlier.row, earlier.response) + msgs
            subset = "multiturn"
        out.append(Candidate(ex.row.id, ex.row.domain, subset, tuple(msgs), ex.response, ex.row))
    rng.shuffle(out)
    return out


def validation_rows(cfg: RunConfig, exclude: Sequence[Candidate]) -> list[PromptRow]:
    """``dpo.validation_prompts`` rows per domain from a train-split draw of their own,
    leaving out problems that are pair prompts (the held-out evaluation rows are another
    split altogether, so selection never sees them)."""
    seed = cfg.world.data_seed + VALIDATION_SEED_OFFSET
    taken = {c.row.prompt_text for c in exclude}
    rows: list[PromptRow] = []
    for domain, n in cfg.dpo.validation_prompts.items():
        pool = generate_split(domain, "train", 2 * n + len(taken), seed)
        rows += [r for r in pool if r.prompt_text not in taken][:n]
    return rows


# ----------------------------------------------------------------------------- responses
def sample_responses(
    engine: Any,
    tokenizer: Any,
    cands: Sequence[Candidate],
    cfg: RunConfig,
    seed: int,
) -> list[tuple[int, ...]]:
    """One sampled response per candidate (token ids, with the end-of-turn token when it
    stopped), at ``dpo.temperature`` with a cap of ``dpo.max_new_tokens``."""
    params = SamplingParams(
        max_new_tokens=cfg.dpo.max_new_tokens, temperature=cfg.dpo.temperature, seed=seed
    )
    reqs = [
        GenerationRequest(f"{i}/{c.id}", prompt_ids(tokenizer, c, cfg), params)
        for i, c in enumerate(cands)
    ]
    by_id = {c.request_id: c for c in engine.generate(reqs)}
    return [tuple(by_id[r.request_id].tokens) for r in reqs]


def prompt_ids(tokenizer: Any, cand: Candidate, cfg: RunConfig) -> tuple[int, ...]:
    return encode_messages(tokenizer, list(cand.messages), cfg.prompt_template)


def reference_ids(tokenizer: Any, text: str) -> tuple[int, ...]:
    """A written response as the tokens a model would produce: the text, then end-of-turn."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return (*(int(i) for i in ids), int(tokenizer.eos_token_id))


@dataclass
class PairSet:
    """What ``build_pairs`` produced: kept pairs, every pair before the cap, and counts."""

    kept: list[PreferencePair]
    before_cap: list[PreferencePair]
    candidates: list[Candidate]
    texts: dict[str, tuple[str, str]]
    """pair id -> (chosen, rejected) decoded, for the pairs file and scoring."""
    counts: collections.Counter[str]


def build_pairs(
    cfg: RunConfig,
    tokenizer: Any,
    weak_engine: Any,
    policy_engine: Any | None,
    target: int,
    context_limit: int,
    progress: Any = print,
) -> PairSet:
    """Pairs, in candidate order, until ``target`` survive the length cap or
    ``CANDIDATE_FACTOR * target`` prompts were tried; pairs longer than
    ``context_limit`` tokens are skipped (counted as ``too_long``)."""
    from recipe_arena.data.chat import decode_response

    cands = pair_candidates(cfg, CANDIDATE_FACTOR * target)
    out = PairSet([], [], [], {}, collections.Counter())
    for start in range(0, len(cands), CHUNK):
        if len(out.kept) >= target:
            break
        chunk = cands[start : start + CHUNK]
        rejected = sample_responses(weak_engine, tokenizer, chunk, cfg, cfg.seed + start)
        if policy_engine is not None:  # dpo.chosen == "policy"
            chosen = sample_responses(policy_engine, tokenizer, chunk, cfg, cfg.seed + start + 1)
        else:
            chosen = [reference_ids(tokenizer, c.reference) for c in chunk]
        for cand, ch, rj in zip(chunk, chosen, rejected, strict=True):
            if len(out.kept) >= target:  # the rest of the chunk is not used
                break
            out.candidates.append(cand)
            prompt = prompt_ids(tokenizer, cand, cfg)
            if len(prompt) + max(len(ch), len(rj)) > context_limit:
                out.counts["too_long"] += 1
                continue
            pair = PreferencePair(cand.id, cand.subset, prompt, ch, rj)
            out.before_cap.append(pair)
            out.texts[cand.id] = (decode_response(tokenizer, ch), decode_response(tokenizer, rj))
            kept, _ = length_cap_filter([pair], cfg.dpo.length_cap)
            out.kept += kept
            out.counts["dropped_length" if not kept else "kept"] += 1
        progress(f"dpo pairs: {len(out.kept)}/{target} kept from {len(out.candidates)} prompts")
    return out


def pair_contrast(pairs: PairSet, scorer: Any) -> dict[str, float]:
    """Verifier pass rate of the chosen and the rejected responses per domain, over
    every pair before the length cap (chat, judged by an LM, is left out: delta learning
    needs no judge, and this is only a report of how strong the contrast is)."""
    by_id = {c.id: c for c in pairs.candidates}
    pick = [p for p in pairs.before_cap if by_id[p.id].domain != "chat"]
    if not pick:
        return {}
    rows = [by_id[p.id].row for p in pick]
    chosen = scorer.score(rows, [pairs.texts[p.id][0] for p in pick])
    rejected = scorer.score(rows, [pairs.texts[p.id][1] for p in pick])
    acc: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for row, c, r in zip(rows, chosen, rejected, strict=True):
        acc[row.domain].append((float(c.score), float(r.score)))
    out: dict[str, float] = {}
    for d, vals in sorted(acc.items()):
        out[f"dpo/pairs/{d}/chosen_score"] = sum(c for c, _ in vals) / len(vals)
        out[f"dpo/pairs/{d}/rejected_score"] = sum(r for _, r in vals) / len(vals)
    return out


def write_pairs_file(path: Path, pairs: PairSet) -> None:
    """Every pair before the cap, one JSON object a line: id, subset, length delta,
    whether the cap kept it, the final user turn, chosen and rejected text."""
    import json

    kept = {p.id for p in pairs.kept}
    by_id = {c.id: c for c in pairs.candidates}
    lines = [
        json.dumps(
            {
                "id": p.id,
                "subset": p.subset,
                "length_delta": p.length_delta,
                "kept": p.id in kept,
                "turns": len(by_id[p.id].messages),
                "prompt": by_id[p.id].row.prompt_text,
                "chosen": pairs.texts[p.id][0],
                "rejected": pairs.texts[p.id][1],
            }
        )
        for p in pairs.before_cap
    ]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines))
    tmp.replace(path)
