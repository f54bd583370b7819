"""A TeX command without a brace that the LaTeX parser does not read (a font, size or
style switch, an accent, spacing, a relation or connective), between two numbers: the
parser failed on the answer and math-verify took one of its numbers out of the text,
so ``\\boxed{3\\relax 9}`` (shown 39) scored 1 for 9. Scored through the scorer's worker
pool, as training scores it."""

from __future__ import annotations

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from tests.hostile_tally import record

SWITCHED = [
    # each is not 9 to a reader; math-verify read each as 9, the number after the command
    r"\boxed{3\relax 9}",  # 39: \relax draws nothing
    r"\boxed{3\nobreak 9}",  # 39
    r"\boxed{3\tiny 9}",  # 39, the 9 small
    r"\boxed{3\mathbb 9}",  # 3 and a blackboard-bold 9
    r"\boxed{3\bar 9}",  # 3 and a 9 with a bar
    r"\boxed{3\textstyle 9}",  # 39
    r"\boxed{\htmlClass 3 9}",  # KaTeX: 9 in the class "3", but the parser kept the last number
    r"\boxed{3 \cup 9}",  # a union of 3 and 9
    r"\boxed{3 \iff 9}",  # 3 if and only if 9
    r"\boxed{3 \atop 9}",  # 3 above 9
    r"\boxed{3 \equiv 9 \pmod{10}}",  # says 3, which is not 9 modulo 10
    r"\boxed{\left. 9 \right|_{3}}",  # 9 evaluated at 3
]
KEPT = [
    # still 1 for 9: commands the parser reads, one number, a modulus clause, and junk
    # with a backslash before letters TeX does not know, as the micro world writes
    r"\boxed{3 \times 3}",
    r"\boxed{\displaystyle 9}",
    r"\boxed{x \equiv 9 \pmod{10}}",
    r"\boxed{\left(3\right)^2}",
    r"\boxed{9]K3\Rcc}",
    r"\boxed{3\rm 9}",
]


def test_commands_the_parser_does_not_read_between_numbers_score_0_through_the_pool() -> None:
    """Each of the 12 ``SWITCHED`` answers scored 1 for a gold of 9 ("What is the last
    digit of 38+7*3?": 59, so 9); now 0, the command named in the reason. The six
    ``KEPT`` answers score 1 as before: ``3\\times 3`` and ``(3)^2`` are 9 as the parser
    reads them, ``\\displaystyle 9`` holds one number, the modulus clause of ``x \\equiv 9
    \\pmod{10}`` is not counted, and ``\\Rcc`` and ``\\rm`` (two letters) are not among the
    named commands (junk of this kind is the micro world's, its verdicts unchanged)."""
    row = PromptRow(
        id="m",
        messages=[{"role": "user", "content": "What is the last digit of 38+7*3?"}],
        ground_truth="9",
        domain="math",
    )
    answers = ["<think></think>" + a for a in SWITCHED + KEPT]
    with build_scorer(RewardsConfig(timeout_s=60.0, workers=1)) as sc:
        got = sc.score([row] * len(answers), answers)
    refused = [r for r in got[: len(SWITCHED)] if r.score == 0.0]
    record("math verifier: commands between numbers", len(SWITCHED), len(refused))
    assert [r.score for r in got] == [0.0] * len(SWITCHED) + [1.0] * len(KEPT), got
    assert all("LaTeX the parser cannot read" in r.reason for r in refused), refused
