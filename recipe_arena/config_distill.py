"""Settings of the specialists stage and the distillation stages (``mopd``, ``opd``).

Read by the stages that use them (``stages.distill``); ``config.RunConfig`` holds
them as ``specialists`` and ``distill``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator

from recipe_arena.advantages.distill import DistillParams
from recipe_arena.data.schema import DOMAINS, Domain, Effort
from recipe_arena.strategy import STRICT_CONFIG

ROUTE = re.compile(rf"\*|({'|'.join(DOMAINS)})(/(low|medium|high))?")
"""A route key: ``*``, a domain, or ``domain/effort`` (``distill.teachers.route_for``)."""


class SpecialistsConfig(BaseModel):
    """Kimi K3's specialists: one RLVR run per (domain, effort level), each from the
    same starting checkpoint on the training prompts of that domain and effort alone
    (the effort sets the token budget under ``length_control=token_budget``), every
    other RL setting as in ``rl``. Each specialist then teaches the prompts of its
    route in the ``mopd`` stage.

    The full recipe trains 3 domains x 3 efforts (``budget=full``). The micro default
    trains math at the three efforts, the domain where RL moves the micro model."""

    model_config = STRICT_CONFIG
    domains: list[Domain] = Field(default=["math"], min_length=1)
    """Domains that get specialists (micro: math; full recipe: math, code, ifeval)."""
    efforts: list[Effort] = Field(default=["low", "medium", "high"], min_length=1)
    """Effort levels that get specialists, in each domain of ``domains``."""
    steps: int = Field(20, ge=0)
    """RL optimiser steps of each specialist, 0 or more (fewer than the RL stage's: a
    specialist trains on one effort level's prompts alone)."""

    @field_validator("domains", "efforts")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"each entry at most once, got {v}")
        return v

    def routes(self) -> list[str]:
        """``domain/effort`` of every specialist, in training order."""
        return [f"{d}/{e}" for d in self.domains for e in self.efforts]


class DistillConfig(BaseModel):
    """On-policy distillation (``mopd``: Kimi K3, one teacher per route; ``opd``:
    DeepSeek-V4.1-Flash, the RL checkpoint as the single teacher). The student samples
    its own responses to the routed training prompts, each prompt's teacher scores the
    sampled tokens (served by an engine), and the learner trains on the per-token
    advantage of ``advantage``; every other RL setting is ``rl``'s, except that the
    zero-gradient filter and active sampling are off (rewards play no part)."""

    model_config = STRICT_CONFIG
    steps: int = Field(30, ge=0)
    """Optimiser steps of the distillation stage, 0 or more (30, under the RL stage's 48:
    a dense per-token signal needs fewer steps than a sparse reward)."""
    lr: float = Field(2e-5, gt=0, le=1.0)
    """Peak learning rate of the distillation stages (AdamW; the schedule is ``rl``'s),
    in (0, 1]. Its own, as SFT and DPO have theirs: the dense per-token signal moves the
    micro student fast."""
    advantage: DistillParams = DistillParams()
    """The per-token advantage (``advantages.distill``) and its clip c."""
    teachers: dict[str, str] = Field(default={})
    """Route -> teacher checkpoint directory. A route is ``domain/effort``, ``domain``
    or ``*`` (every prompt); a prompt goes to its most specific route. Empty: ``mopd``
    takes the checkpoints of the specialists stage, ``opd`` the RL stage's output."""

    @field_validator("teachers")
    @classmethod
    def _routes(cls, v: dict[str, str]) -> dict[str, str]:
        for key in v:
            if not ROUTE.fullmatch(key):
                raise ValueError(
                    f"route {key!r} is not '*', a domain or domain/effort "
                    f"(domains {', '.join(DOMAINS)}; efforts low, medium, high)"
                )
        return v
