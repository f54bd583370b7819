"""Held-out evaluation: pass@1 per domain through any engine and the run's verifiers.

Each row's messages go through the prompt template (``prompt_template``) with the generation prompt; one
completion is sampled per row (greedy when ``eval_cfg.temperature == 0``), decoded with
special tokens kept (the verifiers look after ``</think>``) and scored. pass@1 of a
domain is the mean score of its rows: with scores in {0, 1} that is the fraction of
rows solved; with partial credit (code pass fraction) it is the mean credit.

``churn`` compares two evaluations of the same rows row by row: the mean gain over
rows that rose (``fixed``) and the mean loss over rows that fell (``broken``), so the
change of pass@1 is fixed - broken, and a small change can be told apart from a large
turnover (many problems solved and about as many lost).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recipe_arena.config import EvalConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.engines.base import Engine, GenerationRequest, SamplingParams
from recipe_arena.models.chat import decode_response, encode_prompt


def generate_responses(
    engine: Engine,
    tokenizer: Any,
    rows: Sequence[PromptRow],
    eval_cfg: EvalConfig,
    seed: int = 0,
    template: str = "chat",
) -> tuple[list[str], list[int]]:
    """One decoded response per row and its length in tokens, in row order."""
    sampling = SamplingParams(
        max_new_tokens=eval_cfg.max_new_tokens, temperature=eval_cfg.temperature, seed=seed
    )
    # ids carry the position: rows from different sources may share an id
    requests = [
        GenerationRequest(f"{i}/{row.id}", encode_prompt(tokenizer, row, template), sampling)
        for i, row in enumerate(rows)
    ]
    by_id = {c.request_id: c for c in engine.generate(requests)}
    comps = [by_id[r.request_id] for r in requests]
    return [decode_response(tokenizer, c.tokens) for c in comps], [len(c.tokens) for c in comps]


@dataclass(frozen=True)
class Evaluation:
    """``metrics`` (``evaluate``) and each evaluated row's score, in row order."""

    metrics: dict[str, float]
    scores: list[float]


def evaluate_rows(
    engine: Engine,
    tokenizer: Any,
    rows: Sequence[PromptRow],
    scorer: Any,
    eval_cfg: EvalConfig,
    template: str = "chat",
) -> Evaluation:
    """``evaluate``'s metrics and the per-row scores behind them; prompts are written with
    ``template`` (``data.templates``)."""
    if not rows:
        raise ValueError("evaluate: no rows to evaluate")
    responses, lengths = generate_responses(engine, tokenizer, rows, eval_cfg, template=template)
    row_scores = [float(r.score) for r in scorer.score(rows, responses)]
    scores: dict[str, list[float]] = defaultdict(list)
    tokens: dict[str, list[int]] = defaultdict(list)
    for row, score, n in zip(rows, row_scores, lengths, strict=True):
        scores[row.domain].append(score)
        tokens[row.domain].append(n)
    out: dict[str, float] = {}
    for domain in sorted(scores):
        out[f"eval/{domain}/pass@1"] = sum(scores[domain]) / len(scores[domain])
        out[f"eval/{domain}/tokens"] = sum(tokens[domain]) / len(tokens[domain])
    out["eval/mean/pass@1"] = sum(out[f"eval/{d}/pass@1"] for d in scores) / len(scores)
    return Evaluation(out, row_scores)


def evaluate(
    engine: Engine, tokenizer: Any, rows: Sequence[PromptRow], scorer: Any, eval_cfg: EvalConfig
) -> dict[str, float]:
    """``eval/<domain>/pass@1`` for each domain in ``rows``, their unweighted mean
    ``eval/mean/pass@1``, and the mean response length ``eval/<domain>/tokens``."""
    return evaluate_rows(engine, tokenizer, rows, scorer, eval_cfg).metrics


def churn(
    domains: Sequence[str], before: Sequence[float], after: Sequence[float]
) -> dict[str, float]:
    """``eval/<domain>/fixed`` = mean over the domain's rows of max(0, after - before) and
    ``eval/<domain>/broken`` = mean of max(0, before - after); rows aligned by position."""
    if not len(domains) == len(before) == len(after):
        raise ValueError(f"churn: {len(domains)} domains, {len(before)} and {len(after)} scores")
    gains: dict[str, list[float]] = defaultdict(list)
    losses: dict[str, list[float]] = defaultdict(list)
    for domain, b, a in zip(domains, before, after, strict=True):
        gains[domain].append(max(0.0, a - b))
        losses[domain].append(max(0.0, b - a))
    out: dict[str, float] = {}
    for domain in sorted(gains):
        out[f"eval/{domain}/fixed"] = sum(gains[domain]) / len(gains[domain])
        out[f"eval/{domain}/broken"] = sum(losses[domain]) / len(losses[domain])
    return out
