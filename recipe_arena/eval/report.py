"""report.md and report.html for one run, drawn only from its artifacts.

Reads ``metrics.jsonl`` (and ``eval.json`` and ``eval_scores.jsonl`` when present),
plots every ``loss/``, ``reward/`` and ``eval/`` series per stage, and writes
``report.md`` and ``report.html``: the same tables and plots, the HTML page
self-contained (``eval.html``). ``write_report`` on a comparison directory (or several
run directories) writes the comparative report instead (``eval.comparison``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from recipe_arena.eval.html import write_pages
from recipe_arena.eval.report_distill import distill_section
from recipe_arena.eval.report_dpo import dpo_section
from recipe_arena.rundir import read_metrics

PLOTTED_PREFIXES = ("loss/", "reward/", "eval/")
PLOTS_PER_ROW = 4
"""Metric plots of one stage are laid out in rows of this many panels."""
COLORS = {"math": "C0", "code": "C1", "ifeval": "C2", "chat": "C3", "mean": "black"}
"""One colour per domain in every plot (the mean over domains in black)."""


def _series(records: list[dict[str, Any]]) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """stage -> metric -> [(step, value)] for plotted numeric metrics."""
    out: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        for k, v in r.items():
            if k.startswith(PLOTTED_PREFIXES) and isinstance(v, int | float):
                out[str(r.get("stage", "?"))][k].append((int(r.get("step", 0)), float(v)))
    return out


def _plot(stage: str, metrics: dict[str, list[tuple[int, float]]], path: Path) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [m for m, pts in sorted(metrics.items()) if len(pts) >= 2]
    if not names:
        return False
    cols = min(PLOTS_PER_ROW, len(names))
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.5 * rows), squeeze=False)
    for ax in axes.flat[len(names) :]:
        ax.set_visible(False)
    for ax, name in zip(axes.flat, names, strict=False):
        xs, ys = zip(*metrics[name], strict=True)
        ax.plot(xs, ys, marker="." if len(xs) < 30 else None)
        # A fixed title height (y=1.02) spares matplotlib measuring each panel's top
        # tick labels to place its title, and at most 4 ticks an axis spares building
        # tick objects no one reads at this size: together about half the drawing time.
        ax.set_title(name, fontsize=8, y=1.02)
        ax.set_xlabel("step", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.locator_params(nbins=4)
    # Fixed margins in inches rather than tight_layout, which measures every label of
    # every panel: the stage's name 0.1 in from the top, the first row's titles below it.
    height = 2.5 * rows
    fig.suptitle(stage, fontsize=9, y=1 - 0.1 / height, va="top")
    fig.subplots_adjust(
        left=0.25 / (3.2 * cols) + 0.04,
        right=0.99,
        bottom=0.45 / height,
        top=1 - 0.6 / height,
        hspace=0.75,
        wspace=0.35,
    )
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def write_report(*paths: str | Path) -> Path:
    """report.md and report.html of one run directory; of a comparison directory or of
    several run directories, the comparative report; of a study directory, the study
    report. Returns the report.md written."""
    if len(paths) == 1 and (Path(paths[0]) / "study.json").exists():
        from recipe_arena.eval.study_report import write_study_report

        return write_study_report(Path(paths[0]))
    if len(paths) != 1 or (Path(paths[0]) / "comparison.json").exists():
        from recipe_arena.eval.comparison_report import write_comparison_report

        return write_comparison_report([Path(p) for p in paths])
    return write_run_report(paths[0])


def write_run_report(run_path: str | Path) -> Path:
    run_path = Path(run_path)
    records = read_metrics(run_path) if (run_path / "metrics.jsonl").exists() else []
    series = _series(records)
    eval_path = run_path / "eval.json"
    final_eval: dict[str, float] = json.loads(eval_path.read_text()) if eval_path.exists() else {}
    stages_path = run_path / "stages.json"
    stages: dict[str, Any] = json.loads(stages_path.read_text()) if stages_path.exists() else {}

    md = [f"# Run report: {run_path.name}", ""]
    if stages.get("done"):
        md += ["| stage | seconds |", "|---|---|"]
        md += [f"| {s} | {t:.1f} |" for s, t in stages["done"].items()]
        md.append("")
    if final_eval:
        md += ["## Held-out evaluation (final checkpoint)", "", "| metric | value |", "|---|---|"]
        md += [
            f"| {k} | {v:.3f} |"
            for k, v in sorted(final_eval.items())
            if isinstance(v, int | float)
        ]
        md.append("")
    md += _final_intervals(run_path)
    md += dpo_section(run_path)
    md += distill_section(records)
    if "rlvr" in series:
        md += _rl_curves(series["rlvr"], run_path)
        md += _length_curve(series["rlvr"], run_path)
    for stage, metrics in series.items():
        last = {m: pts[-1][1] for m, pts in metrics.items()}
        md += [f"## {stage}", "", "| metric | last | steps |", "|---|---|---|"]
        md += [f"| {m} | {v:.4g} | {len(metrics[m])} |" for m, v in sorted(last.items())]
        png = run_path / f"plot_{stage}.png"
        if _plot(stage, metrics, png):
            md += ["", f"![{stage}]({png.name})"]
        md.append("")
    write_pages(run_path, f"Run report: {run_path.name}", md)
    return run_path / "report.md"


def _final_intervals(run_path: Path) -> list[str]:
    """Held-out pass@1 of the final checkpoint per domain with a 95% bootstrap interval
    over its questions (one run: the interval shows question noise only; seed-to-seed
    noise needs `recipe-arena compare`)."""
    import numpy as np

    from recipe_arena.eval.scores import final_scores, read_eval_scores
    from recipe_arena.eval.stats import bootstrap_mean

    final = final_scores(read_eval_scores(run_path))
    if final is None:
        return []
    md = [
        "## Held-out pass@1 with 95% intervals (questions resampled)",
        "",
        "| domain | pass@1 [95% interval] | questions |",
        "|---|---|---|",
    ]
    for domain in sorted(set(final.domains)):
        y = np.array([[s for s, d in zip(final.scores, final.domains, strict=True) if d == domain]])
        md.append(f"| {domain} | {bootstrap_mean(y).fmt()} | {y.shape[1]} |")
    md.append("")
    return md


def _rl_curves(metrics: dict[str, list[tuple[int, float]]], run_path: Path) -> list[str]:
    """The RL stage at a glance: held-out pass@1 per domain at each evaluated step with
    its change from the RL start, split into the rows it fixed and the rows it broke
    (``eval.evaluate.churn``), and one figure of the training reward per domain
    (left) and the held-out pass@1 per domain (right) against the step."""
    evals = sorted(m for m in metrics if m.startswith("eval/") and m.endswith("/pass@1"))
    rewards = sorted(
        m
        for m in metrics
        if m == "reward/mean" or (m.startswith("reward/") and m.endswith("/mean"))
    )
    md = ["## RL: reward and held-out curves", ""]
    if evals:
        domains = [m.split("/")[1] for m in evals]
        by_step: dict[int, dict[str, float]] = defaultdict(dict)
        for m, d in zip(evals, domains, strict=True):
            for step, v in metrics[m]:
                by_step[step][d] = v
        steps = sorted(by_step)
        md += ["| step | " + " | ".join(domains) + " |", "|---" * (len(domains) + 1) + "|"]
        md += [
            f"| {t} | "
            + " | ".join(f"{by_step[t].get(d, float('nan')):.3f}" for d in domains)
            + " |"
            for t in steps
        ]
        first, last = by_step[steps[0]], by_step[steps[-1]]
        md.append(
            f"| change {steps[0]} -> {steps[-1]} | "
            + " | ".join(f"{last.get(d, 0.0) - first.get(d, 0.0):+.3f}" for d in domains)
            + " |"
        )
        for kind, sign in (("fixed", "+"), ("broken", "-")):  # the change = fixed - broken
            if any(f"eval/{d}/{kind}" in metrics for d in domains):
                md.append(
                    f"| {kind} by step {steps[-1]} | "
                    + " | ".join(_last(metrics, f"eval/{d}/{kind}", sign) for d in domains)
                    + " |"
                )
        md.append("")
    if rewards or evals:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
        for ax, names, title in (
            (left, rewards, "training reward (mean over the step's rollouts)"),
            (right, evals, "held-out pass@1"),
        ):
            for name in names:
                xs, ys = zip(*metrics[name], strict=True)
                label = name.split("/")[1] if name.count("/") == 2 else "mean"
                ax.plot(
                    xs,
                    ys,
                    marker="o" if len(xs) < 12 else None,
                    label=label,
                    color=COLORS.get(label),
                )
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("RL step", fontsize=8)
            ax.tick_params(labelsize=7)
            if names:
                ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(run_path / "plot_rl_curves.png", dpi=90)
        plt.close(fig)
        md += ["![RL curves](plot_rl_curves.png)", ""]
    return md


def _length_curve(metrics: dict[str, list[tuple[int, float]]], run_path: Path) -> list[str]:
    """Response length under RL: the mean length of the step's rollouts
    (``length/mean``, tokens) and of the greedy held-out responses per domain
    (``eval/<domain>/tokens``) against the step, with the ratio end / start of each."""
    names = ["length/mean"] if len(metrics.get("length/mean", [])) >= 2 else []
    names += sorted(m for m in metrics if m.startswith("eval/") and m.endswith("/tokens"))
    if not names:
        return []
    md = [
        "## RL: response length",
        "",
        "| series | start | end | end / start |",
        "|---|---|---|---|",
    ]
    for name in names:
        pts = metrics[name]
        first, last = pts[0][1], pts[-1][1]
        ratio = f"{last / first:.2f}" if first > 0 else "nan"
        md.append(f"| {name} | {first:.1f} | {last:.1f} | {ratio} |")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for name in names:
        xs, ys = zip(*metrics[name], strict=True)
        label = "rollouts (mean)" if name == "length/mean" else f"held-out {name.split('/')[1]}"
        color = "black" if name == "length/mean" else COLORS.get(name.split("/")[1])
        ax.plot(xs, ys, label=label, color=color, marker="o" if len(xs) < 12 else None)
    ax.set_title("response length (tokens)", fontsize=9)
    ax.set_xlabel("RL step", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(run_path / "plot_rl_length.png", dpi=90)
    plt.close(fig)
    return [*md, "", "![RL response length](plot_rl_length.png)", ""]


def _last(metrics: dict[str, list[tuple[int, float]]], name: str, sign: str) -> str:
    series = metrics.get(name)
    return f"{sign}{series[-1][1]:.3f}" if series else ""
