"""Which reply form a micro checkpoint chooses on held-out math, and how often it is right.

For every held-out math prompt (``--prompts``, the world's default data seed) the
checkpoint writes ``--samples`` responses at ``--temperature`` through the held-out
evaluation's sampler (``eval.evaluate.generate_samples``: 0 is one greedy response, above 0
each row has a sampling seed of its own, so a rerun gives the same figures). Per number of repeats k and per
operation (``+`` or ``-``) it prints the share of responses in the careful form (a
non-empty think block) and the share scored right by the math verifier; then, for the
wrong careful responses, where the think block first departs from the reference
procedure (``start``: the start or its last digit, ``stepN``: the N-th step, ``answer``:
every step right, the boxed digit or the length wrong). Why: held-out pass@1 alone does
not show whether the policy still has to choose the careful form or has chosen it and
slips inside it; the RL curve's shape depends on which.

Run: python benchmarks/math_forms.py CHECKPOINT [--temperature 1.0] [--samples 8]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict
from pathlib import Path

from recipe_arena.compose import load_config
from recipe_arena.data.micro import generate_split
from recipe_arena.data.micro_math import digit_steps
from recipe_arena.engines import build_engine
from recipe_arena.eval.evaluate import generate_samples
from recipe_arena.models.factory import load_checkpoint
from recipe_arena.rewards import build_scorer

QUESTION = re.compile(r"last digit of (\d+)([+-])(\d)\*(\d)\?")
"""The micro math question: start, operation, digit, repeats (``data.micro_math``)."""
QUICK = "<think></think>"


def first_departure(response: str, start: int, op: str, d: int, k: int) -> str:
    """Where a careful response's think block first differs from the reference steps."""
    steps, _ = digit_steps(start, op, d, k)
    body = response.split("</think>")[0].removeprefix("<think>")
    for j, (want, got) in enumerate(zip(steps, body.split(", "), strict=False)):
        if want != got:
            return "start" if j == 0 else f"step{j}"
    return "answer"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--prompts", type=int, default=600)
    a = ap.parse_args()
    cfg = load_config(["recipe=olmo3_think"])
    rows = generate_split("math", "heldout", a.prompts, cfg.world.data_seed)
    model, tok = load_checkpoint(a.checkpoint)
    engine = build_engine(cfg.engine.name, model, tok, cfg.engine)
    sampling = cfg.eval.model_copy(update={"temperature": a.temperature, "samples": a.samples})
    try:
        per_row, _ = generate_samples(engine, tok, rows, sampling, template=cfg.prompt_template)
    finally:
        engine.close()
    asked = [row for row, texts in zip(rows, per_row, strict=True) for _ in texts]
    texts = [text for row_texts in per_row for text in row_texts]
    with build_scorer(cfg.rewards) as scorer:
        results = scorer.score(asked, texts)
    cells: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    departures: Counter[tuple[str, str]] = Counter()
    for row, text, result in zip(asked, texts, results, strict=True):
        m = QUESTION.search(row.messages[-1].content)
        if m is None:
            raise ValueError(f"not a micro math question: {row.messages[-1].content!r}")
        start, op, d, k = int(m[1]), m[2], int(m[3]), int(m[4])
        careful, right = not text.startswith(QUICK), result.score >= 1.0
        cell = cells[(k, op)]
        cell[0], cell[1], cell[2] = cell[0] + 1, cell[1] + careful, cell[2] + right
        if careful and not right:
            departures[(op, first_departure(text, start, op, d, k))] += 1
    print("| k | op | responses | careful | right |")
    print("|---|---|---|---|---|")
    for (k, op), (total, careful, right) in sorted(cells.items()):
        print(f"| {k} | {op} | {total} | {careful / total:.2f} | {right / total:.2f} |")
    total = sum(c[0] for c in cells.values())
    print(f"\nwrong careful responses, first departure: {dict(departures.most_common())}")
    print(
        f"math_forms: careful {sum(c[1] for c in cells.values()) / total:.3f}, "
        f"right {sum(c[2] for c in cells.values()) / total:.3f} "
        f"({total} responses, temperature {a.temperature})"
    )


if __name__ == "__main__":
    main()
