"""`recipe-arena study FILE`: a study made of rows, each a paired comparison, run and
reported from one command.

    recipe-arena study studies/table_9_2.yaml [jobs=N] [rows=stale_data,pipeline] [regimes=default]
                       [out_dir=DIR]
                       [seeds=4,5,6,7] [export=docs/studies/table_9_2] [check=DIR]
                       [replicates=DIR] [isa=none|avx2]

The file (``studies/<name>.yaml``; ``study_spec.StudySpec`` names every key):

    name: table_9_2
    recipe: olmo3_think
    seeds: [0, 1, 2, 3]
    threads: 1                                 # torch threads of every run (optional)
    isa: avx2                                  # CPU kernels capped at AVX2 (optional)
    common: [rl.schedule=deterministic]        # every run of the study
    regimes:                                   # named sets of overrides
      default: []
      stressed: [engine.dtype=bfloat16, rl.lag=4, rl.max_staleness=4]
    regime_notes:                              # how a regime was made (optional)
      stressed: a bfloat16 engine, an actor 4 versions behind
    regime_seeds:                              # a regime on more seeds (optional):
      stressed: 8                              # 0-7, the study's seeds and the next 4
    rows:
      - name: stale_data
        axis: staleness                        # arms are options of one axis ...
        arms: [tis, none, kimi_regularizer]    # ... the first is OLMo 3's choice
        regimes: [default, stressed]
        aa: true                               # an A/A control per regime
      - name: rewards
        arms:                                  # ... or named override sets
          exact: []
          quarantine: [rewards.audit_quarantine=true]
        design: Both arms train the same steps # how the arms were matched (optional)
      - name: pipeline
        arms: {mixed: [], opd: [pipeline=rl_opd, rl.steps=36]}
        budget: design                         # steps differ on purpose (design says how)
        design: Matched on learner tokens
    findings:                                  # claims, each read off one comparison
      - claim: Uncorrected stale data hurts under heavy mismatch
        row: stale_data
        regime: stressed
        arm: none
        domain: math
        expect: worse                          # better | worse | same
    contrasts:                                 # which group of rows moves the score more
      - claim: The verifier matters more than the optimizer
        groups: [{name: rewards, rows: [rewards]}, {name: optimizer, rows: [stale_data]}]
        domain: mean

Each (row, regime) is one comparison of ``recipe-arena compare`` (a paired design: the
same seeds, world, evaluation and budget for every arm), whose baseline is OLMo 3's
choice. A run is identified by its resolved configuration and seed: a run that two rows
(or two regimes) would both make, such as the baseline of a regime that several rows
compare against, is made once, under ``runs/``, and every comparison that needs it
links to it. Rerunning the command resumes: finished runs are kept, interrupted ones
continue from their checkpoints. ``rows=`` runs only the named rows, ``regimes=`` only
the named regimes of them (and reports the
study with whatever has finished). ``seeds=`` replaces the file's seeds (the prefix seed
stays; a regime of ``regime_seeds`` keeps its count, after the new seeds), to check that
a verdict holds on other draws; give it its own ``out_dir``.
``check=DIR`` compares, once the chosen rows have run, each run's per-question scores
with the same run in DIR (a committed export): the reproduction check of a published
study, exit status 1 when any differs. ``replicates=DIR``, with ``seeds=``, compares the
verdicts instead: every verdict of DIR beyond its MDE against the same comparison here
(``eval.replication``), exit status 1 when one does not hold. ``isa=`` replaces the
file's cap on the CPU kernels (``none``: the machine's widest set): where the capped
kernels cannot give the committed numbers anyway (``cpu_isa.MEASURED_TO_DIFFER``) they
only cost time: on the Intel Xeon with AMX a first run's stages took 1.3 times as long
capped, a study row's RL stages 1.17 times, a training step 1.45 times, decoding 1.1 times
(docs/results.md). A study directory keeps the cap its runs were made under: a run under
another one (another ``isa=``, or an edited file) stops with an error before any work,
since a run's key does not hold the cap and a finished run would be taken as made under it.

The study directory ``<out_dir>/<name>/`` holds ``study.json`` (the file as read),
``runs/``, ``rows/<row>.<regime>/`` (each a comparison directory with its own report)
and the study report ``report.md`` / ``report.html``: a summary shaped like Table 9.2
(row, OLMo 3's choice, each alternative, its effect on held-out pass@1 per domain
against OLMo 3's choice with a 95% interval, the minimum detectable effect, a verdict),
then each row's section, then the findings. ``recipe-arena report STUDY_DIR``
re-renders it from the run artifacts alone (config.yaml, stages.json, metrics.jsonl,
eval_scores.jsonl). ``export=DIR`` copies the study with those artifacts and nothing
else (no checkpoints, no logs) to DIR, small enough to commit, where ``recipe-arena
report DIR`` renders the same report (``study_export``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import get_args

from pydantic import ValidationError

from recipe_arena.cache import CODE_VERSION, VERDICTS_VERSION, audit_version
from recipe_arena.compare import _dump, _Job, check_pairing, execute, needs_cold_cache
from recipe_arena.comparison_plan import (
    PLAN_FILE,
    Arm,
    Plan,
    run_finished,
    scores_gone,
    without_later_defaults,
)
from recipe_arena.compose import ConfigError, load_config
from recipe_arena.config import RunConfig
from recipe_arena.cpu_isa import CPU_FLAGS, Isa, cpu_has, measured_to_differ, pin
from recipe_arena.study_export import (
    STUDY_FILE,
    check_reproduction,
    export_study,
    row_dir_name,
    say,
)
from recipe_arena.study_spec import RowSpec, StudySpec, arm_overrides, load_spec, seeds_of

AA_SEED_OFFSET = 1000
"""The A/A control's seeds: the study's seeds plus this (as in ``compare``)."""


def row_plan(spec: StudySpec, row: RowSpec, regime: str) -> Plan:
    """The comparison of ``row`` in ``regime``: OLMo 3's choice is the baseline, every
    arm on the regime's seeds (``seeds_of``)."""
    common = [*spec.common, *spec.regimes[regime], *row.overrides]
    seeds = seeds_of(spec.seeds, spec.regime_seeds, regime)
    arms = [Arm(name, ov, seeds) for name, ov in arm_overrides(row)]
    if row.aa:
        control = [s + AA_SEED_OFFSET for s in seeds]
        arms.append(Arm(f"{arms[0].name}_aa", arms[0].overrides, control, control=True))
    return Plan(spec.recipe, row.axis, arms, arms[0].name, common)


def settings_digest(cfg: RunConfig, threads: int | None = None) -> str:
    """What identifies a run's settings: a hash of its resolved configuration but for
    seed, name and place (``compare``'s RUN_KEYS), and of its fixed torch thread count
    (``StudySpec.threads``) when the study sets one. A setting of ``LATER_DEFAULTS`` at
    its value is left out, so runs keyed before it existed keep their keys. The versions
    of the stages' code and of the verifiers' verdicts (``cache.CODE_VERSION``,
    ``cache.VERDICTS_VERSION``), and for a pipeline with the audit stage the version of
    its probes (``cache.audit_version``), are part of it: a run made before any of them
    changed is run again, not reused."""
    flat = json.dumps(without_later_defaults(_dump(cfg)), sort_keys=True, default=str)
    flat += f"|{CODE_VERSION}|{VERDICTS_VERSION}"
    if "audit" in cfg.pipeline.stages:
        flat += f"|{audit_version(cfg.rewards.chat)}"
    if threads is not None:
        flat += f"|threads={threads}"
    return hashlib.sha256(flat.encode()).hexdigest()[:12]


def run_key(digest: str, seed: int) -> str:
    """A run's directory name under ``runs/``: its settings digest and seed."""
    return f"r{digest}-s{seed}"


def prepare(
    spec: StudySpec, root: Path, rows: list[str] | None, regimes: list[str] | None = None
) -> tuple[list[_Job], dict[str, dict[str, str]]]:
    """Validate every run, link each comparison's runs to the shared ones, and list the
    runs still to make: of the ``rows`` named (None: all) in the ``regimes`` named
    (None: each row's own). Returns (jobs, row dir -> {"<arm>-s<seed>": run key})."""
    chosen = [r for r in spec.rows if rows is None or r.name in rows]
    if rows is not None and (unknown := set(rows) - {r.name for r in spec.rows}):
        raise ConfigError(
            f"rows={','.join(rows)}: no row {sorted(unknown)[0]!r}; rows: "
            + ", ".join(r.name for r in spec.rows)
        )
    if regimes is not None and (unknown := set(regimes) - set(spec.regimes)):
        raise ConfigError(
            f"regimes={','.join(regimes)}: no regime {sorted(unknown)[0]!r}; regimes: "
            + ", ".join(spec.regimes)
        )
    if regimes is not None and not any(set(r.regimes) & set(regimes) for r in chosen):
        raise ConfigError(f"regimes={','.join(regimes)}: none of the chosen rows runs in them")
    runs_dir = root / "runs"
    args_of: dict[str, list[str]] = {}
    builds: dict[str, Path | None] = {}
    links: dict[str, dict[str, str]] = {}
    composed: dict[tuple[str, ...], tuple[RunConfig, str]] = {}
    for row in chosen:
        for regime in row.regimes:
            if regimes is not None and regime not in regimes:
                continue
            plan = row_plan(spec, row, regime)
            firsts: dict[str, RunConfig] = {}
            here: dict[str, str] = {}
            for arm, seed in plan.runs():
                args = [f"recipe={spec.recipe}", *plan.common, *arm.overrides]
                if tuple(args) not in composed:  # composed once: only the seed differs
                    try:
                        cfg = load_config([*args, f"seed={seed}"])
                    except ConfigError as e:
                        raise ConfigError(
                            f"row {row.name} ({regime}), arm {arm.name}: {e}"
                        ) from None
                    composed[tuple(args)] = (cfg, settings_digest(cfg, spec.threads))
                cfg, digest = composed[tuple(args)]
                firsts.setdefault(arm.name, cfg)
                key = run_key(digest, seed)
                if key not in args_of:
                    args_of[key] = [*args, f"seed={seed}", f"out_dir={runs_dir}", f"name={key}"]
                    builds[key] = _prefix_entry(cfg.model_copy(update={"seed": seed}), spec)
                here[f"{arm.name}-s{seed}"] = key
            try:
                check_pairing(plan, firsts, same_budget=row.budget == "samples")
            except ConfigError as e:
                raise ConfigError(f"row {row.name} ({regime}): {e}") from None
            name = row_dir_name(row.name, regime)
            links[name] = here
            _link(root / "rows" / name, plan, here)
    jobs = []
    for key, args in args_of.items():
        if run_finished(runs_dir / key):
            if scores_gone(runs_dir / key):  # kept, but the report cannot count it
                say(
                    f"{key}: finished, but its per-question scores are gone; the report will "
                    f"not count it (remove {runs_dir / key} to run it again)"
                )
            continue
        if (runs_dir / key).exists():
            args = [*args, "resume=true"]
        jobs.append(_Job(key, args, root / "logs" / f"{key}.log", builds=builds[key]))
    return jobs, links


def _prefix_entry(cfg: RunConfig, spec: StudySpec) -> Path | None:
    """The stored prefix the run reads or builds (``pipeline.reuse_prefix``); None when
    it has none, or when the study leaves the thread count (part of the entry) free."""
    from recipe_arena import prefix_cache

    stages = prefix_cache.prefix_stages(cfg.pipeline.stages)
    if not cfg.pipeline.reuse_prefix or not stages or spec.threads is None:
        return None
    return prefix_cache.prefix_entry(prefix_cache.prefix_config(cfg), stages, spec.threads)


def _link(row_dir: Path, plan: Plan, runs: dict[str, str]) -> None:
    """A comparison directory whose runs/<arm>-s<seed> are links to the shared runs."""
    (row_dir / "runs").mkdir(parents=True, exist_ok=True)
    (row_dir / PLAN_FILE).write_text(json.dumps(plan.to_json(), indent=2) + "\n")
    for name, key in runs.items():
        link = row_dir / "runs" / name
        target = Path("..", "..", "..", "runs", key)
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)


OPTIONS = ("jobs", "rows", "regimes", "seeds", "out_dir", "export", "check", "replicates", "isa")
"""The keys ``recipe-arena study FILE`` takes after the file."""


def _options(items: list[str]) -> tuple[Path, dict[str, str]]:
    if not items or "=" in items[0]:
        raise ConfigError("study needs the study file first: recipe-arena study FILE [key=value]")
    opts: dict[str, str] = {}
    for item in items[1:]:
        key, sep, value = item.partition("=")
        if not sep or key not in OPTIONS:
            raise ConfigError(
                f"argument {item!r}: allowed: jobs=N, rows=a,b, regimes=a,b, seeds=4,5,6,7, "
                "out_dir=DIR, export=DIR, check=DIR, replicates=DIR, isa=none|avx2"
            )
        opts[key] = value
    return Path(items[0]), opts


def build_base(args: list[str], root: Path) -> bool:
    """Build the world's base model before any run of the study, in a run of the base
    stage alone with this process's thread settings, as ``recipe-arena run`` builds it.
    The study's ``threads`` are its runs'; a base model built at another thread count
    would differ from the one every other command builds (its key does not hold the
    count), so a study on a fresh machine would not reproduce one on a used one.
    Returns whether it was built."""
    keep = [
        a for a in args if not a.startswith(("name=", "out_dir=", "resume=", "pipeline.stages="))
    ]
    log = root / "logs" / "base.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    say(f"building the base model first (log: {log})")
    with open(log, "ab") as out:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "recipe_arena.cli",
                "run",
                *keep,
                "pipeline.stages=[base]",
                f"out_dir={root / 'base'}",
                "name=base",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode != 0:
        say(f"building the base model failed (exit {done.returncode}); see {log}")
    return done.returncode == 0


def pin_kernels(isa: Isa, flags_file: Path = CPU_FLAGS) -> None:
    """Cap the CPU kernels of every process the study starts (the base model's build and
    each run) at ``isa``, before any key is computed (``cpu_isa.pin``); say so, and warn
    where this processor (its ``flags_file``) lacks ``isa`` or cannot tell, or is one on
    which the capped numbers were measured to differ (``cpu_isa.MEASURED_TO_DIFFER``):
    there the numbers cannot match those of the study's machines."""
    pin(isa)
    has = cpu_has(isa, flags_file)
    differs = measured_to_differ(flags_file)
    if differs is not None:
        say(
            f"warning: CPU kernels capped at {isa}, but on {differs}, as this one is, the "
            "capped kernels were measured to give other numbers than the studies made on "
            "other processors (docs/results.md): its runs will not reproduce theirs, only "
            "those made on a machine like it (docs/studies/table_9_2_96_seeds_8-11); capped "
            "they take 1.2 to 1.3 times as long there; isa=none drops the cap"
        )
    elif has is None:
        say(f"CPU kernels capped at {isa}; this system does not say whether it has {isa}")
    elif not has:
        say(
            f"warning: this processor lacks {isa}, at which the study caps its kernels; "
            "its numbers will differ from those of machines that have it"
        )
    else:
        say(
            f"CPU kernels capped at {isa}: measured to give the same numbers on an Intel "
            f"machine whose widest set is {isa} and on AMD EPYC processors with AVX-512 "
            f"and with {isa} only"
        )


def with_seeds(spec: StudySpec, text: str) -> StudySpec:
    """``spec`` on the seeds ``text`` lists ("4,5,6,7"): the same study on other draws,
    to see whether its verdicts hold (a regime of ``regime_seeds`` keeps its count, or
    takes as many as ``text`` lists where that is more, after the new seeds);
    ConfigError (one line) for a bad list."""
    try:
        seeds = [int(x) for x in text.split(",") if x]
    except ValueError:
        raise ConfigError(f"seeds={text!r}: expected integers, e.g. 4,5,6,7") from None
    try:
        more = {g: max(n, len(seeds)) for g, n in spec.regime_seeds.items()}
        return StudySpec.model_validate({**spec.model_dump(), "seeds": seeds, "regime_seeds": more})
    except ValidationError as e:
        raise ConfigError(f"seeds={text!r}: {e.errors()[0]['msg']}") from None


def with_isa(spec: StudySpec, text: str) -> StudySpec:
    """``spec`` with the cap ``text`` names (``isa=``): ``none`` for no cap, else an
    instruction set of ``cpu_isa.Isa``, validated as the file's own ``isa:`` is;
    ConfigError (one line) for another value."""
    value = text.strip().lower()
    try:
        return StudySpec.model_validate(
            {**spec.model_dump(), "isa": None if value == "none" else value}
        )
    except ValidationError:
        raise ConfigError(
            f"isa={text!r}: expected none or one of {', '.join(get_args(Isa))}"
        ) from None


def check_same_cap(root: Path, isa: Isa | None) -> None:
    """Raise ``ConfigError`` when the study directory ``root`` holds runs made under
    another cap than ``isa`` (its ``study.json`` from the last invocation says which).
    A run's key does not hold the cap, so a finished run would otherwise be reported as
    made under this one, and its scores paired with runs that compute other numbers."""
    recorded = root / STUDY_FILE
    runs = root / "runs"
    if not recorded.is_file() or not runs.is_dir() or not any(runs.iterdir()):
        return
    before = json.loads(recorded.read_text()).get("isa")
    if before != isa:
        was, now = (f"capped at {c}" if c else "uncapped" for c in (before, isa))
        raise ConfigError(
            f"{root}: its runs were made with CPU kernels {was}, this study would make "
            f"them {now}; give it another out_dir= (or isa={before or 'none'})"
        )


def run_study(items: list[str]) -> int:
    """Validate, run what is not finished, write the report: 0 when every run of the
    chosen rows finished, 1 when some failed (the report covers the finished ones)."""
    path, opts = _options(items)
    spec = load_spec(path)
    if "seeds" in opts:
        spec = with_seeds(spec, opts["seeds"])
    if "isa" in opts:
        spec = with_isa(spec, opts["isa"])
    try:
        jobs_n = int(opts.get("jobs", max(1, (os.cpu_count() or 1) // 2)))
    except ValueError:
        raise ConfigError(f"jobs={opts['jobs']!r}: expected a positive integer") from None
    if jobs_n < 1:
        raise ConfigError(f"jobs={jobs_n}: expected a positive integer")
    rows = [r for r in opts["rows"].split(",") if r] if "rows" in opts else None
    regimes = [r for r in opts["regimes"].split(",") if r] if "regimes" in opts else None
    for key, names in (("rows", rows), ("regimes", regimes)):
        if names == []:  # "rows=" would run nothing and report an empty study
            raise ConfigError(f"{key}={opts[key]!r}: name at least one, e.g. {key}=a,b")
    root = Path(opts.get("out_dir", "runs/studies")) / spec.name
    check_same_cap(root, spec.isa)
    root.mkdir(parents=True, exist_ok=True)
    if spec.isa is not None:
        pin_kernels(spec.isa)
    jobs, links = prepare(spec, root, rows, regimes)
    # runs are found by what they are, so an edited study keeps every run it still needs
    (root / STUDY_FILE).write_text(json.dumps(spec.model_dump(mode="json"), indent=2) + "\n")
    total = len({k for runs in links.values() for k in runs.values()})
    say(f"{len(links)} comparisons, {total} distinct runs, {len(jobs)} to run, in {root}")
    if jobs and needs_cold_cache(load_config(jobs[0].args)) and not build_base(jobs[0].args, root):
        return 1
    failed = execute(jobs, jobs_n, False, threads=spec.threads) if jobs else []
    from recipe_arena.eval.study_report import write_study_report

    report = write_study_report(root)
    say(f"report: {report} (and report.html)")
    if "export" in opts:
        dest = export_study(root, Path(opts["export"]))
        # rendered again where it now lies: the rows' reports link only run pages that
        # exist, and an export holds none
        write_study_report(dest)
        say(f"exported the report and its artifacts to {dest}")
    if failed:
        say(f"{len(failed)} runs failed: {', '.join(failed)}; rerun the command to retry them")
        return 1
    code = 0
    if "replicates" in opts:
        from recipe_arena.eval.replication import check_replication

        code = 0 if check_replication(Path(opts["replicates"]), root) else 1
    if "check" in opts:
        keys = sorted({k for runs in links.values() for k in runs.values()})
        differ = check_reproduction(root / "runs", Path(opts["check"]) / "runs", keys)
        if differ:
            say(
                "check: bitwise equality needs the same torch and MKL builds, the study's "
                "threads and "
                + (
                    f"a processor with {spec.isa} (the study caps its kernels there)"
                    if spec.isa
                    else "the same vector instructions (the study sets no isa: cap)"
                )
            )
        return 1 if differ else code
    return code
