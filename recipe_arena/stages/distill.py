"""The specialists stage and the on-policy distillation stages, on the RLVR stage's code.

specialists (Kimi K3): for each route ``domain/effort`` of ``specialists.routes()``,
``stages.rlvr.run_rlvr`` from the current checkpoint on the training prompts of that
domain and effort alone, ``specialists.steps`` steps, evaluated on the held-out prompts
of the same route; metrics under the stage ``specialist_<domain>_<effort>``, the
checkpoint under ``checkpoints/specialist_<domain>_<effort>/final``. A specialist whose
final checkpoint exists (a resumed run) is not trained again.

mopd / opd: ``run_rlvr`` of the student with the actors scoring every group with its
prompt's teacher (``distill.teachers.TeacherPool``) and the ``distill`` advantage, on
the training prompts some route serves, ``distill.steps`` steps, the zero-gradient
filter and active sampling off (rewards play no part in the advantage). MOPD weighs the
routed domains equally, so that the student learns from every specialist; OPD (a
single ``*`` teacher) keeps ``rl.domain_weights``, the mixture its teacher trained on.
Afterwards each route's teacher and the student are evaluated on that route's held-out
prompts (``route/<teacher>/<domain>/teacher``, ``.../student``, ``.../ratio`` =
student / teacher) under the stage's name at step ``distill.steps``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from recipe_arena.config import RunConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.distill.teachers import ANY, route_for, routed_rows, teacher_name
from recipe_arena.rundir import RunDir


def specialist_stage(route: str) -> str:
    """The stage name of a specialist: ``math/high`` -> ``specialist_math_high``."""
    return "specialist_" + route.replace("/", "_")


def rows_of(route: str, rows: Sequence[PromptRow]) -> list[PromptRow]:
    """The rows that ``route`` matches (exactly what ``route_for`` would send to it)."""
    return routed_rows(rows, {route: ""})


def run_specialists(
    cfg: RunConfig,
    run: RunDir,
    init: Path,
    train_rows: Sequence[PromptRow],
    heldout_rows: Sequence[PromptRow],
) -> dict[str, str]:
    """Train every specialist from ``init``; return route -> its final checkpoint."""
    from recipe_arena.stages.rlvr import run_rlvr

    out: dict[str, str] = {}
    for route in cfg.specialists.routes():
        stage = specialist_stage(route)
        final = run.checkpoints / stage / "final"
        if not final.exists():
            rows = rows_of(route, train_rows)
            if not rows:
                raise RuntimeError(
                    f"specialist {route}: no training prompt of that domain and effort"
                )
            scfg = specialist_config(cfg, route)
            run_rlvr(scfg, run, init, rows, rows_of(route, heldout_rows), stage=stage)
        out[route] = str(final)
    return out


def specialist_config(cfg: RunConfig, route: str) -> RunConfig:
    """The RL config of the specialist of ``route``: ``specialists.steps`` steps, its
    domain alone in the mixture (the prompts are already that route's)."""
    rl = cfg.rl.model_copy(
        update={"steps": cfg.specialists.steps, "domain_weights": {route.split("/")[0]: 1.0}}
    )
    return cfg.model_copy(update={"rl": rl})


def distill_config(cfg: RunConfig, teachers: dict[str, str]) -> RunConfig:
    """The RL config a distillation stage runs: ``distill.steps`` steps at ``distill.lr``,
    the ``distill.advantage``, no zero-gradient filter or active sampling, the
    distillation mixture."""
    rl = cfg.rl.model_copy(
        update={
            "steps": cfg.distill.steps,
            "lr": cfg.distill.lr,
            "zero_gradient_filter": False,
            "active_sampling": False,
            "domain_weights": distill_domain_weights(cfg, teachers),
        }
    )
    return cfg.model_copy(update={"rl": rl, "advantage": cfg.distill.advantage})


def roles(
    cfg: RunConfig,
    stage: str,
    current: str,
    specialists: dict[str, str],
    rl_input: str | None,
) -> tuple[str, dict[str, str]]:
    """(student, route -> teacher checkpoint) of a distillation stage. ``distill.teachers``
    when set, with the current checkpoint as the student; otherwise mopd: the current
    checkpoint learns from ``specialists`` (the specialists stage's routes); opd: the
    RL stage's input ``rl_input`` learns from the current checkpoint (the RL output),
    the single teacher of every prompt."""
    if cfg.distill.teachers:
        return current, dict(cfg.distill.teachers)
    if stage == "mopd":
        return current, dict(specialists)
    if rl_input is None:  # config_checks.check_stages stops this before any work
        raise RuntimeError("stage 'opd' needs the rlvr stage before it or distill.teachers")
    return rl_input, {ANY: current}


def distill_domain_weights(cfg: RunConfig, teachers: dict[str, str]) -> dict[str, float]:
    """The prompt mixture of a distillation stage (module docstring)."""
    if ANY in teachers:
        return {str(d): w for d, w in cfg.rl.domain_weights.items()}
    return {route.split("/")[0]: 1.0 for route in teachers}


def run_distill(
    cfg: RunConfig,
    run: RunDir,
    student: Path,
    teachers: dict[str, str],
    train_rows: Sequence[PromptRow],
    heldout_rows: Sequence[PromptRow],
    *,
    stage: str,
) -> Path:
    """On-policy distillation of ``student`` from ``teachers`` (route -> checkpoint);
    returns the student's final checkpoint."""
    from recipe_arena.stages.rlvr import run_rlvr

    rows = routed_rows(train_rows, teachers)
    if not rows:
        raise RuntimeError(
            f"stage {stage!r}: no training prompt has a teacher ({sorted(teachers)})"
        )
    final = run_rlvr(
        distill_config(cfg, teachers),
        run,
        student,
        rows,
        heldout_rows,
        stage=stage,
        teachers=teachers,
    )
    routes = compare_routes(cfg, final, teachers, heldout_rows)
    # a run killed after this line and resumed finds its RL steps done and gets here
    # again: the comparison is logged once
    run.drop_records(
        lambda r: r.get("stage") == stage and any(str(k).startswith("route/") for k in r)
    )
    run.log(stage, cfg.distill.steps, routes)
    return final


def compare_routes(
    cfg: RunConfig, student: Path, teachers: dict[str, str], heldout_rows: Sequence[PromptRow]
) -> dict[str, float]:
    """Held-out pass@1 of each route's teacher and of the student on that route's
    held-out prompts, per domain, and their ratio (student / teacher; 0 when the
    teacher scores 0). Evaluations are cached in the checkpoints."""
    from recipe_arena.eval.final import evaluate_checkpoint

    out: dict[str, float] = {}
    for route, checkpoint in sorted(teachers.items()):
        rows = [r for r in heldout_rows if route_for(r, teachers) == route]
        if not rows:
            continue
        teacher = evaluate_checkpoint(cfg, Path(checkpoint), rows).metrics
        mine = evaluate_checkpoint(cfg, student, rows).metrics
        for domain in sorted({r.domain for r in rows}):
            key = f"eval/{domain}/pass@1"
            name = f"route/{teacher_name(route)}/{domain}"
            out[f"{name}/teacher"] = teacher[key]
            out[f"{name}/student"] = mine[key]
            out[f"{name}/ratio"] = mine[key] / teacher[key] if teacher[key] > 0 else 0.0
    return out
