"""The plan file of `recipe-arena compare` (its arms, seeds and common overrides) and
what the comparison reads from a run directory: written by ``compare``, read by the
comparison report (``eval.comparison``) without importing the runner.
"""

from __future__ import annotations

import json
import re
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from recipe_arena.yaml_bounds import YamlBoundsError, load_bounded

PLAN_FILE = "comparison.json"
NAME_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.=+-]{0,127}"
"""What a run's ``name`` (and so an arm's, which prefixes its runs' names) may be: one
folder name, never a path, so a run directory is always inside its output folder."""
RUN_KEYS = ("seed", "name", "out_dir", "resume")
"""Settings that differ between runs by construction and never between arms."""
LATER_DEFAULTS: dict[str, Any] = {
    "eval.dtype": None,
    "dpo.select": "validation",
    "rewards.judge_markers": "special",
}
"""Settings added after runs were keyed (``section.field``: the value under which the
earlier runs were made, the default but for ``rewards.judge_markers``, whose default
became the safer 'text'): left out of a run's settings digest
(``study.settings_digest``), its stored prefix's key (``prefix_cache``) and the
comparison's view of its config while at this value, so the keys of earlier runs still
name them and their config.yaml, which lacks the field, reads as the same settings. A
study that reruns such runs pins the setting at this value in its ``common``."""


@dataclass(frozen=True)
class Arm:
    name: str
    overrides: list[str]
    seeds: list[int]
    control: bool = False
    """The A/A control: the baseline's settings on a second seed set."""


@dataclass
class Plan:
    recipe: str
    axis: str | None
    arms: list[Arm]
    baseline: str
    common: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Plan:
        """The plan as ``to_json`` wrote it; ValueError for an arm whose name is not a
        run name or whose seeds are not integers: a hand-edited ``../x`` would send the
        report to read runs outside the comparison's folder."""
        arms = [Arm(**a) for a in raw["arms"]]
        for arm in arms:
            if not isinstance(arm.name, str) or not re.fullmatch(NAME_PATTERN, arm.name):
                raise ValueError(f"arm name {arm.name!r} is not a run name")
            ints = isinstance(arm.seeds, list) and all(
                isinstance(s, int) and not isinstance(s, bool) for s in arm.seeds
            )
            if not ints:
                raise ValueError(f"arm {arm.name!r}: seeds {arm.seeds!r} are not integers")
        return cls(raw["recipe"], raw["axis"], arms, raw["baseline"], list(raw["common"]))

    def runs(self) -> list[tuple[Arm, int]]:
        """(arm, seed) of every run, seed-major so that early results come in pairs."""
        width = max(len(a.seeds) for a in self.arms)
        return [(a, a.seeds[i]) for i in range(width) for a in self.arms if i < len(a.seeds)]


def flatten(raw: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as {"a.b.c": value}; lists stay values."""
    if isinstance(raw, dict):
        out: dict[str, Any] = {}
        for k, v in raw.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: raw}


def without_later_defaults(flat: dict[str, Any]) -> dict[str, Any]:
    """``flat`` (a ``flatten``ed config) less each ``LATER_DEFAULTS`` key at its value."""
    return {k: v for k, v in flat.items() if not (k in LATER_DEFAULTS and LATER_DEFAULTS[k] == v)}


def keyed_section(section: str, dump: dict[str, Any]) -> dict[str, Any]:
    """``dump``, the settings of the config section ``section``, less each of its
    ``LATER_DEFAULTS`` fields at its value: a cache key made from it (an evaluation's,
    an audit report's) still names what was stored before the field existed."""
    flat = without_later_defaults({f"{section}.{k}": v for k, v in dump.items()})
    return {k.partition(".")[2]: v for k, v in flat.items()}


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML was built with it (the same documents, parsed in C:
a study report reads each of a few hundred run configs twice), else the Python one."""


class ArtifactError(ValueError):
    """An artifact a report reads (a run's config.yaml, stages.json or logs, a
    comparison.json, a study.json) that is there but cannot be read as written: cut
    short, not JSON or YAML, or a record lacking a field. The message names the file.
    A report stops on it rather than compute its figures without the damaged part."""


MAX_JSON_BYTES = 16 << 20
"""Size of one JSON artifact (``study.json``, ``comparison.json``, ``stages.json``), at
most: the committed ones are under 11 KB; a report reads a file whole."""


def read_json(path: Path) -> Any:
    """The JSON document at ``path``; ArtifactError naming it when it is not one, is not
    a regular file (a link to ``/dev/zero`` was read until memory ran out) or is larger
    than ``MAX_JSON_BYTES``."""
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise ArtifactError(f"{path}: not a JSON document (not a regular file)")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_JSON_BYTES + 1)
        if len(data) > MAX_JSON_BYTES:
            raise ValueError(f"larger than {MAX_JSON_BYTES} bytes")
        return json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{path}: not a JSON document ({e})") from None


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """The run's resolved config.yaml as a plain mapping (yaml's safe loading, within
    ``yaml_bounds``' bounds: a run folder handed over may hold anything); ArtifactError
    when it is not one with the run's pipeline."""
    path = run_dir / "config.yaml"
    try:
        raw = load_bounded(path, _YAML_LOADER)
    except YamlBoundsError as e:
        raise ArtifactError(f"{path}: not a YAML config ({e})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("pipeline"), dict):
        raise ArtifactError(f"{path}: not a run's config (no pipeline section)")
    return raw


def run_finished(run_dir: Path) -> bool:
    """Every stage of the run's pipeline is recorded as done in stages.json; False while
    either file is absent or being written (a run in progress)."""
    try:
        done = json.loads((run_dir / "stages.json").read_text()).get("done", {})
        cfg = read_run_config(run_dir)
    except (OSError, ValueError, AttributeError):
        return False
    return bool(set(cfg["pipeline"].get("stages") or ()) <= set(done))


def scores_gone(run_dir: Path) -> bool:
    """The run finished but its per-question scores (``eval_scores.jsonl``, or the
    ``.gz`` an export keeps) are not there: a report cannot count it, and resuming does
    not bring them back, every stage being done. Deleted by hand, or a partial copy."""
    return run_finished(run_dir) and not any(
        (run_dir / name).exists() for name in ("eval_scores.jsonl", "eval_scores.jsonl.gz")
    )
