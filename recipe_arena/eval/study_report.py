"""The study report (``recipe-arena study``): report.md and a self-contained report.html.

Read only from the study directory: ``study.json`` and each comparison directory under
``rows/`` (whose runs link to the shared ``runs/``). Sections:

1. A summary shaped like Table 9.2: per row, regime and alternative, the effect on
   held-out pass@1 per domain against OLMo 3's choice (paired difference, 95%
   interval), the minimum detectable effect on math (the mean over domains where math
   is not evaluated) and a verdict. An effect is "better" or "worse" when its
   Holm-corrected p-value is below 0.05 (then its interval excludes 0), "inside the
   noise after Holm's correction" when only its uncorrected interval excludes 0, else
   "inside the noise", which says nothing smaller than the MDE is ruled out. An A/A control's
   line reads "inside the noise (as it should be)" or "FALSE POSITIVE". An alternative
   whose scores equal the baseline's on every question of every seed reads "identical"
   (``IDENTICAL``): its zero interval and MDE say the arms ran alike, not that the design
   is precise, and a claim read from it is not put to a test.
   A second summary table gives each alternative's learning speed the same way: the
   paired difference in the area under the held-out curve (``speed.speed_comparisons``),
   with its interval, MDE and verdict.
2. One section per row and regime: the row's design note, the comparison's paired
   differences, its learning speed, the compute each arm used (under the matching rule,
   ``comparison.MATCHING_RULE``) and its figures (every row also has its full comparison report, with
   the learning curves and their fit, in ``rows/<row>.<regime>/report.md``).
3. The findings: each claim of the study file, the comparison it is read from, and
   whether this world confirms it, refutes it, or cannot tell at its MDE.
4. The study's cross-row tables (``eval.study_tables``): its contrasts between groups
   of rows, the power of each comparison, and the time each row took.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from recipe_arena.comparison_plan import ArtifactError, read_json
from recipe_arena.eval import stats
from recipe_arena.eval.behaviour import behaviour_table
from recipe_arena.eval.comparison import (
    MEAN,
    ArmData,
    Columns,
    Comparison,
    check_questions,
    columns,
    identical,
    load_comparison,
    paired_comparisons,
)
from recipe_arena.eval.comparison_report import (
    _compute_table,
    _paired_table,
    _speed_section,
    write_comparison_report,
)
from recipe_arena.eval.html import write_pages
from recipe_arena.eval.speed import Speed, speed_comparisons
from recipe_arena.eval.study_tables import contrasts_section, power_section, time_section
from recipe_arena.study_spec import StudySpec, first_error, seeds_of

MDE_DOMAIN = "math"
"""The domain whose MDE the summary prints (the mean over domains when absent)."""


@dataclass
class RowResult:
    row: str
    title: str
    regime: str
    path: Path
    arms: list[ArmData]
    comps: list[Comparison]
    domains: list[str]
    cols: Columns | None = None
    """The final scores' questions by domain (None until two arms have finished)."""
    note: str = ""
    """Why there are no comparisons yet (nothing finished), else empty."""
    speed: Speed | None = None
    """Learning speed against OLMo 3's choice (None until the baseline has a curve)."""
    design: str = ""
    """The row's design note from the study file."""


def verdict(c: Comparison) -> str:
    """better / worse (Holm-corrected p below 0.05, by the sign of the difference), or
    inside the noise; for the A/A control, whether it stayed inside it. No verdict from
    one seed (a study still running): its interval covers the questions alone, not the
    seed-to-seed noise that a claim about the arm must include."""
    if c.test.seeds < 2:
        return "one seed so far: no verdict"
    if c.control:
        return "FALSE POSITIVE" if c.test.p < stats.ALPHA else "inside the noise (as it should be)"
    if c.p_holm < stats.ALPHA:
        return "better" if c.test.diff.value > 0 else "worse"
    if c.test.p < stats.ALPHA:
        return HOLM_ONLY
    return "inside the noise"


HOLM_ONLY = "inside the noise after Holm's correction"
"""The verdict of a difference whose own 95% interval excludes 0 but whose p-value,
corrected for the row's several alternatives, is not below 0.05: the printed interval
is the uncorrected one, so the verdict says which rule decided."""

IDENTICAL = "identical: the same score on every question of every seed"
"""The verdict of an arm whose held-out scores equal the baseline's on every question of
every paired seed, in every domain: its interval is [0, 0] and its MDE 0 only because
there is no noise to measure, not because the design is precise. What such an arm
changes never reached the held-out scores on this world, so it tests nothing there."""


def read_study(root: Path) -> dict:
    """The study's ``study.json`` as stored; ArtifactError naming it when it is not a
    valid study (``study_spec.StudySpec``), since the report's rows, seeds and findings
    are read from it."""
    path = root / "study.json"
    spec = read_json(path)
    try:
        StudySpec.model_validate(spec)
    except ValidationError as e:
        raise ArtifactError(f"{path}: not a study ({first_error(e)})") from None
    return dict(spec)


def load_rows(root: Path, render: bool = True) -> tuple[dict, list[RowResult]]:
    """The study file as stored and each of its comparisons (re-rendering each row's
    own report on the way when ``render``; without it nothing is written)."""
    spec = read_study(root)
    out: list[RowResult] = []
    for row in spec["rows"]:
        for regime in row["regimes"]:
            path = root / "rows" / f"{row['name']}.{regime}"
            res = RowResult(row["name"], row.get("title") or row["name"], regime, path, [], [], [])
            res.design = row.get("design") or ""
            out.append(res)
            if not (path / "comparison.json").exists():
                res.note = "not run yet (not among the rows= chosen so far)"
                continue
            if render:
                write_comparison_report([path])
            _, arms = load_comparison(path)
            ready = [a for a in arms if a.runs]
            res.arms = arms
            if not arms[0].runs or len(ready) < 2:
                res.note = "not enough finished runs yet"
                continue
            res.cols = cols = columns(check_questions(ready))
            res.domains = [*cols.domains, MEAN]
            res.comps = paired_comparisons(ready, cols)
            res.speed = speed_comparisons(ready)
    return spec, out


def _summary(rows: list[RowResult]) -> list[str]:
    final = _summary_table(rows, lambda r: r.comps, lambda r: r.domains)
    speed = _summary_table(
        rows,
        lambda r: r.speed.comps if r.speed else [],
        lambda r: [*r.speed.cols.domains, MEAN] if r.speed and r.speed.cols else [],
        lambda r: (
            "; ".join(f"{a}: {why}" for a, why in r.speed.excluded.items())
            if r.speed and r.speed.excluded
            else ""
        ),
    )
    mde_dom = final[0]
    return [
        "## Summary",
        "",
        "Effect of each alternative on held-out pass@1 against OLMo 3's choice in the same "
        "row and regime: mean paired difference (same seed, same question) with its 95% "
        f"interval. MDE: the smallest true difference on {mde_dom} this design finds with "
        "80% power at the 5% level. Verdict: better or worse where the Holm-corrected "
        "p-value (over the row's alternatives) is below 0.05, per domain; inside the noise "
        "after Holm's correction where only the uncorrected interval shown excludes 0; "
        "else inside the noise. Identical: the arm's scores equal the baseline's on every "
        "question of every seed (the arms ran alike; a zero MDE there is no precision).",
        "",
        *final[1],
        "",
        "### Learning speed",
        "",
        "The same for the area under the held-out curve of the stage that trains the final "
        "policy (per seed and question, the trapezoid time average of pass@1 over its "
        "evaluations): a positive effect is an arm that learned faster. Areas compare only "
        "over the same stage and evaluation steps; each row's section gives the learner "
        "tokens to reach 80% of the baseline's gain, which compares any two arms.",
        "",
        *speed[1],
        "",
    ]


def _summary_table(
    rows: list[RowResult],
    comps_of: Callable[[RowResult], list[Comparison]],
    domains_of: Callable[[RowResult], list[str]],
    note_of: Callable[[RowResult], str] = lambda r: "",
) -> tuple[str, list[str]]:
    """(MDE domain, table lines) of the comparisons ``comps_of`` gives per row."""
    doms = list(dict.fromkeys(d for r in rows for d in domains_of(r))) or [MEAN]
    mde_dom = MDE_DOMAIN if MDE_DOMAIN in doms else MEAN
    md = [
        "| row | regime | OLMo 3's choice | alternative | "
        + " | ".join(doms)
        + f" | MDE ({mde_dom}) | verdict |",
        "|---|---|---|---|" + "---|" * len(doms) + "---|---|",
    ]
    for r in rows:
        base = _counted(r, r.arms[0].name) if r.arms else "-"
        comps = comps_of(r)
        note = note_of(r)
        if not comps:
            why = r.note or note or "no comparable arm"
            md.append(
                f"| {r.title} | {r.regime} | {base} | - | "
                + " | ".join("-" for _ in doms)
                + f" | - | {why} |"
            )
            continue
        for arm in dict.fromkeys(c.arm for c in comps):
            by_dom = {c.domain: c for c in comps if c.arm == arm}
            cells = [_effect(by_dom[d]) if d in by_dom else "-" for d in doms]
            mde = by_dom.get(mde_dom) or by_dom[MEAN]
            label = _counted(r, arm, "A/A control" if mde.control else arm)
            md.append(
                f"| {r.title} | {r.regime} | {base} | {label} | "
                + " | ".join(cells)
                + f" | {mde.test.mde:.3f} | {_row_verdict(list(by_dom.values()))} |"
            )
        if note:
            md.append(
                f"| {r.title} | {r.regime} | {base} | not compared | "
                + " | ".join("-" for _ in doms)
                + f" | - | {note} |"
            )
    return mde_dom, md


def _counted(r: RowResult, arm: str, label: str | None = None) -> str:
    """``label`` (default ``arm``) as the summary names the arm, with "(n of m seeds)"
    where some of its runs are not counted (unfinished, or their scores gone), so a
    figure from fewer seeds than the study lists says so where it is read."""
    data = next((a for a in r.arms if a.name == arm), None)
    label = label or arm
    if data is None or not data.missing:
        return label
    return f"{label} ({len(data.runs)} of {len(data.runs) + len(data.missing)} seeds)"


def _effect(c: Comparison) -> str:
    d = c.test.diff
    return stats.Estimate(d.value, max(-1.0, d.lo), min(1.0, d.hi)).fmt(signed=True)


def _row_verdict(comps: list[Comparison]) -> str:
    """One alternative's verdict over its domains (the mean over domains included)."""
    if comps[0].test.seeds < 2:
        return verdict(comps[0])
    if comps[0].control:
        bad = [c.domain for c in comps if verdict(c) == "FALSE POSITIVE"]
        return (
            f"FALSE POSITIVE on {', '.join(bad)}" if bad else "inside the noise (as it should be)"
        )
    if identical(comps):
        return IDENTICAL
    parts = []
    for word in ("better", "worse", HOLM_ONLY):
        doms = [c.domain for c in comps if verdict(c) == word]
        if doms:
            parts.append(f"{word} on {', '.join(doms)}")
    return "; ".join(parts) or "inside the noise"


def _row_section(r: RowResult, root: Path) -> list[str]:
    rel = r.path.relative_to(root)
    md = [f"## {r.title} ({r.regime})", ""]
    if r.design:
        md += [r.design, ""]
    if r.arms:
        md += [f"Full comparison report: [{rel}/report.md]({rel}/report.md).", ""]
    if r.comps and (missing := [m for a in r.arms for m in a.missing]):
        # a run without its scores (unfinished, or its artifacts gone): say what is left out
        md += [
            f"Not counted (not finished, or without per-question scores): {', '.join(missing)}; "
            "the figures of this row are from the other runs.",
            "",
        ]
    if not r.comps:
        return md + [r.note.capitalize() + ".", ""]
    ready = [a for a in r.arms if a.runs]
    parts = (
        _paired_table([c for c in r.comps if not c.control], ready)
        + _speed_section(r.speed)
        + _compute_table(ready)
        + behaviour_table(ready)
    )
    md += ["#" + line if line.startswith(("## ", "### ")) else line for line in parts]  # down
    for png, alt in (
        ("plot_compare_eval.png", "held-out pass@1 per arm"),
        ("plot_compare_compute.png", "held-out pass@1 against learner compute"),
        ("plot_compare_rl.png", "RL curves per arm"),
    ):
        if (r.path / png).exists():
            md += [f"![{r.title} ({r.regime}): {alt}]({rel}/{png})", ""]
    return md


def _findings(spec: dict, rows: list[RowResult]) -> list[str]:
    findings = spec.get("findings") or []
    if not findings:
        return []
    md = [
        "## Findings",
        "",
        "Each claim read off one comparison: confirmed when the effect is significant in "
        "the claimed direction (for a claim of no effect: not significant, and the whole "
        f"95% interval within ±{SAME_MARGIN:.2f}), refuted when it is significant the other "
        "way (or at all, for a claim of no effect), otherwise this world cannot tell at its "
        "MDE.",
        "",
        "| claim | row (regime) | arm vs OLMo 3's choice | domain | effect [95% interval] "
        "| MDE | verdict | this world |",
        "|---|---|---|---|---|---|---|---|",
    ]
    by_key = {(r.row, r.regime): r for r in rows}
    for f in findings:
        r = by_key.get((f["row"], f["regime"]))
        c = next(
            (x for x in (r.comps if r else []) if x.arm == f["arm"] and x.domain == f["domain"]),
            None,
        )
        where = f"{f['row']} ({f['regime']})"
        if c is None:
            md.append(
                f"| {f['claim']} | {where} | {f['arm']} | {f['domain']} | - | - | - | not run yet |"
            )
            continue
        v = verdict(c)
        if identical([x for x in r.comps if x.arm == f["arm"]]):  # type: ignore[union-attr]
            v = IDENTICAL
        md.append(
            f"| {f['claim']} | {where} | {f['arm']} | {f['domain']} | {_effect(c)} | "
            f"{c.test.mde:.3f} | {v} | "
            f"{judge(f['expect'], v, c.test.mde, (c.test.diff.lo, c.test.diff.hi))} |"
        )
    return md + [""]


SAME_MARGIN = 0.05
"""Pass@1 difference (absolute, 5 points) below which two arms count as the same: a
claim of no effect is confirmed only when the whole 95% interval lies inside
[-SAME_MARGIN, +SAME_MARGIN] (an equivalence test), the study's target resolution for
held-out math. Inside the noise with a wider interval cannot tell them apart."""


def judge(expect: str, v: str, mde: float, interval: tuple[float, float]) -> str:
    """Whether a claim that the arm is ``expect`` (better, worse, same) holds, given the
    comparison's verdict ``v``, its MDE and the 95% interval of its effect."""
    if v.startswith("one seed"):
        return "cannot tell yet (one seed)"
    if v == IDENTICAL:
        return "cannot tell: the arms ran alike (identical scores); the claim was not tested"
    if expect == "same":
        if not v.startswith("inside the noise"):
            return f"refutes ({v})"
        lo, hi = interval
        if lo >= -SAME_MARGIN and hi <= SAME_MARGIN:
            return f"confirms (the interval lies within ±{SAME_MARGIN:.2f})"
        return f"cannot tell (the interval reaches beyond ±{SAME_MARGIN:.2f}; MDE {mde:.3f})"
    if v == expect:
        return "confirms"
    if v in ("better", "worse"):
        return f"refutes ({v})"
    return f"cannot tell at MDE {mde:.3f}"


def write_study_report(root: Path) -> Path:
    """report.md and report.html of the study directory ``root``; returns report.md."""
    root = Path(root)
    spec, rows = load_rows(root)
    title = spec.get("title") or f"Study: {spec['name']}"
    seeds = ", ".join(str(s) for s in spec["seeds"])
    more = spec.get("regime_seeds") or {}
    for name in more:
        seeds += f" ({name}: " + ", ".join(map(str, seeds_of(spec["seeds"], more, name))) + ")"
    md = [
        f"# {title}",
        "",
        f"Recipe `{spec['recipe']}`, seeds {seeds}; settings of every run: "
        + (", ".join(f"`{c}`" for c in spec["common"]) or "none")
        + ". Regimes: "
        + "; ".join(
            f"**{name}** " + (", ".join(f"`{o}`" for o in ov) or "(no overrides)")
            for name, ov in spec["regimes"].items()
        )
        + ".",
        "",
    ]
    for name, note in (spec.get("regime_notes") or {}).items():
        md += [f"**{name}**: {note}", ""]
    if spec.get("threads"):
        md += [
            f"Every run used {spec['threads']} torch thread(s), whatever the jobs in parallel.",
            "",
        ]
    if "isa" in spec:  # a study.json written before the cap existed does not say
        md += [
            f"Every run's CPU kernels were capped at {spec['isa']}."
            if spec["isa"]
            else "The runs' CPU kernels were not capped: each used the widest set its machine has.",
            "",
        ]
    md += _summary(rows)
    for r in rows:
        md += _row_section(r, root)
    md += _findings(spec, rows)
    md += contrasts_section(spec, rows)
    md += power_section(rows)
    md += time_section(rows)
    write_pages(root, title, md)
    return root / "report.md"
