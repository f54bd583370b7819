"""The math verifier's parse cache (``math_answer._parsed``), side by side: one worker
process's ``check_math`` over the micro world's reference responses (every third one's
box replaced by a wrong number, so both verdicts are exercised), with the cache and with
math-verify's parse called afresh each time, alternating blocks of ``--n`` rows drawn
anew for each block. A right answer and its gold are parsed by ``equivalent`` and again
by ``computed_kinds``, and the micro world's golds repeat. Checks that the verdicts are
the same. Last line: ``math_parse_cache: <cached>/s cached, <fresh>/s fresh, x<ratio>``.

    python benchmarks/math_parse_cache.py [--n 300] [--rounds 4]
"""

from __future__ import annotations

import argparse
import random
import re
import time

from recipe_arena.data.micro_math import sample_math
from recipe_arena.rewards import math_answer


def _block(seed: int, n: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        p = sample_math(rng)
        response = (
            p.response if k % 3 else re.sub(r"\\boxed\{[^}]*\}", r"\\boxed{-12345}", p.response)
        )
        rows.append((str(p.ground_truth), response, p.prompt))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="rows per block")
    ap.add_argument("--rounds", type=int, default=4, help="blocks per variant")
    args = ap.parse_args()
    cached = math_answer._parsed
    fresh = cached.__wrapped__
    math_answer.warm()
    seconds = {"cached": 0.0, "fresh": 0.0}
    verdicts: dict[str, list[tuple[float, str]]] = {"cached": [], "fresh": []}
    for r in range(args.rounds):
        rows = _block(r, args.n)
        for name in ("fresh", "cached") if r % 2 else ("cached", "fresh"):
            cached.cache_clear()  # each block starts cold, as a new worker does
            math_answer._parsed = cached if name == "cached" else fresh  # type: ignore[assignment]
            t = time.perf_counter()
            verdicts[name] += [math_answer.check_math(g, x, prompt=q) for g, x, q in rows]
            seconds[name] += time.perf_counter() - t
    math_answer._parsed = cached
    same = verdicts["cached"] == verdicts["fresh"]
    n = args.n * args.rounds
    rate = {k: n / v for k, v in seconds.items()}
    print(f"verdicts the same: {same} ({n} checks each)")
    print(
        f"math_parse_cache: {rate['cached']:.0f}/s cached, {rate['fresh']:.0f}/s fresh, "
        f"x{rate['cached'] / rate['fresh']:.2f}"
    )


if __name__ == "__main__":
    main()
