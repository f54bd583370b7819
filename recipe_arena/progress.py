"""One progress bar per long stage, with an ETA, readable on a terminal and in a log file.

On a terminal the bar is tqdm's, redrawn in place. Written to a file or a pipe
(``make run > run.log``, CI, a test capturing stderr) a redrawn bar would leave either
one line per update or one huge line of carriage returns, so there the bar prints a
plain line (tqdm's own meter text: count, elapsed, ETA, rate) each time it passes
another tenth of its total, when ``quiet_s`` seconds have passed without a line, and
at the end. ``note`` prints a line that stays (a held-out evaluation, say) without
breaking the bar.
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import Any, TextIO

from tqdm.auto import tqdm

LINE_FORMAT = (
    "{desc}: {percentage:3.0f}% {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"
)
"""A log line: 'rlvr:  40% 180/450 [07:12<10:48, 2.40s/step, reward 0.41 ...]'."""


def _is_terminal(stream: TextIO) -> bool:
    """A terminal with a width (a pseudo-terminal of width 0 gets log lines: tqdm would
    draw nothing there)."""
    try:
        return stream.isatty() and os.get_terminal_size(stream.fileno()).columns > 0
    except (AttributeError, OSError, ValueError):
        return False


class StageBar:
    """The progress of one stage: ``update`` per unit of work, ``postfix`` for the
    latest figures, ``note`` for a line that stays. A context manager."""

    def __init__(
        self,
        desc: str,
        total: int,
        unit: str = "step",
        initial: int = 0,
        stream: TextIO | None = None,
        lines: int = 10,
        quiet_s: float = 300.0,
    ) -> None:
        self.desc, self.total, self.unit = desc, max(0, total), unit
        self.n = self.initial = min(initial, self.total)
        self.stream = stream or sys.stderr
        self.postfix = ""
        self.quiet_s = quiet_s
        self._t0 = time.monotonic()
        self._last_line = self._t0
        self._step = max(1, math.ceil(self.total / max(1, lines)))
        self._next = (self.n // self._step + 1) * self._step
        self._printed_at = -1
        self._bar: Any = None
        if _is_terminal(self.stream) and self.total > 0:
            self._bar = tqdm(
                total=self.total,
                initial=self.n,
                desc=desc,
                unit=unit,
                file=self.stream,
                dynamic_ncols=True,
                leave=True,
            )

    def __enter__(self) -> StageBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: int = 1, postfix: str | None = None) -> None:
        """``n`` more units done; ``postfix`` (if given) replaces the figures shown."""
        if postfix is not None:
            self.postfix = postfix
        self.n = min(self.total, self.n + n)
        if self._bar is not None:
            self._bar.set_postfix_str(self.postfix, refresh=False)
            self._bar.update(n)
            return
        now = time.monotonic()
        if self.n >= self._next or self.n == self.total or now - self._last_line >= self.quiet_s:
            self._line()
            while self._next <= self.n:
                self._next += self._step

    def note(self, text: str) -> None:
        """Print ``text`` as a line of its own, above a live bar."""
        if self._bar is not None:
            self._bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.total > 0 and self._printed_at != self.n:
            self._line()

    def line(self) -> str:
        """The text of a log line for the current state."""
        return str(
            tqdm.format_meter(
                self.n,
                self.total,
                time.monotonic() - self._t0,
                prefix=self.desc,
                unit=self.unit,
                postfix=self.postfix or None,
                bar_format=LINE_FORMAT,
                initial=self.initial,
            )
        )

    def _line(self) -> None:
        print(self.line(), file=self.stream, flush=True)
        self._printed_at = self.n
        self._last_line = time.monotonic()


# ----------------------------------------------------------------------------- RL stage text
def heldout_text(metrics: dict[str, float], start: dict[str, float] | None = None) -> str:
    """'math 0.236 (+0.050), ifeval 0.400 (+0.120)': held-out pass@1 per domain in the
    metrics record ``metrics``, with the change from the record ``start`` when given."""
    from recipe_arena.summary import pass_at_1

    before = pass_at_1(start or {})
    parts = []
    for domain, value in pass_at_1(metrics).items():
        change = f" ({value - before[domain]:+.3f})" if domain in before else ""
        parts.append(f"{domain} {value:.3f}{change}")
    return ", ".join(parts)


def rl_postfix(metrics: dict[str, float], heldout: str) -> str:
    """The figures on the RL bar: the step's mean reward and the latest held-out result."""
    reward = metrics.get("reward/mean")
    text = f"reward {reward:.3f}" if reward is not None and reward == reward else "reward -"
    return f"{text}, held-out {heldout}" if heldout else text
