"""The first math check of a fresh verifier worker, with the warm-up comparing a number
only (its first pair, as before) and with all of ``math_answer._WARM_PAIRS``: a zygote-like
process runs ``zygote.load_tasks``, then forks one worker per answer and measures the CPU
time of its first ``check_math``. Answers: the audit's ``answer_only_in_think`` probe
(``I am not sure.``), a right ``\\boxed{2a}`` for 2, words, sets, intervals, functions,
none of them a warm-up pair. A fresh worker meets them at pool start and after every
timeout, crash or retirement. Checks that the verdicts are the same. Last line:
``math_first_check: max <numbers-only> s, <full> s CPU, x<ratio>``.

    python benchmarks/math_first_check.py
"""

from __future__ import annotations

import json
import subprocess
import sys

ANSWERS = [
    ("9", "<think>9</think>I am not sure."),
    ("2", "\\boxed{2a}"),
    ("7", "The answer is seven."),
    ("7", "no idea"),
    ("\\{3\\}", "\\boxed{(2, 5]}"),
    ("\\{3\\}", "\\boxed{\\{3, 4\\}}"),
    ("7", "\\boxed{\\cos y}"),
    ("7", "\\boxed{\\tan(\\theta)}"),
    ("x^2-1", "\\boxed{a^2+b^2}"),
    ("7", "\\boxed{12\\%}"),
    ("7", "\\boxed{y = 2x + 1}"),
    ("8", "<think>27->7</think>\\boxed{8}"),
]

_RUN = r"""
import json, os, sys, time
from recipe_arena.rewards import math_answer
if sys.argv[1] == "numbers":
    math_answer._WARM_PAIRS = math_answer._WARM_PAIRS[:1]
from recipe_arena.domains import POOLED_DOMAINS
from recipe_arena.rewards.zygote import load_tasks
funcs = load_tasks(tuple(POOLED_DOMAINS))
ex = ("boxed", "final_answer_is", "short_answer", "last_number")
out = []
for gold, resp in json.loads(sys.argv[2]):
    r, w = os.pipe()
    if os.fork() == 0:  # a fresh worker, as the zygote forks it
        before = set(sys.modules)
        c = time.process_time()
        verdict = funcs["math"](gold, resp, ex, "")
        spent = time.process_time() - c
        imported = sorted(set(sys.modules) - before)
        os.write(w, json.dumps([spent, list(verdict), imported]).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.wait()
    out.append(json.loads(data))
print(json.dumps(out))
"""


def first_checks(
    warm: str, answers: list[tuple[str, str]]
) -> list[tuple[float, list[object], list[str]]]:
    """Each (gold, response) of ``answers`` as the first check of its own worker forked
    from ``zygote.load_tasks``' state, with the warm-up comparing a number only
    (``warm="numbers"``) or all of ``_WARM_PAIRS`` (``"full"``): per answer, the check's
    CPU time in seconds, its verdict [score, reason] and the modules it imported."""
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, warm, json.dumps(answers)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return [(t, v, m) for t, v, m in json.loads(proc.stdout.strip().splitlines()[-1])]


def main() -> None:
    numbers, full = first_checks("numbers", ANSWERS), first_checks("full", ANSWERS)
    for (gold, resp), (t0, v0, _), (t1, v1, _) in zip(ANSWERS, numbers, full, strict=True):
        assert v0 == v1, (gold, resp, v0, v1)
        print(f"{t0:7.3f} s {t1:7.3f} s  {gold!r} {resp!r} -> {v1[0]}")
    a, b = max(t for t, _, _ in numbers), max(t for t, _, _ in full)
    print(f"math_first_check: max {a:.3f} s, {b:.3f} s CPU, x{a / max(b, 1e-6):.1f}")


if __name__ == "__main__":
    main()
