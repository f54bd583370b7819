"""`recipe-arena`: run a recipe, score responses, audit verifiers, render a report.

    recipe-arena run recipe=olmo3_think [group=option ...] [key.path=value ...] [--cfg job]
    recipe-arena verify IN.jsonl [OUT.jsonl] [key.path=value ...]
    recipe-arena audit [--limit N] [--domains math,code] [--out FILE] [key.path=value ...]
    recipe-arena report RUN_DIR
    recipe-arena spurious-check --spurious RUN... [--real RUN...] [--out DIR]

A bad recipe, option, key or value exits with status 2 and one line that names it and
what is allowed, before any work starts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import yaml

from recipe_arena.compose import ConfigError, load_config

EXIT_CONFIG = 2


def _offline_env() -> None:
    # Nothing may reach a model hub at run time.
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _cmd_run(args: argparse.Namespace) -> int:
    cfg = load_config(args.overrides)
    if args.cfg == "job":
        print(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False), end="")
        return 0
    from recipe_arena.pipeline import run_pipeline

    path = run_pipeline(cfg)
    print(f"run written to {path} (report: {path / 'report.md'})")
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    cfg = load_config(args.overrides)
    from recipe_arena.rewards.verify import verify_jsonl

    summary = verify_jsonl(args.input, args.output, cfg.rewards)
    print(json.dumps(summary), file=sys.stderr)
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    cfg = load_config(args.overrides)
    from recipe_arena.data.micro import build_world
    from recipe_arena.rewards.audit import run_audit

    domains = args.domains.split(",") if args.domains else ["math", "code", "ifeval"]
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

    print(write_report(args.run_dir))
    return 0


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
    run = sub.add_parser("run", help="run a recipe (Hydra overrides: group=option, key.path=value)")
    run.add_argument("overrides", nargs="*")
    run.add_argument("--cfg", choices=["job"], help="print the resolved config and exit")
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
        help="comma-separated domains (default math,code,ifeval; chat runs the LM judge)",
    )
    aud.add_argument("--out", help="write the full report (per task and hack) as JSON")
    aud.add_argument("overrides", nargs="*")
    aud.set_defaults(fn=_cmd_audit)
    rep = sub.add_parser("report", help="(re)write report.md and report.html of a run directory")
    rep.add_argument("run_dir")
    rep.set_defaults(fn=_cmd_report)
    _add_spurious_check(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    _offline_env()
    args = _parser().parse_args(argv)
    if args.verb == "verify" and args.output and "=" in args.output:
        args.overrides.insert(0, args.output)
        args.output = None
    try:
        return int(args.fn(args))
    except ConfigError as e:
        print(f"recipe-arena: config error: {e}", file=sys.stderr)
        return EXIT_CONFIG


if __name__ == "__main__":
    sys.exit(main())
