"""Queues between the learner and the actors: one interface, a local and a Ray form."""

from __future__ import annotations

import queue
from typing import Any, Protocol


class Channel(Protocol):
    def put(self, item: Any) -> None: ...

    def get(self, timeout: float) -> Any | None:
        """Next item, or None after ``timeout`` seconds."""

    def qsize(self) -> int: ...


class LocalChannel:
    """A thread-safe queue inside one process."""

    def __init__(self) -> None:
        self._q: queue.Queue[Any] = queue.Queue()

    def put(self, item: Any) -> None:
        self._q.put(item)

    def get(self, timeout: float) -> Any | None:
        try:
            return self._q.get(timeout=timeout) if timeout > 0 else self._q.get_nowait()
        except queue.Empty:
            return None

    def qsize(self) -> int:
        return self._q.qsize()


class RayChannel:
    """A Ray queue actor; picklable, so actors in other processes hold the same queue."""

    def __init__(self) -> None:
        from ray.util.queue import Queue

        self._q = Queue()

    def put(self, item: Any) -> None:
        self._q.put(item)

    def get(self, timeout: float) -> Any | None:
        from ray.util.queue import Empty

        try:
            return self._q.get(block=timeout > 0, timeout=timeout if timeout > 0 else None)
        except Empty:
            return None

    def qsize(self) -> int:
        return int(self._q.qsize())
