"""How many of a run's held-out code programs are the same at its RL start and its end,
and what a scorer that keeps code verdicts (``Scorer._verdicts``) saves on them.

From a finished RL run directory: the held-out code rows of its evaluations
(``eval_rows``), answered greedily by the RL stage's starting checkpoint and by its
final one, as its evaluations answer them. Prints how many fenced programs are the same
(the RL start and the end are the farthest apart of a run's evaluations, so the share
between two consecutive ones is at least about this), then, side by side, the seconds
to score the end's answers with a new scorer and with one that has scored the start's.
Both scorings give the same verdicts, which it checks.

    python benchmarks/code_memo.py RUN_DIR

Last line: ``code_memo: <same>/<rows> programs unchanged, fresh <s> s, kept <s> s``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import yaml

from recipe_arena.config import RunConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.engines import build_engine
from recipe_arena.eval.evaluate import generate_responses
from recipe_arena.eval.final import eval_engine_config, eval_rows
from recipe_arena.models.factory import load_checkpoint
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.code import extract_code
from recipe_arena.stages.common import heldout_rows


def _answers(cfg: RunConfig, checkpoint: Path, rows: list[PromptRow]) -> list[str]:
    """The checkpoint's greedy answers to ``rows``, through the run's evaluation engine."""
    model, tok = load_checkpoint(checkpoint)
    model.eval()
    engine = build_engine(cfg.engine.name, model, tok, eval_engine_config(cfg))
    try:
        return generate_responses(engine, tok, rows, cfg.eval, template=cfg.prompt_template)[0]
    finally:
        engine.close()


def _timed_score(scorer: Any, rows: list[PromptRow], answers: list[str]) -> tuple[float, list]:
    t0 = time.perf_counter()
    got = scorer.score(rows, answers)
    return time.perf_counter() - t0, got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a finished run directory with an RL stage")
    args = ap.parse_args()
    cfg = RunConfig.model_validate(yaml.safe_load((args.run / "config.yaml").read_text()))
    start = Path(json.loads((args.run / "stages.json").read_text())["inputs"]["rlvr"])
    end = args.run / "checkpoints" / "rlvr" / "final"
    rows = [r for r in eval_rows(cfg, heldout_rows(cfg)) if r.domain == "code"]
    first, last = _answers(cfg, start, rows), _answers(cfg, end, rows)
    progs = [(extract_code(a), extract_code(b)) for a, b in zip(first, last, strict=True)]
    same = sum(a is not None and a == b for a, b in progs)
    with build_scorer(cfg.rewards) as fresh:
        t_fresh, v_fresh = _timed_score(fresh, rows, last)
    with build_scorer(cfg.rewards) as kept:
        kept.score(rows, first)
        t_kept, v_kept = _timed_score(kept, rows, last)
    assert v_fresh == v_kept, "a kept verdict differs from the sandbox's"
    print(f"held-out code rows {len(rows)}, programs the same at the RL start and end {same}")
    print(
        f"scoring the end's answers: new scorer {t_fresh:.2f} s, scorer that saw the start's {t_kept:.2f} s"
    )
    print(
        f"code_memo: {same}/{len(rows)} programs unchanged, fresh {t_fresh:.2f} s, kept {t_kept:.2f} s"
    )


if __name__ == "__main__":
    main()
