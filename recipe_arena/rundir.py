"""The run directory: resolved config, metrics.jsonl, rollouts.jsonl, checkpoints, reports.

Metric names are stable and namespaced (``reward/…``, ``loss/…``, ``staleness/…``,
``length/…``, ``throughput/…``, ``eval/…``); reports and benchmarks read only these
files. Every line is flushed and fsynced so a crash loses at most the line in flight.

``RunLock`` holds a run directory for one run at a time (an flock on a file beside it,
taken before the directory is touched and held until the run ends); a second run of
the same name exits 2 naming the holder. On resume, ``truncate_logs`` cuts what the
resumed stage logged after its checkpoint, as the ledger is cut, so no step is logged
twice.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import yaml

from recipe_arena.compose import ConfigError
from recipe_arena.config import RunConfig


class RunDirBusy(ConfigError):
    """Another run holds the run directory; the message names it."""


class RunLock:
    """An exclusive lock on ``out_dir/.<name>.lock`` for the life of a run."""

    def __init__(self, out_dir: str | Path, name: str) -> None:
        self.run_path = Path(out_dir) / name
        self.path = Path(out_dir) / f".{name}.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
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
        self.path = Path(root) if root is not None else Path(cfg.out_dir) / cfg.run_name
        self.path.mkdir(parents=True, exist_ok=True)
        self.checkpoints = self.path / "checkpoints"
        self.checkpoints.mkdir(exist_ok=True)
        self._wandb: Any = None
        (self.path / "config.yaml").write_text(
            yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
        )
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
        """Drop ``stage``'s records of steps after ``step`` from metrics.jsonl and
        rollouts.jsonl (atomically rewritten; a torn last line goes too)."""
        for path in (self.metrics_path, self.path / "rollouts.jsonl"):
            if not path.exists():
                continue
            keep = [
                r
                for r in read_metrics(path)
                if not (r.get("stage") == stage and int(r.get("step", 0)) > step)
            ]
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                f.writelines(json.dumps(r) + "\n" for r in keep)
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(path)

    def write_json(self, name: str, obj: Any) -> Path:
        p = self.path / name
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True))
        tmp.replace(p)
        return p

    def close(self) -> None:
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None


def _append_jsonl(path: Path, record: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if p.is_dir():
        p = p / "metrics.jsonl"
    out = []
    with open(p, encoding="utf-8") as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a torn last line after a crash
    return out
