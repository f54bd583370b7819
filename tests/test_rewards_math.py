"""Math verifier: extraction, normalisation, SymPy equivalence, the thread-timeout trap,
hostile inputs. Expected values are worked out by hand in each docstring."""

from __future__ import annotations

import threading
import time

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.math_answer import check_math, extract_answer
from tests.hostile_tally import record


def _row(gt: str) -> PromptRow:
    return PromptRow(
        id="m", messages=[{"role": "user", "content": "q"}], ground_truth=gt, domain="math"
    )


EQUIVALENT = [
    ("3/4", r"\boxed{0.75}"),  # 3/4 = 0.75 exactly
    (r"\frac{3}{4}", r"\boxed{\dfrac34}"),  # \dfrac34 is \frac{3}{4}
    ("3/4", r"\boxed{\frac{6}{8}}"),  # 6/8 reduces to 3/4
    ("0.5", r"\boxed{50\%}"),  # 50% = 50/100 = 0.5
    ("50", r"\boxed{50\%}"),  # "50%" read as the number 50 also allowed
    ("90", r"\boxed{90^\circ}"),  # degree mark dropped
    ("5", "5 cm"),  # trailing unit word dropped
    ("3", r"\boxed{x = 3}"),  # x = 3 states the value 3
    ("1500", "1.5e3"),  # 1.5 * 10^3 = 1500
    ("1000", "1,000"),  # thousands separator
    ("[1,3)", r"\boxed{[1, 3)}"),  # same half-open interval
    ("(1,2)", r"\boxed{(1, 2)}"),  # same tuple/interval
    (r"\{1,2\}", r"\boxed{\{2,1\}}"),  # sets ignore order
    (r"\frac{\pi}{2}", r"\boxed{\pi/2}"),  # pi/2 both ways
    (r"\sqrt{2}", r"\boxed{2^{1/2}}"),  # sqrt(2) = 2^(1/2)
    ("2*x + 1", r"\boxed{1+2x}"),  # commutativity, implicit product
    ("45", "<think>15*3 = 45</think>\\boxed{45}"),  # the micro world's own format
    ("11/12", "<think>x</think>The final answer is 11/12."),  # "final answer is" extractor
]
NOT_EQUIVALENT = [
    ("3/4", r"\boxed{4/3}"),
    ("42", r"\boxed{43}"),
    ("2*x + 1", r"\boxed{2x - 1}"),
    ("[1,3)", r"\boxed{[1, 3]}"),  # closed vs half-open
    (r"\pi", r"\boxed{3.14159}"),  # an approximation is not pi
    ("42", r"<think>\boxed{42}"),  # unclosed think: no answer section at all
    ("42", r"<think>\boxed{42}</think>I am not sure."),  # answer only inside the think block
    ("42", r"\boxed{41} or \boxed{42}"),  # hedging over two different boxes
]


@pytest.mark.parametrize(("gold", "response"), EQUIVALENT)
def test_equivalent_answers_score_one(gold: str, response: str) -> None:
    """Each pair is equal as a mathematical object (reason in the comment) -> 1."""
    score, reason = check_math(gold, response)
    assert score == 1.0, reason


@pytest.mark.parametrize(("gold", "response"), NOT_EQUIVALENT)
def test_different_answers_score_zero(gold: str, response: str) -> None:
    """Different values, unclosed think blocks and hedged boxes -> 0."""
    score, reason = check_math(gold, response)
    assert score == 0.0, reason


def test_extraction_order_and_nested_braces() -> None:
    r"""The last \boxed wins over "final answer is"; braces nest; think text is ignored."""
    resp = r"<think>\boxed{1}</think>The final answer is 7. So \boxed{\frac{1}{2}}"
    assert extract_answer(resp) == (r"\frac{1}{2}", "boxed")
    assert extract_answer("The answer is: 12.", ("final_answer_is",)) == ("12", "final answer is")
    assert extract_answer("a long explanation\nwith 3 then 5 in it", ("last_number",)) == (
        "5",
        "last number",
    )
    assert extract_answer("a long explanation\nwith 3 then 5 in it")[0] is None


@pytest.fixture(scope="module")
def scorer():
    with build_scorer(RewardsConfig(timeout_s=3.0, workers=2)) as s:
        yield s


def test_thread_timeout_trap_symbolic_checks_work_off_the_main_thread(scorer) -> None:
    """math-verify's default signal timeout only works in the main thread. Called from
    a worker thread with its defaults, a symbolic check fails (raises or returns
    False), which a careless pipeline records as "wrong": 2x+1 == 1+2x would score 0.
    Through the scorer, from a non-main thread, the same check scores 1."""
    from math_verify import parse, verify

    seen: dict[str, object] = {}

    def default_in_thread() -> None:
        try:
            seen["default"] = verify(parse("$2x+1$"), parse("$1+2x$"))
        except Exception as e:
            seen["default"] = e

    t = threading.Thread(target=default_in_thread)
    t.start()
    t.join()
    assert seen["default"] is not True  # the trap exists in the library as shipped

    def through_scorer() -> None:
        seen["scorer"] = scorer.score(
            [_row("2*x + 1"), _row("3/4")], [r"\boxed{1+2x}", r"\boxed{0.75}"]
        )

    t = threading.Thread(target=through_scorer)
    t.start()
    t.join()
    assert [r.score for r in seen["scorer"]] == [1.0, 1.0]


HOSTILE = [
    r"\boxed{10^{10^{10}}}",  # SymPy would try to build a 10-billion-digit integer
    r"\boxed{" + "(" * 400 + "1" + ")" * 400 + "}",  # deep nesting: ~10 s to parse here
    r"\boxed{" + r"\frac{1}{" * 150 + "1" + "}" * 150 + "}",  # deeper: over the length cap
    "9" * (1 << 20) + r" \boxed{1}" * 2 + r"\boxed{2}",  # megabyte response, hedged boxes
]


def test_hostile_inputs_score_zero_within_timeout_and_do_not_stall_others(scorer) -> None:
    """Each hostile response scores 0 against the reference 7 (none of them is 7, and a
    timeout is 0 too). Two of them run past the 3 s limit: the parent kills those
    workers (at least 2 timeouts; more if the machine is loaded) rather than waiting. The bound on the
    whole batch (4 hostile + 4 good, 2 workers) is 2 limits plus worker restarts on a
    loaded 2-core machine (< 45 s; SymPy alone would need minutes on 10^{10^{10}}). The
    good answers, queued behind the hostile ones, still score 1."""
    before = scorer.metrics()
    good = [r"\boxed{2}"] * 4
    rows = [_row("7") for _ in HOSTILE] + [_row("2")] * 4
    t0 = time.monotonic()
    results = scorer.score(rows, HOSTILE + good)
    elapsed = time.monotonic() - t0
    assert [r.score for r in results] == [0.0] * 4 + [1.0] * 4, [r.reason for r in results]
    assert elapsed < 45.0
    after_m = scorer.metrics()
    assert after_m["reward/math/timeout"] - before.get("reward/math/timeout", 0.0) >= 2.0
    after = scorer.score([_row("3/4")], [r"\boxed{0.75}"])  # pool still healthy
    assert after[0].score == 1.0


def test_bad_ground_truth_is_a_row_error_not_a_crash(scorer) -> None:
    """An empty reference answer gives score 0 with an 'error:' reason; the rest scores."""
    res = scorer.score([_row(""), _row("2")], ["2", "2"])
    assert res[0].score == 0.0 and res[0].reason.startswith("error:")
    assert res[1].score == 1.0


@pytest.mark.parametrize(
    ("response", "code"),
    [
        ("\\boxed{4\x1b[2J}", "U+001B"),  # terminal escape: clears a screen showing the reason
        ("\\boxed{\x004}", "U+0000"),
        ("\\boxed{4\r}", "U+000D"),
        ("\\boxed{4\x9b}", "U+009B"),  # C1 control (CSI)
        ("\\boxed{\u202e4}", "U+202E"),  # right-to-left override
        ("The final answer is 4\x07.", "U+0007"),
    ],
)
def test_control_characters_in_an_answer_score_0_and_are_not_echoed(
    response: str, code: str
) -> None:
    """An extracted answer holding a control character (C0 or C1 but tab and newline)
    or a bidirectional override scores 0 even when the rest is right (gold 4); the
    reason names the character by code point and holds no control character."""
    score, reason = check_math("4", response)
    ok = score == 0.0 and code in reason and reason.isprintable()
    record("math verifier: control characters in answers", 1, int(ok))
    assert score == 0.0 and code in reason, reason
    assert reason.isprintable()


def test_a_newline_inside_a_boxed_answer_is_judged_and_shown_on_one_line() -> None:
    """Newlines are ordinary in a LaTeX answer (a matrix over two lines): it is judged,
    not refused as a control character (its verdict is the parser's), and the reason
    shows it on one line."""
    score, reason = check_math("4", "\\boxed{\\begin{pmatrix}1\\\\\n2\\end{pmatrix}}")
    assert reason.startswith(("wrong", "correct")) and "\n" not in reason, reason
    assert "pmatrix}1\\\\ 2" in reason


HEDGES = [
    r"\boxed{4 = 3}",  # an equation: its last side is the value
    r"\boxed{3 \\ 4}",  # two lines
    r"\boxed{4 \text{ (or } 3)}",
    r"\boxed{3 \approx 4}",
    r"\boxed{4 \Rightarrow 3}",
    r"\boxed{3, 4}",
    r"\boxed{3 \text{ or } 4}",
    "3 (or maybe 4)",  # the short-answer extractor
    "The answer is 3. The answer is 4.",
]


@pytest.mark.parametrize("response", HEDGES)
def test_two_values_in_one_answer_score_for_one_gold_at_most(response: str) -> None:
    """A hedge that puts 3 and 4 in one answer (one box, or one short line) is scored
    against gold 3 and against gold 4: math-verify keeps one value (or none), so it
    scores 1 for at most one of them, never for both."""
    both = check_math("3", response)[0] + check_math("4", response)[0]
    record("math verifier: two values in one answer", 1, int(both <= 1.0))
    assert both <= 1.0, response
