"""Reuse of a run's stages before RL (``pipeline.reuse_prefix``): the study's arms share them.

Arms of a comparison differ in what RL does (the stale-data correction, the advantage,
the loss) and start from the same SFT/DPO/prompt-filter pipeline of their seed. Those
stages take most of a micro run's time (SFT, DPO and the prompt filter are about 230 s
of a 400 s default run on 2 cores), so a study of 120 runs repeats hours of identical
work. With ``pipeline.reuse_prefix=true`` the first run that finishes a *prefix* (the
stages before the first one that trains from rewards or teachers, see
``prefix_stages``) stores what they produced in the model cache, and every later run
whose prefix has the same settings copies it into its own run directory instead of
training again: the checkpoints, the training rows, every file the stages wrote, and
their records in metrics.jsonl and eval_scores.jsonl. Its stages.json then reads as if
it had run them (with the first run's seconds).

The key is everything the prefix could read: the stage list, the whole resolved
config less ``RL_ONLY`` (settings only the stages after the prefix read), the seed,
the torch thread count (which changes the floating-point sums), and the cache's code
version. Leaving a setting in the key when it does not matter only costs a second
build; leaving one out that does would hand a run another run's model, so the list is
short and each entry says why it is safe. On one machine type the reused prefix is
bitwise the one the run would have trained (the stages are deterministic at a seed and
thread count), which tests/test_prefix_cache.py checks.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from recipe_arena.cache import (
    VERDICTS_VERSION,
    audit_version,
    build_cached,
    cache_key,
    cache_root,
    entry_ready,
)
from recipe_arena.comparison_plan import LATER_DEFAULTS
from recipe_arena.config import RunConfig

PREFIX_ENDS = ("rlvr", "specialists", "mopd", "opd")
"""Stages that train the policy from rewards or teachers: a prefix ends before the first."""

RL_ONLY = (
    "name",  # where the run is written, not what it computes
    "out_dir",
    "resume",
    "wandb",  # logging only
    "advantage",  # read by the RL learner (wiring.make_learner)
    "staleness",  # RL learner and actor hooks
    "length_control",  # RL rewards and batches
    "policy_loss",  # RL learner
    "loss",  # RL learner
    "spurious_reward",  # RL rewards (the prompt filter and evaluation stay exact)
    "specialists",  # the specialists stage, itself an end of the prefix
    "distill",  # the MOPD/OPD stages, ends of the prefix
    "rewards.label_flip",  # training rewards only: the filter and evaluation score exactly
    "engine.keep_kv_on_update",  # in-flight updates happen in RL alone
    "pipeline.stages",  # the prefix's own stages are part of the key instead
    "pipeline.prefix_seed",  # prefix_config has made it the seed
)
"""Settings (top-level sections or ``section.field``) left out of the prefix key."""

RL_KEPT = ("domain_weights", "max_new_tokens")
"""The ``rl`` fields the prefix reads (the prompt filter: domain_weights picks its
prompts, max_new_tokens caps its samples); every other ``rl`` field is left out."""


def prefix_stages(stages: list[str]) -> list[str]:
    """The stages before the first of ``PREFIX_ENDS``; [] when the pipeline has none
    (nothing after them to share them)."""
    for i, name in enumerate(stages):
        if name in PREFIX_ENDS:
            return stages[:i]
    return []


def prefix_config(cfg: RunConfig) -> RunConfig:
    """``cfg`` as the prefix's stages read it: its seed is ``pipeline.prefix_seed`` when
    that is set."""
    seed = cfg.pipeline.prefix_seed
    return cfg if seed is None else cfg.model_copy(update={"seed": seed})


def prefix_settings(cfg: RunConfig) -> dict[str, Any]:
    """The resolved config as the prefix can read it (less ``RL_ONLY``, ``rl`` cut to
    ``RL_KEPT``, and each setting of ``comparison_plan.LATER_DEFAULTS`` at its value, so
    prefixes stored before it existed keep their keys)."""
    dump = cfg.model_dump(mode="json")
    dump["rl"] = {f: dump["rl"][f] for f in RL_KEPT}
    for path in RL_ONLY:
        section, _, field = path.partition(".")
        if field:
            del dump[section][field]
        else:
            del dump[section]
    for path, default in LATER_DEFAULTS.items():
        section, _, field = path.partition(".")
        inner = dump.get(section, {})
        if field in inner and inner[field] == default:
            del dump[section][field]
    return dump


def prefix_entry(cfg: RunConfig, stages: list[str], threads: int) -> Path:
    """The cache entry of ``stages`` run under ``cfg`` (``prefix_config``'s) with
    ``threads`` torch threads."""
    parts: dict[str, Any] = {
        "stage": "prefix",
        "verdicts": VERDICTS_VERSION,
        "stages": stages,
        "settings": prefix_settings(cfg),
        "threads": threads,
    }
    if "audit" in stages:  # what it quarantines follows its probes
        parts["audit"] = audit_version(cfg.rewards.chat)
    key = cache_key(parts)
    return cache_root(cfg.world.cache_dir) / "prefix" / key


_RUN = "{run}"
"""Stands for the run directory in a stored stages.json."""
_STATE = "prefix_state.json"
_SKIPPED = {
    "config.yaml",
    "stages.json",
    "report.md",
    "report.html",
    "wandb",
    "pending_scores.json",  # completed before a prefix is stored; never carried over
}
"""Run-directory entries not stored: the run writes its own."""


def _relocate(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return new + value[len(old) :] if value == old or value.startswith(old + "/") else value
    if isinstance(value, dict):
        return {k: _relocate(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_relocate(v, old, new) for v in value]
    return value


def store(entry: Path, run_path: Path, state: dict[str, Any]) -> Path:
    """Store the finished prefix of the run at ``run_path`` (its directory as it is now
    and its pipeline state ``state``) as ``entry``; returns the entry."""

    def build(tmp: Path) -> None:
        for item in run_path.iterdir():
            if item.name in _SKIPPED or item.name.startswith((".", "lock")):
                continue
            if item.is_dir():
                shutil.copytree(item, tmp / item.name, symlinks=False)
            elif item.is_file():
                shutil.copy2(item, tmp / item.name)
        stored = _relocate(state, str(run_path), _RUN)
        (tmp / _STATE).write_text(json.dumps(stored, indent=2, sort_keys=True))

    return build_cached(entry, build)


def restore(entry: Path, run_path: Path) -> dict[str, Any] | None:
    """Copy a stored prefix into ``run_path`` and return its pipeline state, relocated
    to ``run_path``; None when ``entry`` is not built. Log files are appended to the
    run's own (which are empty at a prefix's start), every other file copied."""
    if not entry_ready(entry):
        return None
    try:  # verifies the seal; a damaged entry is moved aside (and stored again later)
        build_cached(entry, _never_built)
    except _Damaged:
        return None
    for item in entry.iterdir():
        if item.name in (_STATE, ".sealed.json"):
            continue
        dest = run_path / item.name
        if item.is_dir():
            shutil.copytree(item, dest, dirs_exist_ok=True)
        elif item.suffix == ".jsonl" and dest.exists():
            with open(dest, "a", encoding="utf-8") as f:
                f.write(item.read_text(encoding="utf-8"))
        else:
            shutil.copy2(item, dest)
    state: dict[str, Any] = _relocate(json.loads((entry / _STATE).read_text()), _RUN, str(run_path))
    return state


class _Damaged(Exception):
    """A stored prefix failed its seal (moved aside by ``build_cached``)."""


def _never_built(tmp: Path) -> None:
    """A damaged entry is not rebuilt here: the run trains its prefix and stores it."""
    raise _Damaged
