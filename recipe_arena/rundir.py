"""The run directory: resolved config, metrics.jsonl, rollouts.jsonl, checkpoints, reports.

Metric names are stable and namespaced (``reward/…``, ``loss/…``, ``staleness/…``,
``length/…``, ``throughput/…``, ``eval/…``); reports and benchmarks read only these
files. Every line is flushed and fsynced so a crash loses at most the line in flight.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import yaml

from recipe_arena.config import RunConfig


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
