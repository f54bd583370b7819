"""The micro world: seeded procedural prompts for math, code, ifeval and chat.

``generate_split(domain, split, n, seed)`` returns prompt rows (schema.PromptRow);
``generate_examples`` returns the same rows with their reference responses (a think
block, then the answer), which base training and SFT learn from.

Splits are decided by a hash of the canonical problem, not by index or seed: a
problem whose hash falls in the held-out bucket (``HELDOUT_FRACTION``) can never be
drawn for train, whatever the seeds, so held-out never overlaps train.
Within a split, rows are unique while the domain's problem space allows; small spaces
(code, chat) then repeat problems in their natural proportions.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from recipe_arena.data.micro_chat import sample_chat
from recipe_arena.data.micro_code import sample_code
from recipe_arena.data.micro_ifeval import sample_ifeval
from recipe_arena.data.micro_math import sample_math
from recipe_arena.data.micro_problem import Problem
from recipe_arena.data.schema import DOMAINS, Domain, Message, PromptRow

Split = Literal["train", "heldout"]
SPLITS: tuple[Split, ...] = ("train", "heldout")
HELDOUT_FRACTION = 0.15
"""Share of each domain's problem space reserved for held-out evaluation."""

_SAMPLERS: dict[Domain, Callable[[random.Random], Problem]] = {
    "math": sample_math,
    "code": sample_code,
    "ifeval": sample_ifeval,
    "chat": sample_chat,
}
_MAX_MISSES = 2000
"""Consecutive draws that were duplicates or of the other split before the unique phase
gives up: the space is then (nearly) exhausted and repeats are allowed."""


@dataclass(frozen=True)
class Example:
    row: PromptRow
    response: str
    """The reference assistant turn: ``<think>trace</think>answer``."""
    quick_response: str
    """The same answer after an empty think block (``<think></think>answer``)."""


def split_of(domain: Domain, canonical: str) -> Split:
    """Which split a problem belongs to: a stable hash of domain and canonical form."""
    digest = hashlib.sha256(f"{domain}|{canonical}".encode()).digest()
    return "heldout" if int.from_bytes(digest[:8], "big") / 2**64 < HELDOUT_FRACTION else "train"


def token_budget(response: str) -> int:
    """Twice the reference response length in characters, rounded up to a multiple of 8
    (characters bound tokens from above with the character-level tokenizer)."""
    return max(16, 8 * math.ceil(2 * len(response) / 8))


def _check(domain: str, split: str, n: int) -> None:
    if domain not in DOMAINS:
        raise ValueError(f"domain={domain!r} is not one of {list(DOMAINS)}")
    if split not in SPLITS:
        raise ValueError(f"split={split!r} is not one of {list(SPLITS)}")
    if n < 0:
        raise ValueError(f"n={n} must be >= 0")


def generate_examples(domain: Domain, split: Split, n: int, seed: int) -> list[Example]:
    """``n`` rows of ``domain`` in ``split`` with reference responses; same seed, same rows."""
    _check(domain, split, n)
    rng = random.Random(f"micro|{domain}|{split}|{seed}")
    sample = _SAMPLERS[domain]
    problems: list[Problem] = []
    seen: set[str] = set()
    misses = 0
    while len(problems) < n:
        p = sample(rng)
        if split_of(domain, p.canonical) != split:
            misses += 1
            continue
        if p.canonical in seen and misses < _MAX_MISSES:
            misses += 1
            continue
        misses = 0 if p.canonical not in seen else misses
        seen.add(p.canonical)
        problems.append(p)
    return [
        Example(
            PromptRow(
                id=f"micro-{domain}-{split}-s{seed}-{i:05d}",
                messages=[Message(role="user", content=p.prompt)],
                ground_truth=p.ground_truth,
                domain=domain,
                effort=p.effort,
                token_budget=token_budget(p.response),
            ),
            p.response,
            p.quick_response,
        )
        for i, p in enumerate(problems)
    ]


def generate_split(domain: Domain, split: Split, n: int, seed: int) -> list[PromptRow]:
    """``n`` prompt rows of ``domain`` in ``split``; deterministic per seed."""
    return [e.row for e in generate_examples(domain, split, n, seed)]


def build_world(world_cfg: Any) -> dict[str, dict[str, list[PromptRow]]]:
    """split -> domain -> rows, sized by ``world_cfg`` (``config_world.MicroWorld``) and
    seeded by its ``data_seed``."""
    sizes = {"train": world_cfg.train_per_domain, "heldout": world_cfg.heldout_per_domain}
    return {
        split: {d: generate_split(d, split, sizes[split], world_cfg.data_seed) for d in DOMAINS}
        for split in SPLITS
    }
