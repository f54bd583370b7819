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

from benchmarks.math_first_check import first_checks

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
    got = first_checks("full", [(g, r) for g, r, _ in CASES])
    for (gold, resp, verdict), (_, seen, imported) in zip(CASES, got, strict=True):
        assert seen == verdict, (gold, resp)
        assert imported == [], (gold, resp, imported)


def test_a_warm_up_of_numbers_only_leaves_the_import_to_the_first_check() -> None:
    """The wrong warm-up the test above catches: comparing a number only (the warm-up
    before ``_WARM_PAIRS``), the worded answer's first check imports
    ``sympy.physics.units`` inside its deadline."""
    (_, verdict, imported), *_ = first_checks("numbers", [(CASES[0][0], CASES[0][1])])
    assert verdict == CASES[0][2]
    assert "sympy.physics.units" in imported, imported
