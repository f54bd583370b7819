"""The comparative report: report.md and a self-contained report.html.

Sections: what was compared; the settings that differ between arms (Table 9.2's
style, nothing else); held-out pass@1 per arm and domain with 95% intervals (two-way
t over seeds and questions); the paired difference of each arm to the
baseline per domain (95% interval, p-value, Holm-corrected p-value, minimum
detectable effect, verdict); the A/A control; learning speed (the paired area under the
held-out curve, tested like the final scores, and the learner tokens to reach 80% of the
baseline's gain); the compute each arm used, under the matching rule; what each arm's
RL stage did (training reward, lengths, truncation, lag: ``eval.behaviour``); ScaleRL's
compute-curve fit per arm; reward, length and staleness curves (mean over seeds and
their range); the runs. Every figure comes with its interval, and a difference whose
corrected p-value is not below 0.05 is labelled "inside the noise".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recipe_arena.eval import curve_fit, stats
from recipe_arena.eval.behaviour import behaviour_table
from recipe_arena.eval.comparison import (
    MATCHING_RULE,
    MEAN,
    ArmData,
    Columns,
    Comparison,
    arm_estimate,
    check_questions,
    columns,
    config_differences,
    curve_data,
    group_runs,
    identical,
    load_comparison,
    paired_comparisons,
    series,
)
from recipe_arena.eval.speed import Speed, speed_comparisons

CURVE_METRICS = {
    "reward/mean": "training reward",
    "length/mean": "response length (tokens)",
    "staleness/lag_mean": "policy lag of trained tokens (versions)",
    "staleness/kl_engine_trainer": "engine-trainer KL",
}
"""RL curves drawn per arm (the mean over seeds, and the band from lowest to highest)."""


def write_comparison_report(paths: Sequence[Path]) -> Path:
    """Write report.md and report.html into the comparison directory (or, for loose run
    directories, into the first one's parent as comparison_report.md/.html)."""
    from recipe_arena.eval.html import write_pages

    if len(paths) == 1 and (paths[0] / "comparison.json").exists():
        root = paths[0]
        plan, arms = load_comparison(root)
        title = f"Comparison: {root.name}"
        intro = [
            f"Recipe `{plan.recipe}`, "
            + (f"axis `{plan.axis}`" if plan.axis else "whole recipes")
            + f"; baseline `{plan.baseline}`; settings for every arm: "
            + (", ".join(f"`{c}`" for c in plan.common) or "none")
            + "."
        ]
        out = root
    else:
        arms = group_runs(paths)
        out = Path(paths[0]).parent / "comparison"
        out.mkdir(exist_ok=True)
        title = f"Comparison of {len(paths)} runs"
        intro = [f"Runs: {', '.join(str(p) for p in paths)}."]
    md = [f"# {title}", "", *intro, ""] + _body(arms, out)
    write_pages(out, title, md)
    return out / "report.md"


def _body(arms: list[ArmData], out: Path) -> list[str]:
    md = _arms_table(arms)
    ready = [a for a in arms if a.runs]
    if len(ready) < 1 or not arms[0].runs:
        return md + ["No finished baseline run with per-question scores yet.", ""]
    ref = check_questions(ready)
    cols = columns(ref)
    md += _config_table(ready)
    md += _pass_table(ready, cols, out)
    comps = paired_comparisons(ready, cols)
    md += _paired_table([c for c in comps if not c.control], ready)
    md += _control_section([c for c in comps if c.control])
    md += _speed_section(speed_comparisons(ready))
    md += _compute_table(ready)
    md += behaviour_table(ready)
    md += _curve_section(ready, cols, out)
    md += _rl_curves(ready, out)
    md += _runs_table(ready, out)
    return md


def _arms_table(arms: list[ArmData]) -> list[str]:
    md = ["## Arms", "", "| arm | role | seeds finished | not finished |", "|---|---|---|---|"]
    for i, a in enumerate(arms):
        role = "baseline" if i == 0 else ("A/A control" if a.control else "arm")
        seeds = ", ".join(str(s) for s in a.seeds) or "none"
        md.append(f"| {a.name} | {role} | {seeds} | {', '.join(a.missing) or '-'} |")
    return md + [""]


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    text = str(value) if not isinstance(value, float) else f"{value:g}"
    return text.replace("|", "\\|")


def _config_table(arms: list[ArmData]) -> list[str]:
    keys, values = config_differences(arms)
    names = [a.name for a in arms if not a.control]
    md = ["## Settings that differ between arms", ""]
    if not keys:
        return md + ["None: the arms share every setting (an A/A comparison).", ""]
    md += ["| setting | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for k in keys:
        md.append(
            f"| {k} | "
            + " | ".join(_cell(values[n][k]) if k in values[n] else "-" for n in names)
            + " |"
        )
    return md + [
        "",
        "Every other setting, the seeds and the evaluation prompts are the same in every arm.",
        "",
    ]


def _pass_table(arms: list[ArmData], cols: Columns, out: Path) -> list[str]:
    doms = [*cols.domains, MEAN]
    md = [
        "## Held-out pass@1 of the final checkpoints",
        "",
        "Mean over seeds and questions, with a 95% interval over both: the seed part "
        "(never taken below the residual noise) on Student's t with S - 1 degrees of "
        "freedom and the question part on Q - 1, "
        "combined in quadrature, so that it covers with 2 seeds too "
        f"(questions: {', '.join(f'{d} {len(cols.index[d])}' for d in cols.domains)}; "
        "`mean` is the unweighted mean over domains).",
        "",
        "| arm | seeds | " + " | ".join(doms) + " |",
        "|---" * (len(doms) + 2) + "|",
    ]
    est: dict[str, dict[str, stats.Estimate]] = {}
    for a in arms:
        y = a.final_SQ()
        est[a.name] = {d: arm_estimate(y, cols, d) for d in doms}
        md.append(
            f"| {a.name} | {len(a.runs)} | " + " | ".join(est[a.name][d].fmt() for d in doms) + " |"
        )
    if all(len(a.runs) == 1 for a in arms):
        md += ["", "One seed per arm: these intervals show question noise only, not seed noise."]
    md += ["", "![held-out pass@1 per domain](plot_compare_eval.png)", ""]
    _plot_eval(est, doms, out / "plot_compare_eval.png")
    return md


def _verdict(c: Comparison) -> str:
    if c.control:
        return "FALSE POSITIVE" if c.test.p < stats.ALPHA else "inside the noise (as it should be)"
    if identical([c]):  # [0, 0] and MDE 0 from no noise at all, not from precision
        return "identical scores"
    if c.p_holm >= stats.ALPHA:
        return "inside the noise"
    # one seed: the interval leaves out seed-to-seed noise, so it speaks of this draw only
    return "significant" if c.test.seeds > 1 else "significant for this seed only"


def _test_row(c: Comparison, with_holm: bool = True) -> str:
    t = c.test
    holm = f" {c.p_holm:.3g} |" if with_holm else ""
    # scores lie in [0, 1], so a difference lies in [-1, 1]: the interval is cut there
    diff = stats.Estimate(t.diff.value, max(-1.0, t.diff.lo), min(1.0, t.diff.hi))
    return (
        f"| {c.arm} | {c.domain} | {diff.fmt(signed=True)} | {t.p:.3g} |{holm} "
        f"{t.mde:.3f} | {t.seeds} x {t.units} | {_verdict(c)} |"
    )


def _paired_table(comps: list[Comparison], arms: list[ArmData]) -> list[str]:
    md = [f"## Paired differences to the baseline ({arms[0].name})", ""]
    if not comps:
        return md + ["No other arm has finished runs yet.", ""]
    md += [
        "Per question and seed: arm score minus baseline score (same seed, same question). "
        "The interval and p-value come from a two-way (seed x question) variance "
        "decomposition of these paired differences, its seed part never taken below the "
        "residual (seeds that agree by chance still carry each question's noise), and "
        "Student's t on the seeds' degrees of freedom (cut to the possible range [-1, 1]); "
        "questions asked twice "
        "count once. p (Holm) corrects for the number of arms compared; MDE is the "
        "smallest true difference this test finds with 80% power at the 5% level, at "
        "this design's estimated noise (with 2 seeds about 16 standard errors).",
        "",
        "| arm | domain | difference [95% interval] | p | p (Holm) | MDE | seeds x questions | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    md += [_test_row(c) for c in comps]
    return md + [""]


def _control_section(comps: list[Comparison]) -> list[str]:
    if not comps:
        return []
    md = [
        "## A/A control",
        "",
        "The baseline again on a second set of seeds, compared with the baseline as if it "
        "were an arm. Any difference here is noise, so a significant one is a false "
        "positive of this analysis on this world.",
        "",
        "| arm | domain | difference [95% interval] | p | MDE | seeds x questions | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    md += [_test_row(c, with_holm=False) for c in comps]
    flagged = sum(c.test.p < stats.ALPHA for c in comps)
    md += [
        "",
        f"{flagged} of {len(comps)} A/A tests significant at 5% (about 5% expected by chance).",
        "",
    ]
    return md


def _compute_table(arms: list[ArmData]) -> list[str]:
    md = [
        "## Compute",
        "",
        MATCHING_RULE + " Mean over seeds with a 95% t interval (its lower end clipped "
        "at 0): learner tokens, the parts of them the specialists and the distillation "
        "trained, the tokens the teachers scored, and the wall time of all stages.",
        "",
        "| arm | learner tokens | of which specialists | of which distillation "
        "| teacher tokens scored | wall time (s) | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for a in arms:
        cells = [
            _nonnegative(stats.t_interval(values)).fmt(0)
            for values in (
                [r.learner_tokens for r in a.runs],
                [r.specialist_tokens for r in a.runs],
                [r.distill_tokens for r in a.runs],
                [r.teacher_tokens for r in a.runs],
                [r.seconds for r in a.runs],
            )
        ]
        md.append(f"| {a.name} | " + " | ".join(cells) + f" | {len(a.runs)} |")
    return md + [""]


def _speed_section(speed: Speed | None) -> list[str]:
    md = ["## Learning speed: area under the held-out curve", ""]
    if speed is None or speed.cols is None:
        return md + [
            "Not measured: the baseline has no held-out curve of two evaluations "
            "(`rl.eval_every`).",
            "",
        ]
    doms = [*speed.cols.domains, MEAN]
    md += [
        "Per seed and question, the area under the held-out curve of the stage that "
        f"trains the final policy (`{speed.stage}`, evaluated at steps "
        f"{', '.join(map(str, speed.steps))}), normalised to its length: "
        "AUC = 1/(t_K - t_0) * sum_k (t_k - t_(k-1)) * (y_(k-1) + y_k) / 2, the time "
        "average of pass@1 over training (a flat curve at y has area y). Of two arms that "
        "end at the same score, the one that got there sooner has the larger area. The "
        "paired arm - baseline areas are tested as the final scores are (two-way "
        "interval, Holm across arms, MDE).",
        "",
        "| arm | seeds | " + " | ".join(doms) + " |",
        "|---" * (len(doms) + 2) + "|",
    ]
    for arm, by_dom in speed.auc.items():
        md.append(
            f"| {arm} | {speed.auc_runs[arm]} | " + " | ".join(by_dom[d].fmt() for d in doms) + " |"
        )
    if speed.comps:
        md += [
            "",
            "| arm | domain | area difference [95% interval] | p | p (Holm) | MDE "
            "| seeds x questions | verdict |",
            "|---|---|---|---|---|---|---|---|",
        ]
        md += [_test_row(c, with_holm=True) for c in speed.comps]
    if speed.excluded:
        md += [
            "",
            "Areas not compared: "
            + "; ".join(f"{arm}: {why}" for arm, why in speed.excluded.items())
            + ". Their learning speed is read off the learner tokens below.",
        ]
    pct = f"{speed.fraction:.0%}"
    md += [
        "",
        f"### Learner tokens to reach {pct} of the baseline's gain",
        "",
        f"Per seed: the target is the baseline's held-out pass@1 (mean over domains) at "
        f"the start of its curve plus {pct} of its gain to its last evaluation; each arm's "
        "learner tokens (the matching rule's, a pipeline's specialists or RL teacher "
        "counted before its student's first step) when its final policy's curve first "
        "reaches it, interpolated linearly between evaluations. Mean over the seeds with "
        "a target (the baseline gained there) with a 95% t interval, and the paired "
        "difference to the baseline's own tokens; an arm that misses the target in any "
        "seed is reported as not reached there, without a mean.",
        "",
        "| arm | learner tokens [95%] | minus the baseline's [95%] | per seed |",
        "|---|---|---|---|",
    ]
    for r in speed.reach:
        per_seed = ", ".join(
            f"s{s}: " + (f"{t:.0f}" if t is not None else "not reached" if ok else "no target")
            for s, t, ok in zip(r.seeds, r.tokens, r.targeted, strict=True)
        )
        missed = sum(t is None and ok for t, ok in zip(r.tokens, r.targeted, strict=True))
        if r.estimate:
            est = r.estimate.fmt(0)
        elif missed:
            est = f"not reached in {missed} of {len(r.tokens)} seeds"
        else:
            est = "no target"
        diff = r.diff.fmt(0, signed=True) if r.diff else "-"
        note = f" ({r.note})" if r.note else ""
        md.append(f"| {r.arm} | {est}{note} | {diff} | {per_seed} |")
    return md + [""]


def _nonnegative(e: stats.Estimate) -> stats.Estimate:
    return stats.Estimate(e.value, max(0.0, e.lo), e.hi)


def _curve_section(arms: list[ArmData], cols: Columns, out: Path) -> list[str]:
    md = [
        "## Compute curves (ScaleRL)",
        "",
        "Held-out pass@1 (mean over domains) against learner tokens C, fitted with "
        "R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B) on the evaluations in the first half "
        "of the compute (R0: the RL start) and scored on the rest (RMSE of the "
        "prediction). A is the asymptote, B the efficiency, C_mid the compute at half the "
        "gain; intervals from 200 bootstrap refits over seeds and questions. A (whole "
        "run) is the asymptote fitted on every evaluation.",
        "",
        "| arm | R0 [95%] | A [95%] | B [95%] | C_mid [95%] | RMSE on the rest [95%] | A (whole run) [95%] | points fit / scored |",
        "|---|---|---|---|---|---|---|---|",
    ]
    fits: dict[str, tuple[Any, Any, list[int]]] = {}
    unfit = []
    for a in arms:
        data = curve_data(a, cols)
        res = curve_fit.curve_analysis(data[0], data[1]) if data else None
        if data is not None:
            fits[a.name] = (data, res, data[2])
        if res is None:
            unfit.append(f"{a.name} ({len(data[2]) if data else 0} evaluations)")
            md.append(f"| {a.name} | - | - | - | - | - | - | - |")
            continue
        md.append(
            f"| {a.name} | {res.r0.fmt()} | {res.a.fmt()} | {res.b.fmt(2)} | "
            f"{_sci(res.c_mid)} | {res.rmse_rest.fmt()} | {res.full_a.fmt()} | "
            f"{res.fit_points} / {res.rest_points} |"
        )
    if unfit:
        md += [
            "",
            "Not fitted: " + ", ".join(unfit) + "; a fit needs the RL start and at least three "
            "evaluations in the first half of the compute (`rl.eval_every`).",
        ]
    if fits:
        _plot_compute(fits, out / "plot_compare_compute.png")
        md += ["", "![held-out pass@1 against compute](plot_compare_compute.png)"]
    return md + [""]


def _sci(e: stats.Estimate) -> str:
    return f"{e.value:.3g} [{e.lo:.3g}, {e.hi:.3g}]"


def _rl_curves(arms: list[ArmData], out: Path) -> list[str]:
    drawn = _plot_rl(arms, out / "plot_compare_rl.png")
    if not drawn:
        return []
    return [
        "## RL curves",
        "",
        "Mean over seeds per step, the band from the lowest to the highest seed.",
        "",
        "![RL curves per arm](plot_compare_rl.png)",
        "",
    ]


def _runs_table(arms: list[ArmData], out: Path) -> list[str]:
    md = ["## Runs", "", "| arm | seed | run directory | report |", "|---|---|---|---|"]
    for a in arms:
        for r in a.runs:
            try:  # a study row's runs are links under it: keep them, do not resolve them
                where = r.path.absolute().relative_to(out.absolute())
            except ValueError:
                where = r.path
            page = f"[report]({where}/report.html)" if (r.path / "report.html").exists() else "-"
            md.append(f"| {a.name} | {r.seed} | {where} | {page} |")
    return md + [""]


# ----------------------------------------------------------------------------- plots
def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plot_eval(est: dict[str, dict[str, stats.Estimate]], doms: list[str], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(min(12, 2 + 1.6 * len(doms)), 3.2))
    width = 0.8 / max(1, len(est))
    for i, (arm, by_dom) in enumerate(est.items()):
        xs = np.arange(len(doms)) + i * width
        vals = [by_dom[d].value for d in doms]
        errs = [
            [v - by_dom[d].lo for d, v in zip(doms, vals, strict=True)],
            [by_dom[d].hi - v for d, v in zip(doms, vals, strict=True)],
        ]
        ax.bar(xs, vals, width, yerr=errs, capsize=3, label=arm)
    ax.set_xticks(np.arange(len(doms)) + 0.4 - width / 2, doms)
    ax.set_ylabel("pass@1 (95% interval)", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _plot_compute(fits: dict[str, tuple[Any, Any, list[int]]], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for i, (arm, ((compute, scores, _), res, _steps)) in enumerate(fits.items()):
        color = f"C{i}"
        c_T, r_T = compute.mean(axis=0), scores.mean(axis=(0, 2))
        ax.plot(c_T, r_T, "o", color=color, label=arm)
        if res is not None:
            split = c_T[res.fit_points - 1]
            grid = np.linspace(0, c_T[-1], 200)
            pred = curve_fit.scaling_curve(grid, res.fit.r0, res.fit.a, res.fit.b, res.fit.c_mid)
            ax.plot(grid[grid <= split], pred[grid <= split], "-", color=color)
            ax.plot(grid[grid >= split], pred[grid >= split], "--", color=color)
    ax.set_xlabel("learner tokens", fontsize=8)
    ax.set_ylabel("held-out pass@1 (mean over domains)", fontsize=8)
    ax.set_title(
        "points: evaluations; solid: fit on the first half; dashed: its prediction", fontsize=8
    )
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _plot_rl(arms: list[ArmData], path: Path) -> bool:
    panels = [(m, t) for m, t in CURVE_METRICS.items() if any(series(a, m) for a in arms)]
    if not panels:
        return False
    plt = _pyplot()
    cols = min(2, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 2.8 * rows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (metric, title) in zip(axes.flat, panels, strict=False):
        for i, a in enumerate(arms):
            got = series(a, metric)
            if got is None:
                continue
            steps, v = got
            ax.plot(steps, v.mean(axis=0), color=f"C{i}", label=a.name)
            if v.shape[0] > 1:
                ax.fill_between(steps, v.min(axis=0), v.max(axis=0), color=f"C{i}", alpha=0.2)
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("RL step", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True
