"""Held-out evaluation: pass@1 per domain through any engine and the run's verifiers.

Each row's messages go through the prompt template (``prompt_template``) with the generation prompt;
``eval_cfg.samples`` completions are sampled per row at ``eval_cfg.temperature`` (one
greedy completion when the temperature is 0), decoded with special tokens kept (the
verifiers look after ``</think>``) and scored. A row's score is the mean score of its
completions, the unbiased estimate of its pass@1 (Chen et al. 2021, with k = 1); pass@1
of a domain is the mean score of its rows: with scores in {0, 1} and one completion that
is the fraction of rows solved; with partial credit (code pass fraction) the mean credit.
Every row samples from its own seeded streams (``row_seed``), so two checkpoints
evaluated on the same rows draw the same random numbers for each row, and a difference
between them is not drowned in sampling noise that they do not share.

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
from recipe_arena.data.chat import decode_response, encode_prompt
from recipe_arena.data.schema import PromptRow
from recipe_arena.engines.base import Engine, GenerationRequest, SamplingParams


def samples_per_row(eval_cfg: EvalConfig) -> int:
    """Completions drawn per row: ``eval_cfg.samples``, or 1 when decoding is greedy (every
    greedy completion of a row is the same)."""
    return eval_cfg.samples if eval_cfg.temperature > 0 else 1


def row_seed(seed: int, index: int) -> int:
    """The sampling seed of the row at ``index`` of an evaluation seeded with ``seed``."""
    return seed * 1_000_003 + index


def generate_samples(
    engine: Engine,
    tokenizer: Any,
    rows: Sequence[PromptRow],
    eval_cfg: EvalConfig,
    seed: int = 0,
    template: str = "chat",
) -> tuple[list[list[str]], list[list[int]]]:
    """``samples_per_row`` decoded responses per row and their lengths in tokens, in row
    order (each row's completions in sample order)."""
    n = samples_per_row(eval_cfg)
    # ids carry the position: rows from different sources may share an id
    requests = [
        GenerationRequest(
            f"{i}/{row.id}",
            encode_prompt(tokenizer, row, template),
            SamplingParams(
                max_new_tokens=eval_cfg.max_new_tokens,
                temperature=eval_cfg.temperature,
                n=n,
                seed=row_seed(seed, i),
            ),
        )
        for i, row in enumerate(rows)
    ]
    by_id: dict[str, list[Any]] = defaultdict(list)
    for c in engine.generate(requests):
        by_id[c.request_id].append(c)
    comps = [sorted(by_id[r.request_id], key=lambda c: c.sample_index) for r in requests]
    if any(len(c) != n for c in comps):
        raise RuntimeError(f"engine returned {[len(c) for c in comps]} completions, not {n} a row")
    texts = [[decode_response(tokenizer, c.tokens) for c in row] for row in comps]
    return texts, [[len(c.tokens) for c in row] for row in comps]


def generate_responses(
    engine: Engine,
    tokenizer: Any,
    rows: Sequence[PromptRow],
    eval_cfg: EvalConfig,
    seed: int = 0,
    template: str = "chat",
) -> tuple[list[str], list[int]]:
    """One decoded response per row and its length in tokens, in row order (the first
    completion of ``generate_samples`` with one sample a row)."""
    one = eval_cfg.model_copy(update={"samples": 1})
    texts, lengths = generate_samples(engine, tokenizer, rows, one, seed, template)
    return [t[0] for t in texts], [n[0] for n in lengths]


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
    texts, lengths = generate_samples(engine, tokenizer, rows, eval_cfg, template=template)
    n = samples_per_row(eval_cfg)
    flat = scorer.score([r for r in rows for _ in range(n)], [t for row in texts for t in row])
    return summarise(rows, row_means([float(r.score) for r in flat], n), lengths)


def row_means(flat: Sequence[float], n: int) -> list[float]:
    """The mean of each consecutive run of ``n`` scores: a row's score from its ``n``
    completions' scores, in row order."""
    return [sum(flat[i * n : (i + 1) * n]) / n for i in range(len(flat) // n)]


def summarise(
    rows: Sequence[PromptRow], row_scores: Sequence[float], lengths: Sequence[Sequence[int]]
) -> Evaluation:
    """``evaluate``'s metrics from each row's score (``row_means``) and its completions'
    lengths in tokens, with the row scores (``evaluate_rows``'s result)."""
    scores: dict[str, list[float]] = defaultdict(list)
    tokens: dict[str, list[float]] = defaultdict(list)
    for row, score, lens in zip(rows, row_scores, lengths, strict=True):
        scores[row.domain].append(score)
        tokens[row.domain].append(sum(lens) / len(lens))
    out: dict[str, float] = {}
    for domain in sorted(scores):
        out[f"eval/{domain}/pass@1"] = sum(scores[domain]) / len(scores[domain])
        out[f"eval/{domain}/tokens"] = sum(tokens[domain]) / len(tokens[domain])
    out["eval/mean/pass@1"] = sum(out[f"eval/{d}/pass@1"] for d in scores) / len(scores)
    return Evaluation(out, list(row_scores))


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
