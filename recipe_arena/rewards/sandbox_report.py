"""Runs inside the sandbox (standard library only, between sandbox_remote.py's source and
sandbox_harness.py's): the check side's report to the verifier, read by
``code.parse_report``."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any


class _Report:
    """The check side's report to the verifier (a private copy of stdout). Before a
    top-level statement runs, ``S`` lines name the asserts it may run (those it holds
    and those of the test functions it names or enters); ``F`` after its ``R`` lines
    says it finished. The verifier fails the asserts of a statement that never got its
    ``F``: one cut short by the time limit, or by the end of the check side, would
    otherwise leave standing an ``R i 1`` that an earlier statement reported for the
    same helper's assert (``t(1, 2)`` passed, ``t(2, 4)`` never returned)."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.named: set[int] = set()  # asserts the running statement has named
        self.ranges: set[tuple[int, int]] = set()  # test functions it entered

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def open(self, ids: Any) -> None:
        """Name ``ids`` as asserts the running statement may run (new ones only)."""
        new = sorted(set(ids) - self.named)
        self.named.update(new)
        self._ids("S", new)

    def _ids(self, kind: str, ids: list[int]) -> None:
        for k in range(0, len(ids), 300):  # lines short enough to be written whole
            self.say(f"{kind} " + " ".join(map(str, ids[k : k + 300])))

    def start(self, n_asserts: int, inner: list[int]) -> None:
        """``T n``, then ``H`` naming the asserts inside test functions, which the
        verifier fails unless the run ends with ``D`` (``finish``) or a ``K`` (``keep``)
        named them: a run cut short never ran its later statements (``t(f(1), 2)``
        passed, ``r = f(2)`` never returned, ``t(r, 4)`` never ran)."""
        self.say(f"T {n_asserts}")
        self._ids("H", inner)

    def keep(self, ids: list[int]) -> None:
        """``K``: asserts of ``H`` that no statement from the next on can run."""
        self._ids("K", ids)

    def finish(self, notes: list[str]) -> None:
        """The first note (``N``), then ``D``: every statement ran."""
        if notes:
            self.say("N " + _clean(notes[0]))
        self.say("D")

    def open_range(self, first: int, last: int) -> range:
        """A test function holding asserts ``first..last-1`` was entered: name them."""
        if (first, last) not in self.ranges:
            self.ranges.add((first, last))
            self.open(range(first, last))
        return range(first, last)

    def close(self) -> None:
        """The running statement finished (its ``R`` lines are written)."""
        if self.named:
            self.say("F")
        self.named.clear()
        self.ranges.clear()


def _clean(text: str) -> str:
    """One report line: at most 300 characters, control characters as spaces."""
    return "".join(c if c.isprintable() else " " for c in text[:300])
