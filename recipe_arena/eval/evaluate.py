"""Held-out evaluation: pass@1 per domain through any engine and the run's verifiers.

Each row's messages go through the chat template with the generation prompt; one
completion is sampled per row (greedy when ``eval_cfg.temperature == 0``), decoded with
special tokens kept (the verifiers look after ``</think>``) and scored. pass@1 of a
domain is the mean score of its rows: with scores in {0, 1} that is the fraction of
rows solved; with partial credit (code pass fraction) it is the mean credit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from recipe_arena.config import EvalConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.engines.base import Engine, GenerationRequest, SamplingParams


def prompt_tokens(tokenizer: Any, row: PromptRow) -> tuple[int, ...]:
    """The row's conversation with the assistant turn opened, as token ids."""
    msgs = [m.model_dump() for m in row.messages]
    enc = tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
    ids = enc if isinstance(enc, list) else enc["input_ids"]
    return tuple(int(i) for i in ids)


def decode(tokenizer: Any, tokens: Sequence[int]) -> str:
    """Completion text with special tokens kept, end-of-turn and padding removed."""
    text = str(tokenizer.decode(list(tokens), skip_special_tokens=False))
    for marker in (tokenizer.eos_token, tokenizer.pad_token):
        if marker:
            text = text.replace(marker, "")
    return text


def generate_responses(
    engine: Engine, tokenizer: Any, rows: Sequence[PromptRow], eval_cfg: EvalConfig, seed: int = 0
) -> tuple[list[str], list[int]]:
    """One decoded response per row and its length in tokens, in row order."""
    sampling = SamplingParams(
        max_new_tokens=eval_cfg.max_new_tokens, temperature=eval_cfg.temperature, seed=seed
    )
    # ids carry the position: rows from different sources may share an id
    requests = [
        GenerationRequest(f"{i}/{row.id}", prompt_tokens(tokenizer, row), sampling)
        for i, row in enumerate(rows)
    ]
    by_id = {c.request_id: c for c in engine.generate(requests)}
    comps = [by_id[r.request_id] for r in requests]
    return [decode(tokenizer, c.tokens) for c in comps], [len(c.tokens) for c in comps]


def evaluate(
    engine: Engine, tokenizer: Any, rows: Sequence[PromptRow], scorer: Any, eval_cfg: EvalConfig
) -> dict[str, float]:
    """``eval/<domain>/pass@1`` for each domain in ``rows``, their unweighted mean
    ``eval/mean/pass@1``, and the mean response length ``eval/<domain>/tokens``."""
    if not rows:
        raise ValueError("evaluate: no rows to evaluate")
    responses, lengths = generate_responses(engine, tokenizer, rows, eval_cfg)
    results = scorer.score(rows, responses)
    scores: dict[str, list[float]] = defaultdict(list)
    tokens: dict[str, list[int]] = defaultdict(list)
    for row, result, n in zip(rows, results, lengths, strict=True):
        scores[row.domain].append(float(result.score))
        tokens[row.domain].append(n)
    out: dict[str, float] = {}
    for domain in sorted(scores):
        out[f"eval/{domain}/pass@1"] = sum(scores[domain]) / len(scores[domain])
        out[f"eval/{domain}/tokens"] = sum(tokens[domain]) / len(tokens[domain])
    out["eval/mean/pass@1"] = sum(out[f"eval/{d}/pass@1"] for d in scores) / len(scores)
    return out
