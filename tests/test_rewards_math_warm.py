"""The math verifier's warm-up covers what a worker's first check would otherwise load.

A worker is forked from the zygote after ``zygote.load_tasks`` ran the warm-ups, so what
the warm-up leaves unloaded is loaded again by every fresh worker, inside its first
call's deadline. SymPy's ``simplify`` imports ``sympy.physics.units`` (34 modules) on its
first call; with ``math_answer.warm`` comparing only numbers, a worker's first answer
made of words or letters (the audit's ``answer_only_in_think`` probe, ``I am not
sure.``, or a right ``\\boxed{2a}`` for 2) imported them: 0.5 to 0.9 s of CPU, over the
5 s default deadline on a loaded 2-core machine, where the check scored ``timeout``.
The bound checked here holds on any machine, loaded or not: no first check of the kinds
below imports a module (no timing is asserted; ``benchmarks/math_first_check.py`` prints
the times).
"""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = r"""
import json, os, sys
from recipe_arena.domains import POOLED_DOMAINS
from recipe_arena.rewards.zygote import load_tasks
funcs = load_tasks(tuple(POOLED_DOMAINS))
ex = ("boxed", "final_answer_is", "short_answer", "last_number")
out = []
for gold, resp in json.loads(sys.argv[1]):
    r, w = os.pipe()
    if os.fork() == 0:  # a fresh worker, as the zygote forks it
        before = set(sys.modules)
        verdict = funcs["math"](gold, resp, ex, "")
        os.write(w, json.dumps([list(verdict), sorted(set(sys.modules) - before)]).encode())
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

# (gold, response, verdict): none of them is one of math_answer._WARM_PAIRS.
CASES = [
    ("9", "<think>9</think>I am not sure.", [0.0, "wrong (short answer: I am not sure.)"]),
    ("2", "\\boxed{2a}", [1.0, "correct (boxed: 2a)"]),
    ("7", "The answer is seven.", [0.0, "wrong (final answer is: seven)"]),
    ("\\{3\\}", "\\boxed{(2, 5]}", [0.0, "wrong (boxed: (2, 5])"]),
    ("7", "\\boxed{\\cos y}", [0.0, "wrong (boxed: \\cos y)"]),
]


def test_first_check_of_a_fresh_worker_imports_nothing() -> None:
    """Each case as the first check of a worker forked from ``load_tasks``' state: the
    verdict written by hand (``2a`` is 2 with a unit, words are no number) and no module
    imported during the check. Before ``_WARM_PAIRS`` the first three imported
    ``sympy.physics.units`` and 33 more modules."""
    pairs = [[g, r] for g, r, _ in CASES]
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(pairs)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for (gold, resp, verdict), (seen, imported) in zip(CASES, got, strict=True):
        assert seen == verdict, (gold, resp)
        assert imported == [], (gold, resp, imported)
