"""The distillation section of a run report (Kimi K3's specialists + MOPD, DeepSeek's
RL + OPD), drawn from metrics.jsonl: each specialist's held-out pass@1 on its own
route before and after its RL, each route's teacher against the distilled student on
that route's held-out prompts (``route/<teacher>/<domain>/...``), and the per-token
teacher-student gap per teacher over the distillation steps (``distill/<teacher>/...``)."""

from __future__ import annotations

from typing import Any

DISTILL_STAGES = ("mopd", "opd")


def distill_section(records: list[dict[str, Any]]) -> list[str]:
    """Markdown lines; none when the run has no specialist or distillation stage."""
    md = _specialists(records)
    for stage in DISTILL_STAGES:
        mine = [r for r in records if r["stage"] == stage]
        if mine:
            md += _routes(stage, mine) + _gaps(stage, mine)
    return md


def _specialists(records: list[dict[str, Any]]) -> list[str]:
    rows: list[str] = []
    stages = sorted({r["stage"] for r in records if r["stage"].startswith("specialist_")})
    for stage in stages:
        evals = [r for r in records if r["stage"] == stage and "eval/mean/pass@1" in r]
        if not evals:
            continue
        first, last = evals[0], evals[-1]
        for key in sorted(k for k in last if k.startswith("eval/") and k.endswith("/pass@1")):
            if key == "eval/mean/pass@1":
                continue
            domain = key.split("/")[1]
            rows.append(
                f"| {stage.removeprefix('specialist_')} | {domain} | {first.get(key, 0.0):.3f} "
                f"| {last[key]:.3f} | {last['step']} |"
            )
    if not rows:
        return []
    return [
        "## Specialists: held-out pass@1 on their own domain and effort",
        "",
        "| specialist | domain | start | end | steps |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ]


def _routes(stage: str, records: list[dict[str, Any]]) -> list[str]:
    last = next((r for r in reversed(records) if any(k.startswith("route/") for k in r)), None)
    if last is None:
        return []
    md = [
        f"## {stage}: each teacher against the student on its route's held-out prompts",
        "",
        "| teacher | domain | teacher pass@1 | student pass@1 | student / teacher |",
        "|---|---|---|---|---|",
    ]
    for key in sorted(k for k in last if k.startswith("route/") and k.endswith("/teacher")):
        _, teacher, domain, _ = key.split("/")
        base = f"route/{teacher}/{domain}"
        md.append(
            f"| {teacher} | {domain} | {last[key]:.3f} | {last[base + '/student']:.3f} "
            f"| {last[base + '/ratio']:.2f} |"
        )
    return [*md, ""]


def _gaps(stage: str, records: list[dict[str, Any]]) -> list[str]:
    """Per teacher: the mean over steps of its per-token gap, |gap| and clipped share."""
    steps = [r for r in records if "distill/all/gap_mean" in r]
    teachers = sorted(
        {
            k.split("/")[1]
            for r in steps
            for k in r
            if k.startswith("distill/") and k.endswith("/tokens")
        }
    )
    if not teachers:
        return []
    md = [
        f"## {stage}: per-token gap log p_teacher - log p_student (nats, mean over steps)",
        "",
        "| teacher | steps | gap | abs gap | clipped share | first step abs gap | last step abs gap |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in teachers:
        mine = [r for r in steps if f"distill/{t}/gap_mean" in r]

        def mean(name: str, rows: list[dict[str, Any]] = mine, t: str = t) -> float:
            return sum(r[f"distill/{t}/{name}"] for r in rows) / len(rows)

        md.append(
            f"| {t} | {len(mine)} | {mean('gap_mean'):+.3f} | {mean('gap_abs_mean'):.3f} "
            f"| {mean('clipped_frac'):.3f} | {mine[0][f'distill/{t}/gap_abs_mean']:.3f} "
            f"| {mine[-1][f'distill/{t}/gap_abs_mean']:.3f} |"
        )
    return [*md, ""]
