"""The run directory: resolved config, metrics.jsonl, rollouts.jsonl, checkpoints, reports.

Metric names are stable and namespaced (``reward/…``, ``loss/…``, ``staleness/…``,
``length/…``, ``throughput/…``, ``eval/…``); reports and benchmarks read only these
files. Every line is flushed and fsynced so a crash loses at most the line in flight.

``RunLock`` holds a run directory for one run at a time (an flock on a file beside it,
taken before the directory is touched and held until the run ends); a second run of
the same name exits 2 naming the holder. On resume, ``truncate_logs`` cuts what the
resumed stage logged after its checkpoint, as the ledger is cut, so no step is logged
twice.

``run_dir_path`` is the one place a run directory's path is made: out_dir resolved
(symbolic links followed once, so its parts cannot change meaning later), then one plain
name under it. A run reads, writes, moves and deletes only there and in
``out_dir/<name>.prev``, under the locks of both (pipeline.py).
"""

from __future__ import annotations

import fcntl
import gzip
import json
import os
import socket
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from recipe_arena.compose import ConfigError
from recipe_arena.config import RunConfig
from recipe_arena.integrity import _fsync_dir as fsync_dir


class RunDirBusy(ConfigError):
    """Another run holds the run directory; the message names it."""


LOG_FILES = ("metrics.jsonl", "rollouts.jsonl", "eval_scores.jsonl")
"""The run directory's logs of records ``{"stage", "step", ...}``, one JSON object a line."""


def run_dir_path(out_dir: str | Path, name: str) -> Path:
    """``out_dir/name`` with out_dir resolved; ConfigError unless ``name`` is one plain
    path component (not empty, no ``/``, not starting with a dot), so the result always
    lies directly inside out_dir. A symbolic link at the result itself is not followed
    here: the callers refuse or move it (pipeline.py)."""
    if not name or "/" in name or "\0" in name or name.startswith("."):
        raise ConfigError(f"run directory name {name!r} must be a plain name, not a path")
    root = Path(os.path.realpath(os.fspath(out_dir)))
    path = root / name
    if path.parent != root:  # cannot happen for a plain name; kept as the invariant
        raise ConfigError(f"run directory {path} is not inside out_dir={out_dir}")
    return path


class RunLock:
    """An exclusive lock on ``out_dir/.<name>.lock`` for the life of a run (or of a
    move: pipeline.py takes the lock of ``<name>.prev`` before replacing it)."""

    def __init__(self, out_dir: str | Path, name: str) -> None:
        self.run_path = run_dir_path(out_dir, name)
        self.path = self.run_path.with_name(f".{name}.lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:  # a symbolic link or a folder planted as the lock file
            raise ConfigError(
                f"cannot lock run directory {self.run_path}: {self.path} ({e.strerror})"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise RunDirBusy(
                f"run directory {self.run_path} is in use by {holder}; wait for that run "
                "to end or choose another name="
            ) from None
        os.ftruncate(fd, 0)
        since = time.strftime("%Y-%m-%d %H:%M:%S")
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {since}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class RunDir:
    def __init__(self, cfg: RunConfig, root: str | Path | None = None) -> None:
        self.cfg = cfg
        self.path = Path(root) if root is not None else run_dir_path(cfg.out_dir, cfg.run_name)
        self.path.mkdir(parents=True, exist_ok=True)
        self.checkpoints = self.path / "checkpoints"
        self.checkpoints.mkdir(exist_ok=True)
        self._wandb: Any = None
        for name in LOG_FILES:  # a killed run's torn last line, before anything appends
            repair_jsonl(self.path / name)
        self.write_text("config.yaml", yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
        if cfg.wandb.enabled:
            self._start_wandb()

    def _start_wandb(self) -> None:
        os.environ.setdefault("WANDB_MODE", self.cfg.wandb.mode)
        os.environ.setdefault("WANDB_DIR", str(self.path))
        os.environ.setdefault("WANDB_SILENT", "true")
        import wandb

        self._wandb = wandb.init(
            project=self.cfg.wandb.project,
            name=self.cfg.run_name,
            config=self.cfg.model_dump(mode="json"),
            dir=str(self.path),
            mode=self.cfg.wandb.mode,
        )

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    def log(self, stage: str, step: int, metrics: dict[str, float]) -> None:
        """Append one JSON object: {"stage", "step", "time", **metrics}."""
        record = {"stage": stage, "step": step, "time": time.time(), **metrics}
        _append_jsonl(self.metrics_path, record)
        if self._wandb is not None:
            self._wandb.log({f"{stage}/{k}": v for k, v in metrics.items()})

    def log_rollouts(self, records: list[dict[str, Any]]) -> None:
        for r in records:
            _append_jsonl(self.path / "rollouts.jsonl", r)

    def truncate_logs(self, stage: str, step: int) -> None:
        """Drop ``stage``'s records of steps after ``step`` from the run's logs
        (``LOG_FILES``; each atomically rewritten). Torn lines go too; every other
        line, of any stage, stays as it was."""
        self.drop_records(lambda r: r.get("stage") == stage and _step(r) > step)

    def drop_records(self, match: Callable[[dict[str, Any]], bool]) -> None:
        """Drop the records for which ``match`` holds from the run's logs (and torn
        lines); every other line stays as it was."""
        for name in LOG_FILES:
            path = self.path / name
            if path.exists():
                _rewrite_jsonl(path, lambda r: not match(r))

    def write_json(self, name: str, obj: Any) -> Path:
        return self.write_text(name, json.dumps(obj, indent=2, sort_keys=True))

    def write_text(self, name: str, text: str) -> Path:
        """Write ``name`` in the run directory whole or not at all: a temporary file
        beside it, fsynced, renamed over it, the directory fsynced."""
        p = self.path / name
        tmp = p.with_name(f".{p.name}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(p)
        fsync_dir(p.parent)
        return p

    def close(self) -> None:
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None


def _append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one line, flushed and fsynced (a crash loses at most the line in flight)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


LOG_MAX_LINE_CHARS = 16 << 20
"""Length of one line of a JSON-lines log, at most, in characters. A micro run's longest
line is an evaluation record of about 32,000 characters (its 500 held-out questions' ids,
domains, sources and scores, about 64 characters a question), so a line this long holds
some 250,000 questions. A line that never ends (a log linked to ``/dev/zero``) is
refused, not read into memory."""

LOG_MAX_CHARS = 256 << 20
"""Text of one JSON-lines log, at most, in characters, after a gzipped log is expanded.
A 96-step micro run logs about 240,000 characters of metrics and 320,000 of evaluation
records; a run a hundred times longer stays far below. A gzip bomb (a few MB expanding
to gigabytes of records) is refused, since its records would take several times its
text in memory."""

LOG_MAX_LINES = 1_000_000
"""Lines of one JSON-lines log, at most: a 96-step micro run logs 149 metrics lines and
10 evaluation records. Bounds the records a short-lined log would make (a gzip of a few
MB expanding to ``LOG_MAX_CHARS`` of ``{}`` lines would be 90 million objects, several
GB)."""


class LogReadError(OSError):
    """A JSON-lines log that is not a regular file, holds a line longer than
    ``LOG_MAX_LINE_CHARS`` or more than ``LOG_MAX_LINES`` lines or ``LOG_MAX_CHARS``
    characters in all; the message says which. An OSError, so a report names the file as
    one it cannot read whole."""


class LogLines:
    """The lines of an open log, each with its newline, read within ``LOG_MAX_LINE_CHARS``
    a line, ``LOG_MAX_LINES`` lines and ``LOG_MAX_CHARS`` in all (LogReadError past
    any); a context manager that closes the file."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._read = 0
        self._lines = 0

    def __enter__(self) -> LogLines:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()

    def __iter__(self) -> Iterator[str]:
        while line := self._stream.readline(LOG_MAX_LINE_CHARS + 1):
            if len(line) > LOG_MAX_LINE_CHARS:
                raise LogReadError(f"a line longer than {LOG_MAX_LINE_CHARS} characters")
            self._read += len(line)
            self._lines += 1
            if self._read > LOG_MAX_CHARS:
                raise LogReadError(f"longer than {LOG_MAX_CHARS} characters")
            if self._lines > LOG_MAX_LINES:
                raise LogReadError(f"more than {LOG_MAX_LINES} lines")
            yield line

    def readlines(self) -> list[str]:
        return list(self)


def open_log(path: Path) -> LogLines:
    """A JSON-lines log for reading: ``path``, or its gzipped copy ``path``.gz when only
    that exists (an exported study keeps its runs' logs gzipped, at a twentieth of the
    size). Bounded (``LogLines``), since reports read run folders handed over by others;
    LogReadError at once when the file is not a regular one (a FIFO would block)."""
    if not path.exists() and (packed := path.with_name(path.name + ".gz")).exists():
        path = packed
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise LogReadError("not a regular file")
    if path.suffix == ".gz":
        return LogLines(gzip.open(path, "rt", encoding="utf-8", errors="replace"))
    return LogLines(open(path, encoding="utf-8", errors="replace"))


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The records of metrics.jsonl (of a run directory, or the file itself; or its
    ``open_log`` copy) in file order; a torn line (a process killed mid-write) is
    skipped, the lines after it kept."""
    p = Path(path)
    if p.is_dir():
        p = p / "metrics.jsonl"
    with open_log(p) as f:
        return [r for r in map(_record, f) if r is not None]


def _record(line: str) -> dict[str, Any] | None:
    """The JSON object of one complete log line; None for a torn or foreign one."""
    if not line.endswith("\n"):
        return None  # the last line of a writer killed mid-line
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _step(record: dict[str, Any]) -> int:
    try:
        return int(record.get("step", 0))
    except (TypeError, ValueError, OverflowError):
        return 0


def repair_jsonl(path: Path) -> int:
    """Drop the torn lines of a JSONL log (a writer killed mid-line leaves one; a later
    append would run on from it); return how many. The file is rewritten only when one
    is found, keeping every complete line in order."""
    if not path.exists():
        return 0
    with open(path, encoding="utf-8", errors="replace") as f:
        torn = sum(_record(line) is None for line in f)
    if torn:
        _rewrite_jsonl(path, lambda r: True)
    return torn


def _rewrite_jsonl(path: Path, keep: Callable[[dict[str, Any]], bool]) -> None:
    """Rewrite ``path`` with its complete records for which ``keep`` holds, each line as
    it was: a temporary file, fsynced, renamed over it, the directory fsynced."""
    tmp = path.with_name(f".{path.name}.tmp")
    with (
        open(path, encoding="utf-8", errors="replace") as src,
        open(tmp, "w", encoding="utf-8") as dst,
    ):
        for line in src:
            record = _record(line)
            if record is not None and keep(record):
                dst.write(line)
        dst.flush()
        os.fsync(dst.fileno())
    tmp.replace(path)
    fsync_dir(path.parent)


STAGES_MAX_BYTES = 1 << 20
"""Size of a stages.json, at most (a run's is under 2 KB)."""


def read_stages(run_path: Path) -> dict[str, Any]:
    """The run's stages.json (what the finished stages produced; pipeline.py), ``{}``
    when there is none. ConfigError in one line when it is not what a run writes (cut
    short, edited): resuming from it would guess."""
    path = run_path / "stages.json"
    if not path.exists():
        return {}
    try:
        with open(path, "rb") as f:
            data = f.read(STAGES_MAX_BYTES + 1)
        if len(data) > STAGES_MAX_BYTES:
            raise ValueError(f"over {STAGES_MAX_BYTES} bytes")
        state = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        problem = getattr(e, "strerror", None) or "not valid JSON"
        raise ConfigError(
            f"resume=true: {path} cannot be read ({problem}); the run cannot be resumed "
            "safely: start it again with resume=false (the run moves to .prev) or another name="
        ) from None
    fields = {"checkpoint": str, "train_rows": str, "done": dict, "inputs": dict, "teachers": dict}
    bad = (
        [k for k in state if k not in fields]
        if isinstance(state, dict)
        else ["(not a JSON object)"]
    )
    if not bad:
        bad = [
            k
            for k, kind in fields.items()
            if state.get(k) is not None and not isinstance(state[k], kind)
        ]
    if not bad:
        values = {
            "done": (int, float),
            "inputs": (str, type(None)),
            "teachers": (str,),
        }
        bad = [
            f"{k}.{name}"
            for k, kinds in values.items()
            for name, v in state.get(k, {}).items()
            if not isinstance(v, kinds) or isinstance(v, bool)
        ]
    if bad:
        raise ConfigError(
            f"resume=true: {path} is not a stages record (field {bad[0]}); start the run "
            "again with resume=false (the run moves to .prev) or another name="
        )
    return dict(state)
