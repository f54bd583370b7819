"""The on-disk cache shared by the stages, the evaluation, the models and the sandbox:
where it lives, how an entry is keyed, built, sealed and verified, and how a JSON file
is written atomically.

Every cache entry goes through ``build_cached``: built in a temporary folder, *sealed*
(``SEAL``: the SHA-256 and size of every file, written last), fsynced, renamed into place
and the folder fsynced, so an entry is complete and durable or absent. Each use verifies
the seal against the files; an entry that fails (a flipped byte, a truncated or missing
file, no seal) is reported in one line on stderr, moved aside and built again. Files
added to an entry after it was sealed (a checkpoint's cached evaluation) are not part of
the seal: they are JSON written by ``write_json_atomic`` with their own checksum, read by
``read_json_checked``.

A module of its own so that the stages (which cache base models) and the evaluation
(which caches a checkpoint's scores next to it) both import it without importing each
other.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import filelock

from recipe_arena.cpu_isa import mkl_mode, pinned
from recipe_arena.integrity import _fsync_dir as fsync_dir
from recipe_arena.integrity import _sha256

CODE_VERSION = "stages-v5"
"""Part of every cache key: bump it when a change alters what a cached stage produces."""

VERDICTS_VERSION = "verdicts-v2"
"""Part of the key of everything that stores or follows verifiers' verdicts: a cached
held-out evaluation, a stored prefix (its DPO validation and prompt filter read verdicts)
and a study run. Bump it when a verifier's verdict can change on what the recipes' own
models write, so that nothing computed under the old verdicts is reused (v2: IFEval's
language check made a function of the text, ``rewards.ifeval.LANGDETECT_SEED``). A fix
that changes verdicts only on crafted answers (a hack closed) keeps it, once a stored
prefix rebuilt under the fix equals the stored one and a study row rerun with it
reproduces its committed per-question scores (``study ... check=``): bumping it would
orphan every committed study run for verdicts none of them met."""

AUDIT_VERSION = "audit-v2"
"""Part of the key of every study run and stored prefix whose pipeline runs the audit
(``study.settings_digest``, ``prefix_cache.prefix_entry``) and of a stored audit report:
bump it when a change to the audit's probes (``rewards.audit.HACKS``) can change what it
accepts, so no run quarantined under the old probes is reused (v2: ``numbers_listed``,
the probe the ``last_number`` extractor accepts). Read through ``audit_version``."""

AUDIT_TOURNAMENT_VERSION = "tournament-v1"
"""Added to ``AUDIT_VERSION`` where ``rewards.chat`` is ``rubric_tournament`` only: how
the audit scores chat probes there (v1: each plays a tournament against the row's
reference, as training scores it). Kept apart so that a change there does not orphan
runs audited under the single-answer judge, whose probes it leaves as they were."""


def audit_version(chat: str) -> str:
    """The audit's version for runs whose chat verifier is ``chat`` (``rewards.chat``)."""
    if chat == "rubric_tournament":
        return f"{AUDIT_VERSION}+{AUDIT_TOURNAMENT_VERSION}"
    return AUDIT_VERSION


STALE_TMP_S = 6 * 3600
"""A temporary build directory untouched this long was left by a killed process."""

SEAL = ".sealed.json"
"""The seal of an entry, inside it: ``{"files": {relative path: [size, sha256]}}``."""

_VERIFIED: dict[Path, tuple[Any, ...]] = {}
"""Entries this process verified, with the (inode, size, mtime, ctime) of the seal and
of every sealed file then: while none changes, the entry is not hashed again (a write to
any file changes its mtime and ctime)."""


def cache_root(cache_dir: str | None) -> Path:
    """``cache_dir``, else $RECIPE_ARENA_CACHE, else ~/.cache/recipe_arena."""
    root = cache_dir or os.environ.get("RECIPE_ARENA_CACHE") or "~/.cache/recipe_arena"
    return Path(root).expanduser()


def cache_key(parts: dict[str, Any]) -> str:
    """A short stable hash of everything a cached result depends on, plus CODE_VERSION,
    the instruction set the kernels are capped at when they are (``cpu_isa.pinned``) and
    MKL's reproducibility mode when one is set (``cpu_isa.mkl_mode``); each is absent
    otherwise, so an entry keeps the key it had before either was keyed."""
    isa, mkl = pinned(), mkl_mode()
    blob = json.dumps(
        {
            "code": CODE_VERSION,
            **parts,
            **({"isa": isa} if isa else {}),
            **({"mkl_cbwr": mkl} if mkl else {}),
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def build_cached(entry: Path, build: Callable[[Path], None]) -> Path:
    """Return ``entry`` once it verifies against its seal; else ``build`` it into a
    temporary sibling folder, seal it and rename that into place, so a crash never
    leaves a half-written entry (module docstring). A corrupt entry is reported on
    stderr in one line and replaced. The build holds ``build_lock(entry)``: a second
    process (another run, a Ray actor, the micro judge's background training) asking
    for the same entry meanwhile waits for it and then reads it, rather than building
    it a second time beside the first."""
    if entry_problem(entry) is None:
        return entry
    entry.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(entry):
        problem = entry_problem(entry)
        if problem is None:  # built by the process that held the lock
            return entry
        if entry.exists() or entry.is_symlink():
            print(f"cache entry {entry} is corrupt ({problem}); building it again", file=sys.stderr)
            _move_aside(entry)
        _remove_abandoned(entry)
        tmp = Path(tempfile.mkdtemp(prefix=entry.name + ".", suffix=".tmp", dir=entry.parent))
        try:
            build(tmp)
            seal(tmp)
            tmp.rename(entry)
            fsync_dir(entry.parent)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return entry


def entry_ready(entry: Path) -> bool:
    """Whether ``entry`` has been built and sealed (not verified: ``build_cached`` does
    that when it is used)."""
    return (entry / SEAL).is_file()


def seal(folder: Path) -> None:
    """fsync every file of ``folder`` and write its seal (SHA-256 and size of each),
    atomically, last; then fsync every folder in it."""
    files: dict[str, list[Any]] = {}
    dirs = [folder]
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            raise ValueError(f"cache entry {folder}: {path} is a symbolic link")
        if path.is_dir():
            dirs.append(path)
        elif path.name != SEAL:
            with open(path, "rb") as f:
                os.fsync(f.fileno())
            files[path.relative_to(folder).as_posix()] = [path.stat().st_size, _sha256(path)]
    tmp = folder / (SEAL + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"files": files}, f, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    tmp.rename(folder / SEAL)
    for d in dirs:
        fsync_dir(d)


def entry_problem(entry: Path) -> str | None:
    """None when every file the seal of ``entry`` lists has its size and SHA-256; else
    what is wrong, in a few words (no entry, no seal, which file differs)."""
    if entry.is_symlink() or not entry.is_dir():
        return "missing" if not (entry.exists() or entry.is_symlink()) else "not a folder"
    try:
        manifest = json.loads((entry / SEAL).read_text(encoding="utf-8"))
        files = {
            str(rel): (int(size), str(digest)) for rel, (size, digest) in manifest["files"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return "no valid seal"
    if any(rel.startswith("/") or ".." in rel.split("/") for rel in files):
        return "no valid seal"
    stamp = [_stamp(entry / SEAL)]
    for rel, (size, _) in sorted(files.items()):
        path = entry / rel
        if path.is_symlink() or not path.is_file():
            return f"{rel} is missing"
        stamp.append(_stamp(path))
        if stamp[-1][1] != size:
            return f"{rel} has {stamp[-1][1]} bytes, sealed with {size}"
    key = entry.resolve()
    if _VERIFIED.get(key) == tuple(stamp):
        return None
    for rel, (_, digest) in sorted(files.items()):
        if _sha256(entry / rel) != digest:
            return f"{rel} does not match its SHA-256"
    _VERIFIED[key] = tuple(stamp)
    return None


def _stamp(path: Path) -> tuple[int, int, int, int]:
    st = path.stat()
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _move_aside(entry: Path) -> None:
    """Rename a corrupt entry to a temporary name (a process reading it keeps its open
    files), then delete it."""
    aside = entry.with_name(f"{entry.name}.{os.getpid()}.corrupt.tmp")
    entry.rename(aside)
    fsync_dir(entry.parent)
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink()


@contextlib.contextmanager
def build_lock(entry: Path) -> Iterator[None]:
    """An exclusive lock on ``<entry>.lock`` beside the entry (``filelock``: an OS lock,
    released when its holder dies, so a killed build never blocks the next). Waiting for
    it says so on stderr, since the holder's build can take minutes."""
    lock = filelock.FileLock(str(entry) + ".lock")
    try:
        lock.acquire(blocking=False)
    except filelock.Timeout:
        print(f"waiting for another process building {entry}", file=sys.stderr, flush=True)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _remove_abandoned(entry: Path) -> None:
    """Delete temporary build directories of ``entry`` left by killed processes (a
    SIGKILL skips the cleanup in ``build_cached``); recent ones may belong to a live build."""
    now = time.time()
    for tmp in entry.parent.glob(entry.name + ".*.tmp"):
        if now - tmp.stat().st_mtime > STALE_TMP_S:
            shutil.rmtree(tmp, ignore_errors=True)


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` whole or not at all (a temporary file beside
    it, fsynced, renamed over it, the folder fsynced). A mapping gets a ``_sha256`` key
    (of its canonical JSON without that key) for ``read_json_checked``."""
    if isinstance(obj, dict):
        obj = {**obj, "_sha256": _digest(obj)}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, indent=2, sort_keys=True))
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    fsync_dir(path.parent)


def read_json_checked(path: Path) -> dict[str, Any] | None:
    """The mapping ``write_json_atomic`` wrote to ``path``, without its checksum; None
    when there is none, or it is not valid JSON or does not match its checksum (then
    reported in one line on stderr: the caller computes it again and rewrites it)."""
    if not path.is_file():
        return None
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
        digest = obj.pop("_sha256")
        ok = digest == _digest(obj)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        ok = False
    if not ok:
        print(f"cache file {path} is corrupt or unsealed; computing it again", file=sys.stderr)
        return None
    return obj  # type: ignore[no-any-return]


def _digest(obj: dict[str, Any]) -> str:
    blob = json.dumps({k: v for k, v in obj.items() if k != "_sha256"}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()
