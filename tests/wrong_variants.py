"""The check every loss and correction entry's test file runs on its named wrong
variants: a wrong variant (a token-level ratio where a sequence-level one is defined, a
mask applied after reweighting, a missing stop-gradient, ...) must fail at least one of
the entry's checks, or the checks could not tell it from the entry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def assert_fails_a_check(wrong: Callable[..., Any], *checks: Callable[[Any], None]) -> None:
    """Run each check (a function of the entry under test that asserts) on ``wrong``;
    at least one must raise AssertionError."""
    failed = 0
    for check in checks:
        try:
            check(wrong)
        except AssertionError:
            failed += 1
    assert failed > 0, f"{wrong.__name__} passed every check"
