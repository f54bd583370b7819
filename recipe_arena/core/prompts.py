"""The prompt source: a domain mixture over the training rows, with a resumable cursor.

Each domain's rows are visited in a seeded shuffled order, a fresh shuffle per pass; the
domain of each draw is chosen with probability proportional to its mixture weight
(OLMo 3 put extra weight on math and instruction following). Prompts handed back
(``requeue``: stale groups, or prompts in flight when a run stopped) are drawn again
before any new one. ``state_dict``/``load_state_dict`` capture all of it, so a resumed
run draws exactly the prompts an uninterrupted one would.
"""

from __future__ import annotations

import collections
import random
from collections.abc import Mapping, Sequence
from typing import Any

from recipe_arena.data.schema import PromptRow


class PromptSource:
    def __init__(
        self, rows: Sequence[PromptRow], domain_weights: Mapping[str, float], seed: int
    ) -> None:
        if not rows:
            raise ValueError("the prompt source needs at least one training row")
        self.seed = seed
        self.by_id = {r.id: r for r in rows}
        if len(self.by_id) != len(rows):
            raise ValueError("training rows must have unique ids")
        by_domain: dict[str, list[str]] = collections.defaultdict(list)
        for r in rows:
            by_domain[r.domain].append(r.id)
        self.domains = sorted(d for d in by_domain if domain_weights.get(d, 0.0) > 0)
        if not self.domains:
            raise ValueError(
                f"no training rows in a domain with positive weight; rows have {sorted(by_domain)}, "
                f"weights {dict(domain_weights)}"
            )
        self.weights = [float(domain_weights[d]) for d in self.domains]
        self.ids = {d: sorted(by_domain[d]) for d in self.domains}
        self.cursor = {d: 0 for d in self.domains}
        self.draws = 0
        self.requeued: collections.deque[str] = collections.deque()
        self._rng = random.Random(seed)

    def _order(self, domain: str, epoch: int) -> list[str]:
        order = list(self.ids[domain])
        random.Random(f"{self.seed}/{domain}/{epoch}").shuffle(order)
        return order

    def next(self) -> PromptRow:
        """The next prompt: a requeued one first, else a fresh draw from the mixture."""
        self.draws += 1
        if self.requeued:
            return self.by_id[self.requeued.popleft()]
        domain = self._rng.choices(self.domains, weights=self.weights)[0]
        n = len(self.ids[domain])
        epoch, index = divmod(self.cursor[domain], n)
        self.cursor[domain] += 1
        return self.by_id[self._order(domain, epoch)[index]]

    def requeue(self, row: PromptRow) -> None:
        self.requeued.append(row.id)

    def state_dict(self, in_flight: Sequence[str] = ()) -> dict[str, Any]:
        """Cursor state; ``in_flight`` prompts (drawn, not yet trained) come first on resume."""
        return {
            "cursor": dict(self.cursor),
            "draws": self.draws,
            "requeued": list(in_flight) + list(self.requeued),
            "rng": self._rng.getstate(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.cursor = {d: int(state["cursor"].get(d, 0)) for d in self.domains}
        self.draws = int(state["draws"])
        self.requeued = collections.deque(i for i in state["requeued"] if i in self.by_id)
        rng_state = state["rng"]
        self._rng.setstate((rng_state[0], tuple(rng_state[1]), rng_state[2]))
