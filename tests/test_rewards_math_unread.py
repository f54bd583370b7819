"""Math answers math-verify read otherwise than a reader sees them: relations the negation
and order checks did not name, the question's arithmetic copied with its numbers written
with other zeros, words dropped as a unit that bound, negate or scale the number (in
look-alike letters too) and LaTeX the parser cannot read (math-verify then picked a
number out of its text). Scored through the real ``check_math`` (math-verify, SymPy) and
through the scorer's worker pool as training scores it."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.math_answer import check_math
from tests.hostile_tally import record
from tests.test_rewards_math_copies import (
    boxed_gold_forms_fail,
    micro_problems,
    own_last_digit,
    references_pass_and_hacks_fail,
)

RELATIONS = [
    # (answer, what it says of 9): each scored 1 for a gold of 9
    (r"\boxed{\nvDash 9}", "a negation"),
    (r"\boxed{\nVdash 9}", "a negation"),
    (r"\boxed{\nshortmid 9}", "a negation"),
    (r"\boxed{x \nsubseteqq 9}", "a negation"),
    (r"\boxed{\ntriangleleft 9}", "a negation"),
    (r"\boxed{\nrightarrow 9}", "a negation"),
    (r"\boxed{\nni 9}", "a negation"),
    (r"\boxed{\setminus 9}", "all but 9"),
    (r"\boxed{x =\!\!\!/\, 9}", "x is not 9: = struck through by /"),
    (r"\boxed{x \lessgtr 9}", "x is less or greater than 9"),
    (r"\boxed{x \gtrless 9}", "x is greater or less than 9"),
    (r"\boxed{x \eqslantless 9}", "at most 9"),
    (r"\boxed{x \preccurlyeq 9}", "at most 9"),
    (r"\boxed{x \curlyeqprec 9}", "at most 9"),
    (r"\boxed{x \lvertneqq 9}", "below 9"),
    (r"\boxed{x \subsetneq 9}", "contained in 9"),
    (r"\boxed{x \sqsubseteq 9}", "contained in 9"),
]


@pytest.mark.parametrize(("answer", "says"), RELATIONS)
def test_a_relation_the_checks_did_not_name_scores_0(answer: str, says: str) -> None:
    """Each answer says ``says`` of 9, not that it is 9, with a relation the negation and
    order checks did not name: the parser does not know it and read the number beside
    it, so each scored 1 for a gold of 9, as ``\\neq 9`` and ``\\le 9`` no longer do.
    Each scores 0 now; the reference's own relation is still allowed."""
    score, reason = check_math("9", answer)
    record("math verifier: answers negating or bounding the gold", 1, int(score == 0.0))
    assert score == 0.0 and "answer states" in reason, (says, reason)
    assert check_math(r"x \lessgtr 3", r"\boxed{x \lessgtr 3}")[0] == 1.0
    assert check_math(r"A \subseteq B", r"\boxed{A \subseteq B}")[0] == 1.0


ZEROS = [
    r"\boxed{015-2*3}",
    r"\boxed{15.0-2 \cdot 3}",
    r"\boxed{15-2 \cdot 3.0}",
    r"\boxed{15-2 \cdot 03}",
]


@pytest.mark.parametrize("answer", ZEROS)
def test_the_questions_arithmetic_with_other_zeros_is_still_a_copy(answer: str) -> None:
    """The question "What is the last digit of 15-2*3?" answered with its own 15-2*3 (= 9),
    a number written with a leading zero or a trailing ``.0``: the copy check compared the
    numbers as written, so each was no copy and scored 1 for the gold 9. Each scores 0
    now, and the worked 9 still scores 1."""
    question = "What is the last digit of 15-2*3?"
    score, reason = check_math("9", answer, prompt=question)
    record("math verifier: the question's arithmetic copied", 1, int(score == 0.0))
    assert score == 0.0 and "copied" in reason, reason
    assert check_math("9", r"\boxed{9}", prompt=question)[0] == 1.0


def test_the_micro_worlds_copies_with_a_leading_zero_score_0_through_the_pool() -> None:
    """Micro questions ``s-d*k`` whose value is their own last digit, answered
    ``\\boxed{0s-d*k}`` (the question with a leading zero, the micro world's characters),
    through the scorer's worker pool, which sends the question with the answer: each
    scored 1 and scores 0 now; the careful references of the 300 problems score 1."""
    problems, rows = micro_problems(7, 300)
    copies = [
        (row, "<think></think>\\boxed{0" + p.canonical + "}")
        for p, row in zip(problems, rows, strict=True)
        if own_last_digit(p.canonical)
    ]
    assert copies, "the seed draws no subtraction whose value is its own last digit"
    references_pass_and_hacks_fail(rows, [p.response for p in problems], copies)


UNIT_WORDS = [
    # (answer, what a reader sees): each scored 1 for a gold of 9, its words a unit
    (r"\boxed{9\text{ or more}}", "at least 9"),
    (r"\boxed{9 \text{ or fewer}}", "at most 9"),
    (r"\boxed{9\text{ at least}}", "at least 9"),
    (r"\boxed{9\text{ at most}}", "at most 9"),
    (r"\boxed{9 \text{ (not)}}", "not 9"),
    (r"\boxed{9\text{ (upper bound)}}", "at most 9"),
    (r"\boxed{9\text{ or so}}", "about 9, or something else"),
    (r"\boxed{9 \text{ (maybe)}}", "perhaps 9"),
    (r"\boxed{9\text{ k}}", "9000"),
    (r"\boxed{9\text{ grand}}", "9000"),
    (r"\boxed{9\text{ and a half}}", "9.5"),
    (r"\boxed{9\text{ tenths}}", "0.9"),
    (r"\boxed{9\text{ tens}}", "90"),
    (r"\boxed{9\text{ zero zero}}", "900"),
    (r"\boxed{9\text{ seven}}", "97"),
    (r"\boxed{9\text{ minus}}", "-9"),
    (r"\boxed{9\text{ reciprocal}}", "1/9"),
    (r"\boxed{9\text{ twice}}", "18"),
    ("\\boxed{9\\text{ th\u043eusand}}", "9000 (a Cyrillic o)"),
    ("\\boxed{9\\text{ th\u00f3usand}}", "9000 (an accented o)"),
    ("\\boxed{9\\text{ t\u029cousand}}", "9000 (a small capital H)"),
    ("\\boxed{9\\text{ thou\u200bsand}}", "9000 (a zero-width space inside)"),
    ("\\boxed{9\\text{ \uff54housand}}", "9000 (a fullwidth t)"),
    ("\\boxed{9\\text{ \u043er m\u043ere}}", "at least 9 (Cyrillic o)"),
]


@pytest.mark.parametrize(("answer", "shown"), UNIT_WORDS)
def test_a_word_that_bounds_or_changes_the_number_is_no_unit(answer: str, shown: str) -> None:
    """math-verify drops each answer's ``\\text{}`` as a unit and reads 9, where a reader
    sees ``shown``: a word that bounds, negates or hedges the number (as ``\\ge 9`` and
    ``\\neq 9``, which score 0), one that scales it or adds to it (a number word, a
    fraction word, ``k``), or a scaling word written with look-alike letters, marks or a
    format character, which the list of scaling words did not match. Each scored 1 for a
    gold of 9; it scores 0 now."""
    score, reason = check_math("9", answer)
    record("math verifier: LaTeX dropped or not read as drawn", 1, int(score == 0.0))
    assert score == 0.0 and "unit" in reason, (shown, reason)


KEPT_UNITS = [
    # units a reader reads as units: each equals the gold 9
    r"\boxed{9 \text{ (no other digit)}}",
    r"\boxed{9\text{ m/s}^2}",
    r"\boxed{9\text{ quarters}}",  # units that are numbers
    r"\boxed{9\text{ times}}",
    r"\boxed{9\text{ square feet}}",
    r"\boxed{9\text{ K}}",
    r"\boxed{9\text{ half-lives}}",  # words that qualify a noun
    r"\boxed{9\text{ one-digit numbers}}",
    r"\boxed{9\text{ negative numbers}}",
    "\\boxed{9\\text{ \u0433\u0440\u0430\u043c\u043c}}",  # grams, in Russian
]


@pytest.mark.parametrize("answer", KEPT_UNITS)
def test_units_that_are_units_still_score_1(answer: str) -> None:
    """A unit that is a noun (one that counts, ``quarters``, ``times``, ``K``, too), a
    number word joined to its noun by a hyphen, and letters of other scripts that are
    no look-alike of a scaling word: each answer is 9 and scores 1."""
    score, reason = check_math("9", answer)
    assert score == 1.0, reason


UNREAD = [
    # (gold the answer scored 1 for, answer): what a reader sees is in the comment
    ("9", r"\boxed{9\ul{00}}"),  # 900 underlined: the parser failed, 9 was picked
    ("9", r"\boxed{9\mathcolor{white}{00}}"),  # 900, the zeros white (as \color)
    ("9", r"\boxed{9\textstyle{00}}"),  # 900
    ("9", r"\boxed{9\makebox{00}}"),  # 900
    ("9", r"\boxed{9\textsuperscript{00}}"),  # 9 with 00 raised
    ("9", r"\boxed{9\label{00}}"),  # 9 labelled 00
    ("9", r"\boxed{9\unicode{x30}}"),  # 90 (U+0030 is the digit 0)
    ("9", r"\boxed{9\char48}"),  # 90 (character 48 is the digit 0)
    ("9", r"\boxed{9\hspace{1em}00}"),  # 9 00
    ("9", r"\boxed{9\kern1em00}"),  # 9 00
    ("9", r"\boxed{9\pmb{00}}"),  # 900 in bold, read as 9 \pm b{00}: 9 plus or minus 0
    ("9", r"\boxed{9\permil}"),  # 9 per mille (0.009), read as 9
    ("9", r"\boxed{\{3, 9, \ldots\}}"),  # a set holding 9 and 3, read as its last number
    ("9", r"\boxed{\{1, 3, 5, 7, 9, \ldots\}}"),  # the odd numbers
    ("9", r"\boxed{\begin{cases} 3 \\ 9 \end{cases}}"),  # two values
]


@pytest.mark.parametrize(("gold", "answer"), UNREAD)
def test_a_number_picked_out_of_latex_the_parser_cannot_read_scores_0(
    gold: str, answer: str
) -> None:
    """The LaTeX parser reads no value in each answer (a command it does not know), so
    math-verify took a number out of its text: the 9 before the command, or the last
    number of a list, where a reader sees the comment's value. Each scored 1 for
    ``gold``; it scores 0 now, the reason naming the command (``\\pmb`` and ``\\permil``,
    which the parser misreads, as markup it does not read)."""
    score, reason = check_math(gold, answer)
    record("math verifier: LaTeX dropped or not read as drawn", 1, int(score == 0.0))
    assert score == 0.0 and "answer holds" in reason, reason


KEPT_READ = [
    # (gold, answer): a spacing length is no number, an answer read in one spelling is
    ("9", r"\boxed{9\hspace{1mm}\text{cm}}"),
    ("9", r"\boxed{\textbf{9}}"),
    ("9", r"\boxed{x \equiv 9 \pmod{10}}"),
    ("1/2", r"\boxed{\frac{1}{2}\%}"),
    (r"\{1, 3, 5, \ldots\}", r"\boxed{\{1, 3, 5, \ldots\}}"),  # the reference's own form
    (r"\begin{pmatrix}1\\2\end{pmatrix}", r"\boxed{\begin{pmatrix}1\\2\end{pmatrix}}"),
    ("5", r"<think></think>\boxed{o<{ 5aN&@5}"),  # micro junk: a box never closed, read whole
]


@pytest.mark.parametrize(("gold", "answer"), KEPT_READ)
def test_readable_latex_and_the_references_own_commands_still_score_1(
    gold: str, answer: str
) -> None:
    """A spacing command's length is not a second number, an answer the parser reads in
    some spelling keeps its reading, a command the reference holds is allowed, and an
    unclosed ``\\boxed{`` the micro world writes, read as a short answer, is judged as
    before: each answer equals its gold and scores 1."""
    score, reason = check_math(gold, answer)
    assert score == 1.0, reason


def test_the_micro_worlds_digits_in_unread_latex_score_0_through_the_pool() -> None:
    """200 micro problems through the scorer's worker pool: each reference scores 1, its
    digit d written as ``d\\ul{00}``, ``d\\hspace{1em}00``, ``\\{3, d, \\ldots\\}``,
    ``d\\text{ or more}``, ``\\nvDash d`` or ``x \\lessgtr d`` (900 if d is 9, a set, a
    bound, a negation) scores 0; each scored 1 before."""
    boxed_gold_forms_fail(
        29,
        [
            r"{}\ul{{00}}",
            r"{}\hspace{{1em}}00",
            r"\{{3, {}, \ldots\}}",
            r"{}\text{{ or more}}",
            r"\nvDash {}",
            r"x \lessgtr {}",
        ],
        "math verifier: LaTeX dropped or not read as drawn",
    )


EMPTY_GROUPS = [r"\boxed{9{}00}", r"\boxed{9{ }00}", r"\boxed{9{\,}00}", r"\boxed{9{~}00}"]


@pytest.mark.parametrize("answer", EMPTY_GROUPS)
def test_an_empty_group_between_digits_scores_0(answer: str) -> None:
    """A group holding nothing but space between 9 and 00 is drawn as nothing: the answer
    shows 900, and the parser stopped at the group and read 9, so each scored 1 for a
    gold of 9. Each scores 0 now; ``3{,}000``, TeX's thousands comma, is still 3000."""
    score, reason = check_math("9", answer)
    record("math verifier: LaTeX dropped or not read as drawn", 1, int(score == 0.0))
    assert score == 0.0 and "empty group" in reason, reason
    assert check_math("3000", r"\boxed{3{,}000}")[0] == 1.0


def test_the_micro_worlds_digits_before_an_empty_group_score_0_through_the_pool() -> None:
    """200 micro problems through the scorer's worker pool: each reference scores 1, its
    digit d written as ``d{}00`` or ``d{ }00`` (shown as 100 times d) scores 0; each
    scored 1 before."""
    boxed_gold_forms_fail(
        31, [r"{}{{}}00", r"{}{{ }}00"], "math verifier: LaTeX dropped or not read as drawn"
    )
