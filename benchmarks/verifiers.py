"""Verifier throughput: checks per second per domain through the Scorer with 2 workers.

Responses are the micro world's reference responses (all correct) with every third
one replaced by a wrong answer, so both verdicts are exercised. The pool is warmed
up before timing. Last line: ``verifiers: <math/s> math, <code/s> code, <ifeval/s> ifeval``.

    python benchmarks/verifiers.py [--n 120]
"""

from __future__ import annotations

import argparse
import time

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.micro import generate_examples
from recipe_arena.rewards import build_scorer

WRONG = {"math": "\\boxed{-12345}", "code": "```python\nx = 1\n```", "ifeval": "Wrong, On Purpose."}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=120, help="checks per domain")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    rates: dict[str, float] = {}
    with build_scorer(RewardsConfig(workers=args.workers)) as scorer:
        for domain in ("math", "code", "ifeval"):
            ex = generate_examples(domain, "train", args.n, seed=7)
            rows = [e.row for e in ex]
            resp = [WRONG[domain] if i % 3 == 2 else e.response for i, e in enumerate(ex)]
            scorer.score(rows[:4], resp[:4])  # warm-up
            t0 = time.perf_counter()
            res = scorer.score(rows, resp)
            dt = time.perf_counter() - t0
            rates[domain] = len(rows) / dt
            mean = sum(r.score for r in res) / len(res)
            print(
                f"{domain:<7} {len(rows):>5} checks  {dt:7.2f} s  {rates[domain]:8.1f} checks/s  mean reward {mean:.2f}"
            )
        m = scorer.metrics()
        print(
            f"timeouts: {sum(v for k, v in m.items() if k.endswith('/timeout')):.0f}, workers replaced: {m['reward/workers_replaced']:.0f}"
        )
    print(
        f"verifiers: {rates['math']:.1f} math, {rates['code']:.1f} code, {rates['ifeval']:.1f} ifeval"
    )


if __name__ == "__main__":
    main()
