"""The prompt source: domain mixture, one pass before repeats, exact resume."""

from __future__ import annotations

import pytest

from recipe_arena.core.prompts import PromptSource
from recipe_arena.data.schema import Message, PromptRow


def _rows(domain: str, n: int) -> list[PromptRow]:
    return [
        PromptRow(
            id=f"{domain}-{i}",
            messages=[Message(role="user", content="q")],
            ground_truth="1",
            domain=domain,
        )  # type: ignore[arg-type]
        for i in range(n)
    ]


def test_mixture_weights_set_domain_frequencies() -> None:
    """Weights math 3 : ifeval 1 -> P(math) = 0.75; over 4,000 draws the binomial standard
    error is sqrt(0.75 * 0.25 / 4000) = 0.0068, so 0.75 +- 0.03 holds (> 4 sigma)."""
    src = PromptSource(
        _rows("math", 50) + _rows("ifeval", 50), {"math": 3.0, "ifeval": 1.0}, seed=0
    )
    draws = [src.next().domain for _ in range(4000)]
    assert draws.count("math") / 4000 == pytest.approx(0.75, abs=0.03)


def test_zero_weight_domain_is_never_drawn_and_a_pass_has_no_repeats() -> None:
    """chat has weight 0: never drawn. The first 20 math draws of 20 rows are all distinct."""
    src = PromptSource(_rows("math", 20) + _rows("chat", 5), {"math": 1.0, "chat": 0.0}, seed=1)
    ids = [src.next().id for _ in range(20)]
    assert len(set(ids)) == 20 and all(i.startswith("math") for i in ids)


def test_resume_draws_in_flight_prompts_first_then_continues_exactly() -> None:
    """Draw 7; checkpoint with two of them still in flight; a fresh source loaded from the
    state yields those two first, then exactly what the original draws next."""
    rows = _rows("math", 30) + _rows("code", 30)
    a = PromptSource(rows, {"math": 1.0, "code": 1.0}, seed=2)
    drawn = [a.next().id for _ in range(7)]
    state = a.state_dict(in_flight=[drawn[5], drawn[6]])
    b = PromptSource(rows, {"math": 1.0, "code": 1.0}, seed=2)
    b.load_state_dict(state)
    assert [b.next().id for _ in range(2)] == [drawn[5], drawn[6]]
    assert [b.next().id for _ in range(10)] == [a.next().id for _ in range(10)]


def test_requeued_prompt_comes_back_before_new_ones() -> None:
    src = PromptSource(_rows("math", 10), {"math": 1.0}, seed=3)
    first = src.next()
    src.requeue(first)
    assert src.next().id == first.id


def test_no_row_in_a_weighted_domain_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="positive weight"):
        PromptSource(_rows("chat", 3), {"math": 1.0}, seed=0)
