"""Start-up checks of a validated RunConfig against this machine and across fields.

pydantic (config.py) checks each value alone: types, ranges, finiteness, names. What it
cannot see is checked here, before any work and before a run directory exists: paths
that must exist or be writable (all path checks live in ``check_paths``), the device,
stages that need a checkpoint nobody provides, a prompt filter that can keep nothing,
noisy verifiers under the spurious-reward control, and a code sandbox weaker than allowed. Each failure raises ConfigError with one line
naming the key, the value and what would work; the CLI exits 2.
"""

from __future__ import annotations

import tempfile
import urllib.parse
from pathlib import Path

from recipe_arena.compose import ConfigError
from recipe_arena.config import RunConfig
from recipe_arena.config_rewards import RewardsConfig

NEEDS_CHECKPOINT = ("sft", "dpo", "prompt_filter", "rlvr", "specialists", "mopd", "opd", "eval")


def check_runnable(cfg: RunConfig) -> None:
    """Everything a run needs from this machine; raises ConfigError (one line)."""
    for part, own in (
        ("engine", "engine.device"),
        ("learner", "rl.device"),
        ("sft", "sft.device"),
        ("dpo", "dpo.device"),
    ):
        device = cfg.device_for(part)  # type: ignore[arg-type]
        # name the key the value came from: the part's own, else the run's
        key = "device" if cfg.device is not None and device == cfg.device else own
        check_device(device, key)
    check_paths(cfg)
    check_sandbox(cfg.rewards)
    check_stages(cfg)
    check_prompt_filter(cfg)
    check_label_flip(cfg)


def check_device(device: str, key: str = "engine.device") -> None:
    """ConfigError (one line, naming ``key``) unless ``device`` exists on this machine."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise ConfigError(
            f"{key}={device!r} is not a torch device; use cpu, cuda or cuda:N"
        ) from None
    if dev.type == "cpu":
        return
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (dev.index or 0) < n:
            return
        raise ConfigError(f"{key}={device!r}: this machine has {n} CUDA device(s); use cpu")
    if dev.type == "mps" and torch.backends.mps.is_available():
        return
    raise ConfigError(f"{key}={device!r} is not available here; use cpu or cuda")


def _writable_dir(key: str, value: str) -> None:
    """Create ``value`` if needed and write a file in it; ConfigError if that fails."""
    try:
        Path(value).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=value):
            pass
    except OSError as e:
        raise ConfigError(f"{key}={value!r} is not a writable folder ({e.strerror})") from None


def _checkpoint_dir(key: str, value: str) -> None:
    p = Path(value)
    if not p.is_dir():
        raise ConfigError(f"{key}={value!r}: no such checkpoint directory")
    if not (p / "config.json").is_file():
        raise ConfigError(f"{key}={value!r}: not a checkpoint (no config.json in it)")


def check_judge(rewards: RewardsConfig) -> None:
    """rewards.judge_model: 'micro', 'smol', an http(s) URL with a host, or a checkpoint
    folder."""
    name = rewards.judge_model
    if name in ("micro", "smol"):
        return
    if name.startswith(("http://", "https://")):
        if not urllib.parse.urlsplit(name).hostname:
            raise ConfigError(f"rewards.judge_model={name!r}: the URL has no host")
        return
    if not Path(name).exists():
        raise ConfigError(
            f"rewards.judge_model={name!r}: not 'micro', 'smol', an http(s) URL or an existing checkpoint"
        )
    _checkpoint_dir("rewards.judge_model", name)


def check_paths(cfg: RunConfig) -> None:
    """Every path of the config: the ones read must exist, the ones written must be
    writable."""
    if cfg.world.checkpoint is not None:
        _checkpoint_dir("world.checkpoint", cfg.world.checkpoint)
    if "dpo" in cfg.pipeline.stages and cfg.dpo.rejected_checkpoint is not None:
        _checkpoint_dir("dpo.rejected_checkpoint", cfg.dpo.rejected_checkpoint)
    if {"mopd", "opd"} & set(cfg.pipeline.stages):
        for route, path in cfg.distill.teachers.items():
            _checkpoint_dir(f"distill.teachers.{route}", path)
    check_judge(cfg.rewards)
    if cfg.world.cache_dir is not None:
        _writable_dir("world.cache_dir", cfg.world.cache_dir)
    _writable_dir("out_dir", cfg.out_dir)


def check_stages(cfg: RunConfig) -> None:
    """Every stage's input exists before any work: a stage that needs a checkpoint comes
    after 'base', or the world has a start checkpoint (world.checkpoint, smol's packaged
    model), or a resumed run's stages.json shows an earlier stage made one or this stage
    finished; DPO's weak (rejected) model is dpo.rejected_checkpoint or the checkpoint
    the 'sft' stage starts from, so 'sft' must come before 'dpo' without it."""
    from recipe_arena.rundir import read_stages, run_dir_path

    state = read_stages(run_dir_path(cfg.out_dir, cfg.run_name)) if cfg.resume else {}
    done, inputs = state.get("done", {}), state.get("inputs", {})
    has_model = state.get("checkpoint") is not None or _has_start_checkpoint(cfg)
    stages = cfg.pipeline.stages
    for i, stage in enumerate(stages):
        disabled = stage == "prompt_filter" and not cfg.prompt_filter.enabled
        if stage in NEEDS_CHECKPOINT and not has_model and stage not in done and not disabled:
            raise ConfigError(
                f"pipeline.stages={list(stages)}: stage '{stage}' needs a checkpoint; "
                "put 'base' before it or set world.checkpoint"
            )
        weak_missing = "sft" not in stages[:i] and "sft" not in inputs
        if stage == "dpo" and cfg.dpo.rejected_checkpoint is None and weak_missing:
            raise ConfigError(
                f"pipeline.stages={list(stages)}: stage 'dpo' needs its weak (rejected) model, "
                "the checkpoint the 'sft' stage starts from: put 'sft' before 'dpo' or set "
                "dpo.rejected_checkpoint"
            )
        _check_teachers(cfg, stage, stages[:i], done)
        has_model = has_model or stage == "base"


def _check_teachers(cfg: RunConfig, stage: str, before: list[str], done: dict[str, float]) -> None:
    """A distillation stage has its teachers: distill.teachers, or for 'mopd' the
    specialists stage before it, for 'opd' the rlvr stage before it (its output teaches
    its input). The distill advantage needs teachers, so no RL stage may use it."""
    earlier = set(before) | set(done)
    needs = {"mopd": "specialists", "opd": "rlvr"}.get(stage)
    if needs is not None and not cfg.distill.teachers and needs not in earlier:
        raise ConfigError(
            f"pipeline.stages={list(cfg.pipeline.stages)}: stage '{stage}' needs its teachers: "
            f"put '{needs}' before it or set distill.teachers (route -> checkpoint)"
        )
    if stage in ("rlvr", "specialists") and cfg.advantage.name == "distill":
        raise ConfigError(
            f"advantage.name='distill' in stage '{stage}': the distill advantage needs a "
            "teacher, which only the mopd and opd stages attach (they use distill.advantage); "
            "use centered or standard"
        )


def _has_start_checkpoint(cfg: RunConfig) -> bool:
    """The world brings a model (data.worlds.start_checkpoint), without converting it."""
    return cfg.world.brings_model


def check_prompt_filter(cfg: RunConfig) -> None:
    """With k rollouts a pass rate is j/k; some j must lie in [min_pass_rate, max_pass_rate]."""
    pf = cfg.prompt_filter
    if "prompt_filter" not in cfg.pipeline.stages or not pf.enabled:
        return
    k = pf.rollouts
    if not any(pf.min_pass_rate <= j / k <= pf.max_pass_rate for j in range(k + 1)):
        raise ConfigError(
            f"prompt_filter.min_pass_rate={pf.min_pass_rate} with max_pass_rate="
            f"{pf.max_pass_rate} and {k} rollouts keeps no prompt (pass rates are j/{k})"
        )


def check_label_flip(cfg: RunConfig) -> None:
    """Flipped labels need the verifiers' labels: the spurious-reward control replaces them."""
    p = cfg.rewards.label_flip.p
    if p > 0 and cfg.spurious_reward.enabled:
        raise ConfigError(
            f"rewards.label_flip.p={p} flips the verifiers' labels, but "
            "spurious_reward.enabled=true replaces them; set one of the two"
        )


def check_sandbox(rewards: RewardsConfig) -> None:
    """Untrusted code runs only in the full sandbox unless allow_weak_sandbox is set."""
    from recipe_arena.rewards.sandbox import SandboxRefused, require

    try:
        require(rewards.allow_weak_sandbox)
    except SandboxRefused as e:
        raise ConfigError(str(e)) from None
