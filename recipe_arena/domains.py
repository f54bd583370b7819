"""The domains and the verifier of each: the one registry that the prompt row's ``Domain``
(``data.schema``), the verifier pool and its zygote (``rewards.pool``,
``rewards.zygote``), the scorer and the verifier audit read.

A verifier is named by ``"module:function"`` strings, resolved where it runs: a pool
worker imports only the checks, never this package's config or torch. This module
imports nothing of the package, so every layer can read it.

A new domain: one entry here (its check and task functions in ``rewards/``), its rows
from a world, and its hacks in ``rewards.audit``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verifier:
    """How the rows of one domain are scored."""

    check: str | None
    """``"module:function"`` a verifier worker runs, ``(*args) -> (score, reason)``, under a
    hard timeout; None: scored in the calling process by the chat judge
    (``rewards.judge``), which holds a model."""
    task: str | None = None
    """``"module:function"`` ``(row, response, rewards config) -> (args, timeout_s)``: the
    arguments of ``check`` for one response and its deadline, seconds."""
    warm: str | None = None
    """``"module:function"`` a worker runs once before it says it is ready, so a slow first
    call's set-up is not charged to a deadline."""
    memory_mb: int | None = None
    """Address-space limit (MiB) of a worker while the check runs; None: no limit."""
    memo_key: str | None = None
    """``"module:function"`` ``(*args of check) -> str | None``: a key of everything the
    verdict depends on; a scorer that meets a key again reuses its verdict instead of
    running the check (for checks that cost a process start). None: never reused."""
    memo_keeps: str | None = None
    """``"module:function"`` ``(reason) -> bool``: whether a verdict with this reason is
    the one the same arguments always get, so it may be kept under ``memo_key``."""


VERIFIERS: dict[str, Verifier] = {
    "math": Verifier(
        check="recipe_arena.rewards.math_answer:check_math",
        task="recipe_arena.rewards.math_answer:math_task",
        warm="recipe_arena.rewards.math_answer:warm",
        memory_mb=1024,
    ),
    "code": Verifier(
        check="recipe_arena.rewards.code:check_code",
        task="recipe_arena.rewards.code:code_task",
        memo_key="recipe_arena.rewards.code:verdict_key",
        memo_keeps="recipe_arena.rewards.code:verdict_repeats",
    ),
    "ifeval": Verifier(
        check="recipe_arena.rewards.ifeval:check_ifeval",
        task="recipe_arena.rewards.ifeval:ifeval_task",
        warm="recipe_arena.rewards.ifeval:registry",
        memory_mb=1024,
    ),
    "chat": Verifier(check=None),
}

DOMAINS: tuple[str, ...] = tuple(VERIFIERS)
"""Every domain, in the registry's order (the order of reports and metrics)."""

POOLED_DOMAINS: tuple[str, ...] = tuple(d for d, v in VERIFIERS.items() if v.check)
"""The domains whose checks run in the verifier pool."""
