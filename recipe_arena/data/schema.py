"""The prompt row that flows from data sets to actors (Dolci-Think-RL style).

`ground_truth` per domain:
- math: the reference answer as a string (LaTeX allowed);
- code: a list of Python test statements (``assert f(1) == 2``) or a list of
  ``{"stdin": ..., "stdout": ...}`` pairs;
- ifeval: ``{"instruction_id_list": [...], "kwargs": [...]}`` as in IFEval;
- chat: the reference answer, or ``None`` for open-ended judging.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from recipe_arena.domains import DOMAINS as DOMAINS

if TYPE_CHECKING:
    Domain = str
else:
    Domain = Literal[DOMAINS]
"""A domain name: a key of ``domains.VERIFIERS``."""
Effort = Literal["low", "medium", "high"]
VerdictKind = Literal["opposite", "colour", "plural", "number", "letters"]
"""The kinds of micro chat question (``data.micro_verdicts.question_kind``)."""


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Literal["system", "user", "assistant"]
    content: str


class PromptRow(BaseModel):
    """One training or evaluation prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    messages: list[Message]
    ground_truth: Any = None
    domain: Domain
    effort: Effort | None = None
    token_budget: int | None = Field(default=None, ge=1)

    @property
    def prompt_text(self) -> str:
        """The last user message: what a verifier or judge sees as the prompt."""
        return next(m.content for m in reversed(self.messages) if m.role == "user")


def chat_reference(gold: Any) -> str | None:
    """A chat row's reference as the judge reads it: text, or None for open-ended
    judging. The judge reads a reference only from text, so a reference written as a
    JSON number (``7`` for "What is 3 + 4?") left the row open-ended, with nothing to
    hold a wrong ``8`` to; a number is its JSON text (``7``, ``2.5``). A list, an object
    or a boolean names no one answer: ValueError, for the reader to report."""
    if gold is None or isinstance(gold, str):
        return gold
    if isinstance(gold, int | float) and not isinstance(gold, bool):
        return json.dumps(gold)
    raise ValueError(
        f"chat ground_truth must be a string, a number or null, not {type(gold).__name__}"
    )


def read_rows(path: str | Path) -> list[PromptRow]:
    """Read a JSONL file of prompt rows; a bad line raises naming its line number. A chat
    row's reference is read as ``chat_reference`` reads it (a number as its text), and
    one that is a list, an object or a boolean raises naming the line and the row's id,
    before a run spends compute on a row the judge would grade open-ended."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = PromptRow.model_validate_json(line)
            except ValueError as e:
                raise ValueError(f"{path}:{lineno}: not a prompt row: {e}") from e
            if row.domain == "chat":
                try:
                    gold = chat_reference(row.ground_truth)
                except ValueError as e:
                    raise ValueError(f"{path}:{lineno}: row {row.id!r}: {e}") from e
                if gold is not row.ground_truth:
                    row = row.model_copy(update={"ground_truth": gold})
            rows.append(row)
    return rows


def write_rows(path: str | Path, rows: Iterable[PromptRow]) -> None:
    """Write rows as JSONL atomically (a crash never leaves a half-written file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(row.model_dump_json() + "\n")
    tmp.replace(path)


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)
