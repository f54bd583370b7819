"""`recipe-arena`: run a recipe, score responses, audit verifiers, render a report.

    recipe-arena run recipe=olmo3_think [group=option ...] [key.path=value ...] [--cfg job] [-v]
    recipe-arena verify IN.jsonl [OUT.jsonl] [key.path=value ...]
    recipe-arena audit [--limit N] [--domains math,code] [--out FILE] [key.path=value ...]
    recipe-arena compare [recipe=NAME] [axis=GROUP|key.path] arms=[a,b,...] [seeds=N] [aa=true] [...]
    recipe-arena study STUDY.yaml [jobs=N] [rows=a,b] [regimes=a,b] [seeds=4,5,6,7] [out_dir=DIR]
                       [check=DIR] [replicates=DIR] [isa=none|avx2]
    recipe-arena report RUN_DIR [RUN_DIR ...] | COMPARISON_DIR | STUDY_DIR
    recipe-arena lm-eval RUN_DIR|CHECKPOINT [--k K] [--limit N] [--tasks T,...] [key.path=value ...]
    recipe-arena spurious-check --spurious RUN... [--real RUN...] [--out DIR]

`recipe-arena run --help` lists the recipes, config groups and keys (helptext.py); -v keeps
library progress bars and known-harmless warnings in the log (logsetup.py). A bad recipe,
option, key or value exits with status 2 and one line that names it and
what is allowed, before any work starts.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import sys
import threading
from typing import Any

import yaml

from recipe_arena import hidden_modules, offline_env
from recipe_arena.comparison_plan import ArtifactError
from recipe_arena.compose import ConfigError, load_config
from recipe_arena.domains import POOLED_DOMAINS
from recipe_arena.helptext import RUN_DESCRIPTION, add_run_help
from recipe_arena.logsetup import add_verbose_flag, configure_output

EXIT_CONFIG = 2


def _cmd_run(args: argparse.Namespace) -> int:
    cfg = load_config(args.overrides)
    if args.cfg == "job":
        print(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False), end="")
        return 0
    if args.dry_run:
        return _dry_run(cfg)
    # Every stage that scores uses the shared verifier pool; started here, its zygote
    # imports the checkers beside this process's imports below.
    from recipe_arena.rewards.scorer import shared_pool

    shared_pool(cfg.rewards)
    # transformers imports scikit-learn at its own import (seconds of start-up) only
    # for assisted generation, which no stage uses: its generation code loads here, once,
    # with scikit-learn hidden (lm-eval's metrics can still import it later).
    with hidden_modules(("sklearn",)):
        import transformers.generation.utils  # noqa: F401
    from recipe_arena.pipeline import run_pipeline
    from recipe_arena.summary import closing_lines

    print(closing_lines(run_pipeline(cfg)))
    return 0


def _dry_run(cfg: Any) -> int:
    """Validate the launch (recipe_arena/plan.py) and print settings and placement."""
    from recipe_arena.plan import format_plan, launch_problems, placement_plan

    problems = launch_problems(cfg)
    for line in problems:
        print(f"recipe-arena: config error: {line}", file=sys.stderr)
    if problems:
        return EXIT_CONFIG
    print(format_plan(cfg, placement_plan(cfg)))
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    """A bad row costs only itself (an ``error:`` reason); a bad file exits 2 in one line."""
    cfg = load_config(args.overrides)
    from recipe_arena.config_checks import check_judge
    from recipe_arena.rewards.verify import VerifyError, verify_jsonl

    check_judge(cfg.rewards)

    try:
        summary = verify_jsonl(args.input, args.output, cfg.rewards)
    except VerifyError as e:
        print(f"recipe-arena: verify: {e}", file=sys.stderr)
        return EXIT_CONFIG
    print(json.dumps(summary), file=sys.stderr)
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    cfg = load_config(args.overrides)
    from recipe_arena.data.worlds import build_world
    from recipe_arena.rewards.audit import run_audit

    domains = args.domains.split(",") if args.domains else POOLED_DOMAINS
    datasets = {
        f"{cfg.world.name}/{domain}/{split}": rows[: args.limit]
        for split, by_domain in build_world(cfg.world).items()
        for domain, rows in by_domain.items()
        if domain in domains
    }
    report = run_audit(datasets, cfg.rewards)
    print(report.table())
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(report.to_json())
        print(f"audit written to {args.out}", file=sys.stderr)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from recipe_arena.eval.report import write_report

    print(write_report(*args.run_dirs))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from recipe_arena.compare import run_comparison

    try:
        return run_comparison(args.items)
    except KeyboardInterrupt:
        return 130


def _cmd_study(args: argparse.Namespace) -> int:
    from recipe_arena.study import run_study

    try:
        return run_study(args.items)
    except KeyboardInterrupt:
        return 130


def _cmd_spurious_check(args: argparse.Namespace) -> int:
    from recipe_arena.eval.spurious import write_spurious_check

    print(write_spurious_check(args.spurious, args.real, args.out).read_text(), end="")
    return 0


def _add_spurious_check(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    sp = sub.add_parser(
        "spurious-check",
        help="flag held-out sets that rise under spurious rewards beyond seed noise",
    )
    sp.add_argument("--spurious", nargs="+", required=True, help="runs with spurious rewards")
    sp.add_argument("--real", nargs="*", default=[], help="runs of the same recipe, real rewards")
    sp.add_argument("--out", default="spurious_check", help="output folder")
    sp.set_defaults(fn=_cmd_spurious_check)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="recipe-arena", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="verb", required=True)
    run = sub.add_parser(
        "run",
        help="run a recipe (`run --help` lists the recipes, config groups and keys)",
        description=RUN_DESCRIPTION,
        add_help=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_help(run)
    add_verbose_flag(run)
    run.add_argument("overrides", nargs="*", help="recipe=NAME, GROUP=OPTION or KEY=VALUE (below)")
    run.add_argument("--cfg", choices=["job"], help="print the resolved config and exit")
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="validate the whole config, print the RL settings and the placement plan, exit",
    )
    run.set_defaults(fn=_cmd_run)
    ver = sub.add_parser("verify", help="score JSONL rows {domain, response, ground_truth, ...}")
    ver.add_argument("input")
    ver.add_argument("output", nargs="?")
    ver.add_argument("overrides", nargs="*")
    ver.set_defaults(fn=_cmd_verify)
    aud = sub.add_parser("audit", help="probe every verifier of the world with known hacks")
    aud.add_argument("--limit", type=int, default=50, help="tasks probed per dataset (default 50)")
    aud.add_argument(
        "--domains",
        default="",
        help=f"comma-separated domains (default {','.join(POOLED_DOMAINS)}; chat runs the LM judge)",
    )
    aud.add_argument("--out", help="write the full report (per task and hack) as JSON")
    aud.add_argument("overrides", nargs="*")
    aud.set_defaults(fn=_cmd_audit)
    rep = sub.add_parser(
        "report",
        help="(re)write report.md and report.html of a run directory; of several runs or a "
        "comparison directory, the comparative report; of a study directory, the study report",
    )
    rep.add_argument("run_dirs", nargs="+")
    rep.set_defaults(fn=_cmd_report)
    _add_compare(sub)
    _add_study(sub)
    _add_lm_eval(sub)
    _add_spurious_check(sub)
    return p


def _cmd_lm_eval(args: argparse.Namespace) -> int:
    import tempfile

    from recipe_arena.eval.harness import evaluate_target

    if args.k < 1 or (args.limit is not None and args.limit < 1):
        raise ConfigError(f"--k={args.k} --limit={args.limit}: both must be positive")
    extra = [t for t in args.tasks.split(",") if t]
    with tempfile.TemporaryDirectory(prefix="recipe-arena-tasks-") as tmp:
        results = evaluate_target(args.target, args.overrides, args.k, args.limit, extra, tmp)
    for task, metrics in results.items():
        print(
            task
            + ": "
            + ", ".join(f"{m.split(',')[0]} {v:.4f}" for m, v in sorted(metrics.items()))
        )
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
        print(f"results written to {args.out}", file=sys.stderr)
    return 0


def _add_lm_eval(sub: Any) -> None:
    lme = sub.add_parser(
        "lm-eval",
        help="evaluate a run's final checkpoint (or a checkpoint) through lm-evaluation-harness "
        "on the world's held-out sets as local tasks: pass@1 and pass@k",
    )
    lme.add_argument("target", help="a run directory or a checkpoint directory")
    lme.add_argument("--k", type=int, default=1, help="samples per question (pass@k; default 1)")
    lme.add_argument("--limit", type=int, default=None, help="questions per task (default all)")
    lme.add_argument("--tasks", default="", help="other lm-eval tasks to add (available offline)")
    lme.add_argument("--out", help="write the results as JSON")
    lme.add_argument("overrides", nargs="*", help="config overrides for a checkpoint directory")
    lme.set_defaults(fn=_cmd_lm_eval)


def _add_compare(sub: Any) -> None:
    from recipe_arena.compare import __doc__ as compare_doc

    cmp = sub.add_parser(
        "compare",
        help="arms x seeds in a paired design, then the comparative report",
        description=compare_doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmp.add_argument(
        "items",
        nargs="*",
        metavar="key=value",
        help="recipe=, axis=, arms=[...], seeds=N|[..], aa=true, baseline=, jobs=, out_dir=, "
        "name=; anything else (budget=smoke, rl.steps=40) applies to every arm",
    )
    cmp.set_defaults(fn=_cmd_compare)


def _add_study(sub: Any) -> None:
    from recipe_arena.study import __doc__ as study_doc

    st = sub.add_parser(
        "study",
        help="a study of several comparisons (studies/<name>.yaml): run, resume, report",
        description=study_doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    st.add_argument(
        "items",
        nargs="+",
        metavar="FILE [key=value]",
        help="the study file, then jobs=N, rows=a,b (only these rows), out_dir=DIR",
    )
    st.set_defaults(fn=_cmd_study)


def main(argv: list[str] | None = None) -> int:
    offline_env()
    args = _parser().parse_args(argv)
    configure_output(getattr(args, "verbose", False))
    if args.verb == "verify" and args.output and "=" in args.output:
        args.overrides.insert(0, args.output)
        args.output = None
    try:
        return int(args.fn(args))
    except ConfigError as e:
        print(f"recipe-arena: config error: {e}", file=sys.stderr)
        return EXIT_CONFIG
    except ArtifactError as e:  # a report's input damaged: no figure from part of it
        print(f"recipe-arena: damaged artifact: {e}", file=sys.stderr)
        return EXIT_CONFIG


def entry() -> None:
    """The command line (the ``recipe-arena`` script and ``python -m recipe_arena.cli``):
    ``main``, then, when it returns, the exit a normal interpreter shutdown makes, less
    its last part. Non-daemon threads are joined and exit handlers run (verifier pools,
    Ray, W&B, logging), as at any exit; the process then ends without freeing every module
    and object one by one, a second or more once torch and transformers are loaded. An
    exception or ``SystemExit`` (``--help``, a usage error) takes the usual path."""
    rc = main()
    shutdown = getattr(threading, "_shutdown", None)
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if shutdown is None or run_exit_handlers is None:  # another Python: the usual exit
        sys.exit(rc)
    shutdown()
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream
            stream.flush()
    os._exit(rc)


if __name__ == "__main__":
    entry()
