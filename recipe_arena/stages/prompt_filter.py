"""Offline prompt filter (OLMo 3; seed sec. 9.6): drop prompts the starting policy
already solves.

For each prompt, ``prompt_filter.rollouts`` (k = 8) completions are sampled from the
starting checkpoint at ``prompt_filter.temperature`` (1.0) and scored by the run's
verifiers; a prompt whose pass rate (fraction of completions with score 1) is above
``prompt_filter.max_pass_rate`` (0.625) is removed, and one below
``prompt_filter.min_pass_rate`` (0 in OLMo 3: none) too. Writes ``prompt_filter.jsonl`` (every
prompt's pass rate) and ``train_filtered.jsonl`` (the kept rows) into the run directory.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from pathlib import Path

from recipe_arena.config import RunConfig
from recipe_arena.core.metrics import PASS_THRESHOLD
from recipe_arena.data.chat import decode_response, encode_prompt
from recipe_arena.data.schema import PromptRow, write_rows
from recipe_arena.engines.base import GenerationRequest, SamplingParams
from recipe_arena.progress import StageBar
from recipe_arena.rundir import RunDir

CHUNK = 32
"""Prompts per generate call: bounds memory and gives progress lines (not a science setting)."""


def run_prompt_filter(
    cfg: RunConfig, run: RunDir, init: Path, rows: list[PromptRow]
) -> list[PromptRow]:
    """Return the rows whose pass rate under ``init`` is in [min_pass_rate, max_pass_rate]."""
    from recipe_arena.engines import build_engine
    from recipe_arena.models.factory import load_checkpoint
    from recipe_arena.rewards import build_scorer

    pf = cfg.prompt_filter
    todo = (
        select_prompts(rows, pf.max_prompts, cfg.rl.domain_weights)
        if pf.max_prompts is not None
        else list(rows)
    )
    model, tok = load_checkpoint(init)
    engine = build_engine(cfg.engine.name, model, tok, cfg.engine)
    rates: list[float] = []
    bar = StageBar("prompt_filter", len(todo), unit="prompt")
    try:
        with build_scorer(cfg.rewards, shared=True) as scorer:
            for start in range(0, len(todo), CHUNK):
                chunk = todo[start : start + CHUNK]
                rates += _pass_rates(cfg, engine, tok, scorer, chunk, seed=start)
                kept = sum(keep_prompt(p, pf.max_pass_rate, pf.min_pass_rate) for p in rates)
                bar.update(len(chunk), f"kept {kept}/{len(rates)}")
    finally:
        bar.close()
        engine.close()
    kept = [
        r
        for r, p in zip(todo, rates, strict=True)
        if keep_prompt(p, pf.max_pass_rate, pf.min_pass_rate)
    ]
    _write(run, todo, rates, kept)
    run.log("prompt_filter", 0, filter_metrics(todo, rates, kept))
    return kept


def domain_quotas(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Split ``total`` over the domains with positive weight in proportion to their
    weights, by largest remainder (the quotas sum to ``total``; ties go to the domain
    named first). 10 over {math: 0.5, code: 0.25, chat: 0.25}: shares 5, 2.5, 2.5, so
    5, 3, 2."""
    positive = {d: w for d, w in weights.items() if w > 0}
    norm = sum(positive.values())
    if norm <= 0:
        raise ValueError(f"no domain has a positive weight: {dict(weights)}")
    shares = {d: total * w / norm for d, w in positive.items()}
    quotas = {d: int(share) for d, share in shares.items()}
    by_remainder = sorted(positive, key=lambda d: -(shares[d] - quotas[d]))
    for d in by_remainder[: total - sum(quotas.values())]:
        quotas[d] += 1
    return quotas


def select_prompts(
    rows: Sequence[PromptRow], max_prompts: int, domain_weights: Mapping[str, float]
) -> list[PromptRow]:
    """The first rows of each domain, ``max_prompts`` in all, split over the domains
    present in proportion to the RL mixture weights (a domain RL never samples is not
    filtered), in round-robin order over domains."""
    present = {r.domain for r in rows}
    quotas = domain_quotas(max_prompts, {d: w for d, w in domain_weights.items() if d in present})
    taken: dict[str, int] = collections.Counter()
    chosen = []
    for r in rows:
        if taken[r.domain] < quotas.get(r.domain, 0):
            taken[r.domain] += 1
            chosen.append(r)
    return interleave_domains(chosen)


def interleave_domains(rows: Sequence[PromptRow]) -> list[PromptRow]:
    """Rows in round-robin order over domains (each domain's own order kept), so every
    chunk of the filter mixes the domains."""
    by_domain: dict[str, list[PromptRow]] = collections.defaultdict(list)
    for r in rows:
        by_domain[r.domain].append(r)
    queues = [collections.deque(v) for v in by_domain.values()]
    out: list[PromptRow] = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.popleft())
    return out


def keep_prompt(pass_rate: float, max_pass_rate: float, min_pass_rate: float = 0.0) -> bool:
    """Kept iff min_pass_rate <= pass_rate <= max_pass_rate (OLMo 3 removes prompts
    *above* 62.5% and keeps every hard one)."""
    return min_pass_rate <= pass_rate <= max_pass_rate


def _pass_rates(
    cfg: RunConfig,
    engine: object,
    tok: object,
    scorer: object,
    rows: Sequence[PromptRow],
    seed: int,
) -> list[float]:
    pf = cfg.prompt_filter
    params = SamplingParams(
        max_new_tokens=cfg.rl.max_new_tokens,
        temperature=pf.temperature,
        n=pf.rollouts,
        seed=cfg.seed + seed,
    )
    reqs = [
        GenerationRequest(f"{i}/{r.id}", encode_prompt(tok, r, cfg.prompt_template), params)
        for i, r in enumerate(rows)
    ]
    comps = engine.generate(reqs)  # type: ignore[attr-defined]
    texts: dict[int, list[str]] = collections.defaultdict(list)
    for c in comps:
        texts[int(c.request_id.split("/", 1)[0])].append(decode_response(tok, c.tokens))
    # scored as groups: the rubric tournament compares a prompt's rollouts with each other
    results = scorer.score_groups([(r, texts[i]) for i, r in enumerate(rows)])  # type: ignore[attr-defined]
    return [sum(res.score >= PASS_THRESHOLD for res in g) / len(g) for g in results]


def filter_metrics(
    rows: Sequence[PromptRow], rates: Sequence[float], kept: Sequence[PromptRow]
) -> dict[str, float]:
    out = {
        "prompt_filter/prompts": float(len(rows)),
        "prompt_filter/kept": float(len(kept)),
        "prompt_filter/removed": float(len(rows) - len(kept)),
        "prompt_filter/pass_rate_mean": sum(rates) / len(rates) if rates else 0.0,
    }
    kept_ids = {r.id for r in kept}
    for d in sorted({r.domain for r in rows}):
        idx = [i for i, r in enumerate(rows) if r.domain == d]
        out[f"prompt_filter/{d}/pass_rate_mean"] = sum(rates[i] for i in idx) / len(idx)
        out[f"prompt_filter/{d}/kept"] = float(sum(rows[i].id in kept_ids for i in idx))
    return out


def _write(
    run: RunDir, rows: Sequence[PromptRow], rates: Sequence[float], kept: Sequence[PromptRow]
) -> None:
    import json

    lines = [
        json.dumps({"id": r.id, "domain": r.domain, "pass_rate": p})
        for r, p in zip(rows, rates, strict=True)
    ]
    tmp = run.path / "prompt_filter.jsonl.tmp"
    tmp.write_text("".join(line + "\n" for line in lines))
    tmp.replace(run.path / "prompt_filter.jsonl")
    write_rows(run.path / "train_filtered.jsonl", kept)
