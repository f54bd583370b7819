"""Runs a recipe's stages in order and writes the run directory.

Each stage reads the current checkpoint and writes a new one; what every finished stage
produced is recorded in ``stages.json``, so ``resume=true`` skips finished stages and
continues an interrupted one from its own checkpoints.
"""

from __future__ import annotations

import importlib
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.console import Console

from recipe_arena.compose import ConfigError
from recipe_arena.config import RunConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rundir import RunDir, RunDirBusy, RunLock, read_stages, run_dir_path
from recipe_arena.stage_registry import STAGES as STAGE_REGISTRY

console = Console(stderr=True)


@dataclass
class PipelineState:
    """What the finished stages produced; persisted as stages.json."""

    checkpoint: str | None = None
    train_rows: str | None = None
    """Path of the (possibly filtered) training rows, JSONL."""
    done: dict[str, float] = field(default_factory=dict)
    """stage -> seconds it took."""
    inputs: dict[str, str | None] = field(default_factory=dict)
    """stage -> the checkpoint it started from."""
    teachers: dict[str, str] = field(default_factory=dict)
    """route -> checkpoint of the specialists stage's teachers (distill.teachers)."""

    def save(self, run: RunDir) -> None:
        run.write_json("stages.json", asdict(self))

    @classmethod
    def load(cls, run: RunDir) -> PipelineState:
        """The saved state (``rundir.read_stages``: ConfigError when it is damaged)."""
        return cls(**read_stages(run.path))


@dataclass
class World:
    train: list[PromptRow]
    heldout: list[PromptRow]


StageFn = Callable[[RunConfig, RunDir, World, PipelineState], None]


def _base(cfg: RunConfig, run: RunDir, world: World, state: PipelineState) -> None:
    from recipe_arena.rewards.micro_judge import hurry_background
    from recipe_arena.stages.base import train_base

    state.checkpoint = str(train_base(cfg, run))
    hurry_background()  # the judge trained in the idle time so far (train_in_background)


def _sft(cfg: RunConfig, run: RunDir, world: World, state: PipelineState) -> None:
    from recipe_arena.stages.sft import run_sft

    state.checkpoint = str(run_sft(cfg, run, _require_checkpoint(state, "sft")))


def _dpo(cfg: RunConfig, run: RunDir, world: World, state: PipelineState) -> None:
    from recipe_arena.stages.dpo import run_dpo

    init = _require_checkpoint(state, "dpo")
    weak = cfg.dpo.rejected_checkpoint or state.inputs.get("sft")
    if weak is None:  # config_checks.check_stages stops this before any work
        raise RuntimeError(
            "stage 'dpo' needs a weak model: put 'sft' before it or set dpo.rejected_checkpoint"
        )
    state.checkpoint = str(run_dpo(cfg, run, init, Path(weak)))


def _prompt_filter(cfg: RunConfig, run: RunDir, world: World, state: PipelineState) -> None:
    from recipe_arena.data.schema import write_rows
    from recipe_arena.stages.prompt_filter import run_prompt_filter

    if not cfg.prompt_filter.enabled:
        return
    rows = run_prompt_filter(
        cfg, run, _require_checkpoint(state, "prompt_filter"), _train_rows(world, state)
    )
    path = run.path / "train_filtered.jsonl"
    write_rows(path, rows)
    state.train_rows = str(path)


def _audit(cfg: RunConfig, run: RunDir, world: World, state: PipelineState) -> None:
    """Probe every training task's verifier with known hacks (DeepSeek); with
    rewards.audit_quarantine, train only on tasks whose verifier accepted none. The
    report is cached (``rewards.audit.cached_audit``): runs that differ only in
    whether they quarantine probe once."""
    import torch

    from recipe_arena.data.schema import write_rows
    from recipe_arena.rewards.audit import REPORT_FILE, apply_quarantine, cached_audit

    rows = _train_rows(world, state)
    by_domain: dict[str, list[PromptRow]] = {}
    for row in rows:
        by_domain.setdefault(f"{cfg.world.name}/{row.domain}/train", []).append(row)
    threads = torch.get_num_threads()
    report, reused = cached_audit(by_domain, cfg.rewards, cfg.world.cache_dir, threads)
    (run.path / REPORT_FILE).write_text(report.to_json())
    if reused:
        console.print("audit: the report of these tasks and verifiers was in the model cache")
    console.print(report.table())
    kept = apply_quarantine(rows, report, cfg.rewards)
    run.log(
        "audit", 0, {"audit/probed_tasks": len(rows), "audit/quarantined": len(rows) - len(kept)}
    )
    path = run.path / "train_audited.jsonl"
    write_rows(path, kept)
    state.train_rows = str(path)


def _train_rows(world: World, state: PipelineState) -> list[PromptRow]:
    from recipe_arena.data.schema import read_rows

    return read_rows(state.train_rows) if state.train_rows else world.train


def _rlvr(cfg: RunConfig, run: RunDir, world: World, state: PipelineState) -> None:
    from recipe_arena.stages.rlvr import run_rlvr

    start = _require_checkpoint(state, "rlvr")
    final = run_rlvr(cfg, run, start, _train_rows(world, state), world.heldout)
    state.checkpoint = str(final)


def _specialists(cfg: RunConfig, run: RunDir, world: World, state: PipelineState) -> None:
    """RL specialists per (domain, effort); the current checkpoint stays the student."""
    from recipe_arena.stages.distill import run_specialists

    start = _require_checkpoint(state, "specialists")
    state.teachers = run_specialists(cfg, run, start, _train_rows(world, state), world.heldout)


def _mopd(cfg: RunConfig, run: RunDir, world: World, state: PipelineState) -> None:
    """The current checkpoint learns from the specialists (or distill.teachers)."""
    _distill(cfg, run, world, state, "mopd")


def _opd(cfg: RunConfig, run: RunDir, world: World, state: PipelineState) -> None:
    """The RL stage's starting checkpoint learns from its output (or distill.teachers)."""
    _distill(cfg, run, world, state, "opd")


def _distill(cfg: RunConfig, run: RunDir, world: World, state: PipelineState, stage: str) -> None:
    from recipe_arena.stages.distill import roles, run_distill

    current = str(_require_checkpoint(state, stage))
    student, teachers = roles(cfg, stage, current, state.teachers, state.inputs.get("rlvr"))
    rows = _train_rows(world, state)
    final = run_distill(cfg, run, Path(student), teachers, rows, world.heldout, stage=stage)
    state.checkpoint = str(final)


def _eval(cfg: RunConfig, run: RunDir, world: World, state: PipelineState) -> None:
    from recipe_arena.eval.final import eval_rows, evaluate_checkpoint
    from recipe_arena.eval.scores import log_eval_scores

    evaluation = evaluate_checkpoint(cfg, Path(_require_checkpoint(state, "eval")), world.heldout)
    log_eval_scores(run.path, "eval", 0, eval_rows(cfg, world.heldout), evaluation.scores)
    run.write_json("eval.json", evaluation.metrics)
    run.log("eval", 0, evaluation.metrics)


RESUMES_FROM_CHECKPOINTS = ("rlvr", "specialists", "mopd", "opd")
"""Stages that continue from their own latest checkpoint on resume and cut their logs
back to it (``stages.rlvr.run_rlvr``). Every other stage starts again from its start,
so the pipeline first drops every record it logged (under its own name) in the run
that was interrupted: each step is then logged once."""


STAGES: dict[str, StageFn] = {
    name: getattr(importlib.import_module(ref.partition(":")[0]), ref.partition(":")[2])
    for name, ref in STAGE_REGISTRY.items()
}
"""Stage name -> its runner (``stage_registry``)."""


def _trains_base_model(cfg: RunConfig, state: PipelineState) -> bool:
    """Whether this run trains the micro base model (a machine that has not cached it)
    and scores chat with the micro judge: then the judge, if not cached either, trains in
    the background from the start (``rewards.micro_judge.train_in_background``)."""
    if cfg.rewards.judge_model != "micro" or cfg.world.checkpoint is not None:
        return False
    if "base" not in cfg.pipeline.stages or "base" in state.done:
        return False
    from recipe_arena.cache import entry_ready
    from recipe_arena.stages.base import base_cache_entry

    return not entry_ready(base_cache_entry(cfg))


JUDGE_FREE_STAGES = ("base", "sft", "dpo", "prompt_filter")
"""Stages that may run while held-out chat scores wait for the micro judge
(``eval.deferred``): they use the judge only in a held-out evaluation, which defers its
chat scores, or not at all, as ``_needs_judge`` checks for the run's settings. Every
other stage first has the waiting scores completed: it may score chat itself, and the
judge then sees them before anything of its own, in the order a waiting run has it."""


def _needs_judge(cfg: RunConfig, stage: str) -> bool:
    """Whether ``stage`` may score chat with the judge outside a held-out evaluation:
    any stage not in ``JUDGE_FREE_STAGES``; DPO when its validation rows hold chat (the
    pairs' contrast leaves chat out); the prompt filter when it filters chat prompts
    (all rows without ``prompt_filter.max_prompts``, else those of domains RL samples)."""
    if stage not in JUDGE_FREE_STAGES:
        return True
    if stage == "dpo":
        return "chat" in cfg.dpo.validation_prompts
    if stage == "prompt_filter":
        pf = cfg.prompt_filter
        return pf.enabled and (pf.max_prompts is None or cfg.rl.domain_weights.get("chat", 0) > 0)
    return False


def _require_checkpoint(state: PipelineState, stage: str) -> Path:
    if state.checkpoint is None:
        raise RuntimeError(
            f"stage '{stage}' needs a checkpoint from an earlier stage; "
            "set world.checkpoint or put 'base' first in pipeline.stages"
        )
    return Path(state.checkpoint)


def _load_world(cfg: RunConfig) -> World:
    from recipe_arena.data.worlds import build_world

    splits = build_world(cfg.world)
    flat = {
        split: [r for rows in by_domain.values() for r in rows]
        for split, by_domain in splits.items()
    }
    return World(train=flat["train"], heldout=flat["heldout"])


def _prepare_dir(cfg: RunConfig) -> Path:
    """The run's directory, directly inside out_dir (``rundir.run_dir_path``). Call with
    the run's RunLock held.

    Not resuming, an earlier run there moves to ``<name>.prev``, replacing the one
    before it. ``<name>.prev`` may itself be a run's name, so its lock is taken first:
    when a live run holds it, this run exits 2 and nothing moves. A symbolic link at
    either place is moved or removed as a link, never followed. Resuming, the directory
    must be a real folder with no symbolic link anywhere in it, so that everything the
    run writes stays inside out_dir."""
    path = run_dir_path(cfg.out_dir, cfg.run_name)
    if cfg.resume:
        _check_no_links(path)
        return path
    if not (path.exists() or path.is_symlink()):
        return path
    previous = path.with_name(path.name + ".prev")
    try:
        with RunLock(path.parent, previous.name):
            if previous.is_symlink() or previous.is_file():
                previous.unlink()
            elif previous.exists():
                shutil.rmtree(previous)
            path.rename(previous)
    except RunDirBusy:
        raise RunDirBusy(
            f"cannot move the earlier run {path} aside: {previous} is in use by a live run; "
            "wait for it to end, choose another name= or resume=true"
        ) from None
    console.print(f"[yellow]moved the previous run to {previous} (resume=true continues a run)")
    return path


def _check_no_links(path: Path) -> None:
    """ConfigError naming the first symbolic link at ``path`` or under it that leads
    out of it (a resumed run would write through it); links within the run directory
    (W&B's ``latest-run``) are fine."""
    if path.is_symlink():
        raise ConfigError(
            f"resume=true: {path} is a symbolic link; a run directory must be a folder "
            "inside out_dir"
        )
    if not path.exists():
        return
    root = os.path.realpath(path)
    for parent, dirs, files in os.walk(path):
        for name in dirs + files:
            link = os.path.join(parent, name)
            if os.path.islink(link) and os.path.commonpath([root, os.path.realpath(link)]) != root:
                raise ConfigError(
                    f"resume=true: {link} is a symbolic link out of the run directory; a "
                    "resumed run writes only inside its own folder (remove the link)"
                )


def run_pipeline(cfg: RunConfig) -> Path:
    """Run every stage of ``cfg.pipeline.stages``; return the run directory. A config
    this machine cannot run raises ConfigError before the run directory is touched."""
    from recipe_arena.config_checks import check_runnable
    from recipe_arena.eval.report import write_report

    check_runnable(cfg)
    with RunLock(cfg.out_dir, cfg.run_name):  # held until the report is written
        return _run_locked(cfg, write_report)


def _reuse_prefix(cfg: RunConfig, run: RunDir, state: PipelineState) -> tuple[str, Path] | None:
    """With ``pipeline.reuse_prefix``, fill ``state`` and the run directory from the
    stored prefix of this run's settings when there is one (``prefix_cache``), and
    return None; else (stage, entry): the first stage after the prefix, before which
    the prefix is to be stored. None too when reuse is off, the pipeline has no
    prefix, or a resumed run finished part of it."""
    from recipe_arena import prefix_cache

    stages = prefix_cache.prefix_stages(cfg.pipeline.stages)
    if not cfg.pipeline.reuse_prefix or not stages or any(s in state.done for s in stages):
        return None
    import torch

    entry = prefix_cache.prefix_entry(cfg, stages, torch.get_num_threads())
    restored = prefix_cache.restore(entry, run.path)
    if restored is None:
        return cfg.pipeline.stages[len(stages)], entry
    for key, value in restored.items():
        setattr(state, key, value)
    state.save(run)
    console.print(f"stages {', '.join(stages)}: reused from {entry} (pipeline.reuse_prefix)")
    return None


def _run_locked(cfg: RunConfig, write_report: Callable[[Path], object]) -> Path:
    run = RunDir(cfg, _prepare_dir(cfg))
    state = PipelineState.load(run) if cfg.resume else PipelineState()
    world = _load_world(cfg)
    if state.checkpoint is None:
        from recipe_arena.data.worlds import start_checkpoint

        state.checkpoint = start_checkpoint(cfg.world)
    from recipe_arena.eval import deferred
    from recipe_arena.rewards import micro_judge

    ok = False
    try:
        if _trains_base_model(cfg, state):
            micro_judge.train_in_background(cfg.rewards.micro_judge)
        from recipe_arena.prefix_cache import prefix_config, prefix_stages
        from recipe_arena.rewards.scorer import forget_judged

        prefix, prefix_cfg = prefix_stages(cfg.pipeline.stages), prefix_config(cfg)
        store_prefix = _reuse_prefix(prefix_cfg, run, state)
        after_prefix = cfg.pipeline.stages[len(prefix) :][:1] if prefix else []
        for name in cfg.pipeline.stages:
            if store_prefix is not None and name == store_prefix[0]:
                from recipe_arena.prefix_cache import store

                deferred.complete_pending(prefix_cfg, run)  # the prefix's own scores
                store(store_prefix[1], run.path, asdict(state))
            if name in after_prefix:
                # on as a run that read the prefix would: no verdict of its stages remembered
                forget_judged()
            if name in state.done:
                console.print(f"[dim]stage {name}: done earlier, skipped")
                continue
            console.rule(f"stage {name}")
            if cfg.resume and name not in RESUMES_FROM_CHECKPOINTS:
                run.drop_records(lambda r, stage=name: r.get("stage") == stage)
                deferred.drop_pending(run, name)
            t0 = time.perf_counter()
            if not deferred.judge_training(cfg) or _needs_judge(cfg, name):
                # the evaluations kept are the prefix's (base, SFT, DPO): its config scores them
                deferred.complete_pending(prefix_cfg, run)  # waits for the judge if it trains
            state.inputs[name] = state.checkpoint
            STAGES[name](prefix_cfg if name in prefix else cfg, run, world, state)
            state.done[name] = round(time.perf_counter() - t0, 2)
            state.save(run)
            console.print(f"stage {name}: {state.done[name]:.1f} s")
        deferred.complete_pending(prefix_cfg, run)
        ok = True
    finally:
        micro_judge.finish_background(ok)
        write_report(run.path)
        run.close()
    return run.path
