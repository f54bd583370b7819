"""Teachers of on-policy distillation: which teacher scores which prompt, and the
engines that serve them.

A route is a key of ``distill.teachers`` (or of the routes the specialists stage
produced): ``domain/effort`` (``math/high``), ``domain`` (every effort of it) or ``*``
(every prompt: a single teacher, DeepSeek's OPD). A prompt goes to the most specific
route that matches it:

    route(row) = "<domain>/<effort>" if present, else "<domain>", else "*", else none

Each teacher checkpoint is served by a torch engine of its own (``engine.score``: the
log-probability of each given completion token at temperature 1), never loaded into the
learner; the actors ask it for the tokens they sampled, so the learner receives rollouts
that already carry ``teacher_logprobs``. Teachers share the student's tokenizer (they
are trained from the same checkpoint, in the same world).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recipe_arena.data.schema import PromptRow

ANY = "*"
"""The route that matches every prompt."""


def route_keys(row: PromptRow) -> list[str]:
    """The routes that can serve ``row``, most specific first."""
    keys = [f"{row.domain}/{row.effort}"] if row.effort is not None else []
    return [*keys, row.domain, ANY]


def route_for(row: PromptRow, routes: Mapping[str, Any]) -> str | None:
    """The key of ``routes`` that serves ``row`` (module docstring); None when none does."""
    return next((k for k in route_keys(row) if k in routes), None)


def teacher_name(route: str) -> str:
    """A route as a metric name: ``math/high`` -> ``math-high``, ``*`` -> ``any``."""
    return "any" if route == ANY else route.replace("/", "-")


def routed_rows(rows: Sequence[PromptRow], routes: Mapping[str, Any]) -> list[PromptRow]:
    """The rows some route serves (the prompts a distillation stage trains on)."""
    return [r for r in rows if route_for(r, routes) is not None]


class TeacherPool:
    """One engine per route's checkpoint (engines shared by routes with the same one)."""

    def __init__(self, routes: Mapping[str, str], engine_cfg: Any) -> None:
        from recipe_arena.engines import build_engine
        from recipe_arena.models.factory import load_checkpoint

        if not routes:
            raise ValueError("a teacher pool needs at least one route")
        self.routes = dict(routes)
        self._engines: dict[str, Any] = {}
        for path in sorted(set(self.routes.values())):
            model, tok = load_checkpoint(path)
            model.train(False)  # inference only (dropout off)
            self._engines[path] = build_engine("torch", model, tok, engine_cfg)

    def score_group(
        self, row: PromptRow, prompt_tokens: Sequence[int], completions: Sequence[Sequence[int]]
    ) -> tuple[str, list[tuple[float, ...]]]:
        """The teacher name of ``row``'s route and, per completion, the teacher's
        log-probability of each of its tokens (an empty completion scores empty)."""
        route = route_for(row, self.routes)
        if route is None:
            raise ValueError(
                f"prompt {row.id} (domain {row.domain}, effort {row.effort}) has no teacher; "
                f"routes: {sorted(self.routes)}"
            )
        engine = self._engines[self.routes[route]]
        scored = [
            tuple(engine.score(prompt_tokens, tokens)) if tokens else () for tokens in completions
        ]
        return teacher_name(route), scored

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
