"""What the hostile-program catalogue (tests/sandbox_attacks.py) is built from: the
``Attack`` record, the default tests (``ADD``), the marks of this run on the host (a
directory, a socket path, an abstract socket name) and the census of processes that run
as a sandbox uid."""

from __future__ import annotations

import os
import textwrap
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from recipe_arena.rewards.sandbox import UID_BASE

ADD = ["assert add(2, 3) == 5", "assert add(-1, 1) == 0", "assert add(10, 20) == 30"]
MARK = uuid.uuid4().hex[:12]
HOST_DIR = (
    Path("/var/tmp") / f"recipe_arena_hostile_{MARK}"
)  # not /tmp: visible to a sandbox that only hides /tmp
SOCK = HOST_DIR / "s.sock"
ABSTRACT = f"recipe_arena_{MARK}"


def fenced(code: str) -> str:
    return f"<think>plan</think>```python\n{textwrap.dedent(code).strip()}\n```"


@dataclass(frozen=True)
class Attack:
    category: str
    program: str
    tests: tuple[str, ...] = tuple(ADD)
    want: float = 0.0
    """The score that means contained: 0 for reward hacks, 1 where the tests assert
    that the host is out of reach (or that a correct program passes)."""
    host_ok: Callable[[], bool] | None = None


def _proc_table() -> dict[int, tuple[int, int]]:
    """Every host process: pid -> (uid, parent pid)."""
    table = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                uid = os.stat(d).st_uid
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            table[int(d.name)] = (uid, ppid)
    return table


def owner_slot(uid: int) -> int:
    """Which process started the sandbox running as ``uid``: its pid modulo 100,000
    (``rewards.sandbox._uids`` gives each process 2,000 uids from UID_BASE + slot * 2,000)."""
    return (uid - UID_BASE) // 2_000


def sandbox_processes(owners: Collection[int] | None = None) -> list[int]:
    """Host pids owned by a sandbox uid (>= UID_BASE). With ``owners``, only the
    sandboxes those processes started. Without, every sandbox except those started by a
    live process outside this test process's tree: another test running beside it (a
    smoke run's code checks, another pytest-xdist worker) is not this test's leftover,
    while a sandbox whose owner is gone, or is this process or one of its descendants
    (a verifier pool's zygote and workers), is."""
    table = _proc_table()
    if owners is not None:
        slots = {pid % 100_000 for pid in owners}
        return [p for p, (uid, _) in table.items() if uid >= UID_BASE and owner_slot(uid) in slots]
    ours = {os.getpid()}
    grew = True
    while grew:
        more = {p for p, (_, ppid) in table.items() if ppid in ours} - ours
        ours |= more
        grew = bool(more)
    foreign = {p % 100_000 for p, (uid, _) in table.items() if uid < UID_BASE and p not in ours}
    return [
        p for p, (uid, _) in table.items() if uid >= UID_BASE and owner_slot(uid) not in foreign
    ]
