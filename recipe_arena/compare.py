"""`recipe-arena compare`: arms x seeds in a paired design, run, resumed and reported.

    recipe-arena compare recipe=olmo3_think axis=staleness arms=[tis,none] seeds=3
    recipe-arena compare recipe=olmo3_think axis=rl.lr arms=[1e-5,0] seeds=3 aa=true
    recipe-arena compare arms=[olmo3_think,kimi_k3] seeds=[0,1] budget=smoke

An arm is one recipe with one axis set (``axis`` names a folder of ``recipes/``, such as
``staleness``, or a config key, such as ``rl.lr``; each arm is one value), or, without
``axis``, a whole recipe. The first arm is the baseline (``baseline=NAME`` picks another).
Every other ``key=value`` (``budget=smoke``, ``rl.steps=40``) applies to every arm.

Paired design: every arm runs the same seeds (so the same SFT data order, prompt order
and sampling seeds per seed), the same budget (``rl.steps x rl.prompts_per_step x
rl.group_size`` trained samples) and the same evaluation prompts; arms that would
differ in any of these are refused before any work, unless the axis itself is the
setting. ``aa=true`` adds an A/A control: the baseline again on a second seed set
(each seed + 1000), whose difference to the baseline is noise by construction.

Runs are separate processes (``jobs`` at a time; default: one per two CPU cores, since
a run keeps an actor and a learner busy), each a normal run directory under
``<out_dir>/<name>/runs/``. Rerunning the same command resumes: finished runs are never
run again, interrupted ones continue from their checkpoints (``resume=true``). The
comparison report (``report.md``, ``report.html``) is written at the end, and
``recipe-arena report <comparison dir>`` rewrites it from the runs' artifacts.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recipe_arena.cache import entry_ready
from recipe_arena.comparison_plan import (
    PLAN_FILE,
    RUN_KEYS,
    Arm,
    Plan,
    flatten,
    run_finished,
    scores_gone,
)
from recipe_arena.compose import ConfigError, load_config
from recipe_arena.config import DEFAULT_RECIPE, RunConfig

AA_SEED_OFFSET = 1000
"""The A/A control's seeds are the comparison's seeds plus this (a second, disjoint set)."""
PAIRED_KEYS = ("world", "eval")
"""Config sections every arm must share: the same world gives the same data and evaluation
prompts, the same eval settings the same scoring of them."""
BUDGET_KEYS = ("rl.steps", "rl.prompts_per_step", "rl.group_size")
"""Their product is the budget in trained samples, equal for every arm."""
PROGRESS_EVERY_S = 60.0
PROGRESS_PREFIXES = ("rlvr", "stage ", "base:", "sft:", "dpo", "prompt filter", "prompt_filter")
"""Lines of a run's log that say where it is (its stage rules and progress bars)."""


@dataclass
class Options:
    jobs: int
    out_dir: Path
    name: str | None


def _list(key: str, value: str) -> list[str]:
    inner = value.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    items = [v.strip().strip("'\"") for v in inner.split(",") if v.strip()]
    if not items:
        raise ConfigError(f"{key}={value!r}: expected a list such as [a,b]")
    return items


def _seeds(value: str) -> list[int]:
    try:
        if value.strip().startswith("["):
            seeds = [int(v) for v in _list("seeds", value)]
        else:
            seeds = list(range(int(value)))
    except ValueError:
        raise ConfigError(f"seeds={value!r}: expected a count (3) or a list ([0,1,2])") from None
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ConfigError(f"seeds={value!r}: need at least one seed, distinct, >= 0")
    return seeds


def _label(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", value)


def parse(items: list[str]) -> tuple[Plan, Options]:
    """The plan and options of ``compare``'s ``key=value`` arguments."""
    opts: dict[str, str] = {}
    common: list[str] = []
    own = {"recipe", "axis", "arms", "seeds", "aa", "baseline", "jobs", "out_dir", "name"}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"argument {item!r} is not of the form key=value")
        key, value = item.split("=", 1)
        if key in own:
            opts[key] = value
        else:
            common.append(item)
    if "arms" not in opts:
        raise ConfigError("arms is required, e.g. axis=staleness arms=[tis,none]")
    axis = opts.get("axis") or None
    recipe = opts.get("recipe", DEFAULT_RECIPE)
    values = _list("arms", opts["arms"])
    if len(values) < 2:
        raise ConfigError(f"arms={opts['arms']!r}: a comparison needs at least two arms")
    if axis and any(c.split("=", 1)[0].lstrip("+~") == axis for c in common):
        raise ConfigError(f"axis={axis} is also set for every arm ({axis}=...); drop one")
    seeds = _seeds(opts.get("seeds", "3"))
    arms = []
    for v in values:
        if axis:
            # a key path's arms read as lr_0, lr_3e-5; a group's as its option names
            name = f"{axis.rsplit('.', 1)[-1]}_{v}" if "." in axis else v
            arms.append(Arm(_label(name), [f"{axis}={v}"], seeds))
        else:
            arms.append(Arm(_label(v), [f"recipe={v}"], seeds))
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise ConfigError(f"arms={opts['arms']!r}: arm names must be distinct, got {names}")
    baseline = opts.get("baseline", names[0])
    if baseline not in names:
        raise ConfigError(f"baseline={baseline!r} is not an arm; arms: {', '.join(names)}")
    aa = opts.get("aa", "false").lower()
    if aa not in ("true", "false"):
        raise ConfigError(f"aa={opts['aa']!r}: allowed: true, false")
    if aa == "true":
        base = next(a for a in arms if a.name == baseline)
        control = [s + AA_SEED_OFFSET for s in seeds]
        arms.append(Arm(f"{baseline}_aa", base.overrides, control, control=True))
    try:
        cpus = os.cpu_count() or 1
        jobs = int(opts.get("jobs", max(1, cpus // 2)))
    except ValueError:
        raise ConfigError(f"jobs={opts['jobs']!r}: expected a positive integer") from None
    if jobs < 1:
        raise ConfigError(f"jobs={jobs}: expected a positive integer")
    plan = Plan(recipe, axis, arms, baseline, common)
    return plan, Options(jobs, Path(opts.get("out_dir", "runs")), opts.get("name"))


def default_name(plan: Plan) -> str:
    budget = next((c.split("=", 1)[1] for c in plan.common if c.startswith("budget=")), "default")
    what = plan.axis or "recipes"
    return _label(f"compare-{plan.recipe}-{what}-{budget}")


def run_overrides(plan: Plan, arm: Arm, seed: int, runs_dir: Path) -> list[str]:
    """The `recipe-arena run` overrides of one run of the comparison."""
    recipe = (
        [] if any(o.startswith("recipe=") for o in arm.overrides) else [f"recipe={plan.recipe}"]
    )
    return [
        *recipe,
        *plan.common,
        *arm.overrides,
        f"seed={seed}",
        f"out_dir={runs_dir}",
        f"name={arm.name}-s{seed}",
    ]


def _dump(cfg: RunConfig) -> dict[str, Any]:
    flat = flatten(cfg.model_dump(mode="json"))
    return {k: v for k, v in flat.items() if k not in RUN_KEYS}


def check_pairing(plan: Plan, configs: dict[str, RunConfig], same_budget: bool = True) -> None:
    """Refuse arms that would not be paired: different world or eval settings (so
    different evaluation prompts or scoring), or, when ``same_budget``, a different
    trained-sample budget, unless the axis is that setting. ``configs``: arm name -> one
    of its configs. ``same_budget`` False: the arms' budgets differ by a stated design
    (a study row matched on learner tokens)."""
    dumps = {name: _dump(cfg) for name, cfg in configs.items()}
    base = dumps[plan.baseline]
    axis = plan.axis or ""
    for name, flat in dumps.items():
        for key in sorted(set(base) | set(flat)):
            if axis and (key == axis or key.startswith(axis + ".")):
                continue
            paired = key.split(".", 1)[0] in PAIRED_KEYS or (same_budget and key in BUDGET_KEYS)
            if paired and base.get(key) != flat.get(key):
                raise ConfigError(
                    f"arm {name} has {key}={flat.get(key)!r} but the baseline "
                    f"{plan.baseline} has {base.get(key)!r}; a paired comparison needs the "
                    "same world, evaluation and budget (set it for every arm: "
                    f"{key}=...)"
                )


def compose_runs(plan: Plan, runs_dir: Path) -> dict[tuple[str, int], RunConfig]:
    """Every run's validated config (a bad arm fails here, naming the arm)."""
    out: dict[tuple[str, int], RunConfig] = {}
    for arm, seed in plan.runs():
        try:
            out[(arm.name, seed)] = load_config(run_overrides(plan, arm, seed, runs_dir))
        except ConfigError as e:
            raise ConfigError(f"arm {arm.name}: {e}") from None
    firsts = {a.name: out[(a.name, a.seeds[0])] for a in plan.arms}
    check_pairing(plan, firsts)
    return out


@dataclass
class _Job:
    name: str
    args: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    builds: Path | None = None
    """A shared cache entry the run builds unless it is ready (a study run's stored
    prefix): two runs that would build the same one are not started together, since
    the second would repeat the first's work instead of copying it."""


def next_job(waiting: list[_Job], running: list[_Job]) -> int | None:
    """Index in ``waiting`` of the first job that does not need an entry a running job
    is building; None when every waiting job does (then the next waits for it)."""
    busy = {j.builds for j in running if j.builds is not None and not entry_ready(j.builds)}
    for i, job in enumerate(waiting):
        if job.builds is None or job.builds not in busy or entry_ready(job.builds):
            return i
    return None


def _last_progress(log: Path) -> str:
    """The latest progress line of a run's log (tqdm rewrites lines with \\r)."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, log.stat().st_size - 4096))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return "starting"
    lines = [s.strip("─ ") for s in re.split(r"[\r\n]", tail)]
    for line in reversed(lines):
        if line.startswith(PROGRESS_PREFIXES):
            return str(line)[:60]
    return "starting"


def _say(msg: str) -> None:
    print(f"compare: {msg}", file=sys.stderr, flush=True)


def child_env(parallel: int, threads: int | None) -> dict[str, str]:
    """The environment of each child run: ours, with OMP/MKL_NUM_THREADS set to
    ``threads``, or when None and ``parallel`` > 1 to the cores divided among the
    children (at least 1), so that parallel runs do not oversubscribe the cores."""
    env = dict(os.environ)
    if threads is None and parallel > 1:
        threads = max(1, (os.cpu_count() or 1) // parallel)
    if threads is not None:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env


def execute(
    jobs: list[_Job], parallel: int, first_alone: bool, threads: int | None = None
) -> list[str]:
    """Run ``jobs`` as child processes, ``parallel`` at a time (the first one alone when
    ``first_alone``, so that it builds shared caches once); return the names that failed.
    Each child gets ``threads`` torch threads, or by default the cores shared among the
    ``parallel`` children (torch's own default when alone). On an interrupt every child
    is stopped, and the comparison can be resumed."""
    env = child_env(parallel, threads)
    waiting = list(jobs)
    running: list[_Job] = []
    failed: list[str] = []
    done = 0
    last_report = time.monotonic()

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # stop the children too, as on Ctrl-C

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        while waiting or running:
            limit = 1 if first_alone and done == 0 and not failed else parallel
            while waiting and len(running) < limit:
                pick = next_job(waiting, running)
                if pick is None:
                    break
                job = waiting.pop(pick)
                job.log.parent.mkdir(parents=True, exist_ok=True)
                with open(job.log, "ab") as log:
                    job.proc = subprocess.Popen(
                        [sys.executable, "-m", "recipe_arena.cli", "run", *job.args],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                    )
                job.started = time.monotonic()
                running.append(job)
                _say(f"started {job.name} (log: {job.log})")
            time.sleep(0.5)
            for job in list(running):
                assert job.proc is not None
                rc = job.proc.poll()
                if rc is None:
                    continue
                running.remove(job)
                secs = time.monotonic() - job.started
                if rc == 0:
                    done += 1
                    _say(f"finished {job.name} in {secs:.0f} s ({done}/{len(jobs)})")
                else:
                    failed.append(job.name)
                    _say(f"FAILED {job.name} (exit {rc}); see {job.log}")
            if running and time.monotonic() - last_report > PROGRESS_EVERY_S:
                last_report = time.monotonic()
                states = "; ".join(f"{j.name}: {_last_progress(j.log)}" for j in running)
                _say(f"{done}/{len(jobs)} done, {len(waiting)} waiting | {states}")
    except KeyboardInterrupt:
        for job in running:
            if job.proc is not None and job.proc.poll() is None:
                os.killpg(job.proc.pid, signal.SIGTERM)
        for job in running:
            if job.proc is not None:
                job.proc.wait()
        _say("interrupted; run the same command again to resume")
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    return failed


def needs_cold_cache(cfg: RunConfig) -> bool:
    """Whether the run would build the world's base model (shared by every run, so the
    first run goes alone)."""
    if "base" not in cfg.pipeline.stages or cfg.world.checkpoint:
        return False
    from recipe_arena.stages.base import base_cache_entry

    return not entry_ready(base_cache_entry(cfg))


def prepare(plan: Plan, opts: Options) -> tuple[Path, list[_Job], bool]:
    """Validate every run's config, record the plan (or check it against the one
    stored), and list the runs still to do: (comparison dir, jobs, first alone?)."""
    from recipe_arena.rundir import run_dir_path

    root = run_dir_path(opts.out_dir, opts.name or default_name(plan))  # a name, not a path
    runs_dir = root / "runs"
    configs = compose_runs(plan, runs_dir)
    plan_path = root / PLAN_FILE
    if plan_path.exists() and json.loads(plan_path.read_text()) != plan.to_json():
        raise ConfigError(
            f"{root} holds a different comparison ({plan_path}); pick another "
            "name=... or out_dir=..., or remove it"
        )
    root.mkdir(parents=True, exist_ok=True)
    plan_path.write_text(json.dumps(plan.to_json(), indent=2) + "\n")
    jobs: list[_Job] = []
    for arm, seed in plan.runs():
        name = f"{arm.name}-s{seed}"
        run_dir = runs_dir / name
        if run_finished(run_dir):
            _say(
                f"{name}: finished earlier, but its per-question scores are gone; the report "
                f"will not count it (remove {run_dir} to run it again)"
                if scores_gone(run_dir)
                else f"{name}: finished earlier, not run again"
            )
            continue
        args = run_overrides(plan, arm, seed, runs_dir)
        if run_dir.exists():
            args.append("resume=true")
            _say(f"{name}: interrupted earlier, resuming")
        jobs.append(_Job(name, args, root / "logs" / f"{name}.log"))
    first = configs[(plan.arms[0].name, plan.arms[0].seeds[0])]
    return root, jobs, needs_cold_cache(first)


def run_comparison(items: list[str]) -> int:
    """Parse, validate, run what is not finished, write the report; 0 when every run
    finished, 1 when some failed (the report then covers the finished ones)."""
    plan, opts = parse(items)
    root, jobs, first_alone = prepare(plan, opts)
    _say(
        f"{len(plan.arms)} arms, {len(plan.runs())} runs, {len(jobs)} to run, "
        f"{opts.jobs} at a time, in {root}"
    )
    failed = execute(jobs, opts.jobs, first_alone) if jobs else []
    from recipe_arena.eval.report import write_report

    report = write_report(root)
    _say(f"report: {report} (and report.html)")
    if failed:
        _say(f"{len(failed)} runs failed: {', '.join(failed)}; rerun the command to retry them")
        return 1
    return 0
