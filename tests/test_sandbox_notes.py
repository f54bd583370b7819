"""The note a code check gives when the program side stops answering, through the real
sandbox (``check_code``, as a verifier worker calls it). The check side's channel
(``sandbox_remote._Channel``) remembers why the program can no longer answer, and
every later request of the row fails with that reason: one note, every assert failed."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.code import check_code
from tests.test_sandbox import needs_full

TESTS = ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]


def _fenced(src: str) -> str:
    return f"```python\n{src}\n```"


@needs_full
@pytest.mark.parametrize(
    ("program", "expected"),
    [
        # loading raises: the program side reports it, no call is ever sent
        (
            "raise ValueError('boom')\ndef add(a, b): return a + b",
            (0.0, "passed 0/2; program failed: ValueError: boom"),
        ),
        # the first call ends the process: its pipe closes, the second assert is not tried
        ("import os\ndef add(a, b):\n    os._exit(3)", (0.0, "passed 0/2; program exited")),
        # the same program that answers: both asserts hold (the cases differ only above)
        ("def add(a, b): return a + b", (1.0, "passed 2/2")),
        # one wrong answer, one right (2 + 2 == 2 * 2): pass fraction 1/2, no note
        ("def add(a, b): return a * b", (0.5, "passed 1/2")),
    ],
)
def test_a_program_that_stops_answering_fails_the_row_with_one_note(
    program: str, expected: tuple[float, str]
) -> None:
    assert check_code(TESTS, _fenced(program), all_pass=False) == expected
