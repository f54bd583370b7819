"""Spurious-reward control report: does held-out accuracy rise when rewards are random?

Runs trained with ``spurious_reward.enabled=true`` (random binary rewards independent of
correctness, Shao et al. 2025) cannot learn the task, so their held-out curves should
stay flat; OLMo 3's stayed flat or fell, its evidence that decontamination worked. This
module reads the RL stage's held-out curves (``eval/<domain>/pass@1`` of the ``rlvr``
stage in each run's metrics.jsonl) of several spurious runs (seeds) and of real runs,
and per evaluation set (domain):

    rise_s    = pass@1 at the last evaluated step - pass@1 at the RL start, run s
    noise     = t_{0.95, n-1} * sd(rise) / sqrt(n)     over the n spurious runs
    suspect   iff  mean(rise) > noise

that is, a one-sided one-sample t-test at the 5% level of "the mean rise under
spurious rewards is zero": the set is flagged when it rises beyond seed noise. When
every spurious run kept its per-question scores (``eval_scores.jsonl``), the noise
bound also counts the questions' binomial noise (``stats.noise_bound`` on the seeds x
questions matrix of per-question rises; questions asked twice count once): three runs
that each gain one question of 100 have sd 0 over seeds, which alone would make a bound
of 0 and a rise of a single question suspect. One
spurious run gives no estimate of seed noise, so the verdict is then left open. The
real runs' rises are shown beside them: an evaluation set on which real training does
not rise beyond the same noise cannot tell contamination apart from nothing.

``recipe-arena spurious-check --spurious RUN... --real RUN... --out DIR`` writes
``spurious_check.md`` (table and verdicts), ``spurious_check.json`` and
``spurious_check.png`` (every run's held-out curve per domain, spurious dashed).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from recipe_arena.eval import stats
from recipe_arena.eval.scores import read_eval_scores, rl_evaluations
from recipe_arena.rundir import read_metrics

Curve = list[tuple[int, float]]


def rl_eval_curves(run_dir: str | Path) -> dict[str, Curve]:
    """domain -> [(RL step, held-out pass@1)] of the run's ``rlvr`` stage, by step."""
    out: dict[str, Curve] = defaultdict(list)
    for rec in read_metrics(run_dir):
        if rec.get("stage") != "rlvr":
            continue
        for key, value in rec.items():
            parts = key.split("/")
            if (
                len(parts) == 3
                and (parts[0], parts[2]) == ("eval", "pass@1")
                and parts[1] != "mean"
                and isinstance(value, int | float)
            ):
                out[parts[1]].append((int(rec["step"]), float(value)))
    return {d: sorted(c) for d, c in out.items() if c}


def rise(curve: Curve) -> float:
    """Last evaluated pass@1 minus the first (the RL start)."""
    return curve[-1][1] - curve[0][1]


def t_quantile(confidence: float, dof: int) -> float:
    """Student's t quantile (scipy)."""
    return float(stats.sps.t.ppf(confidence, dof))


QuestionRises = dict[str, tuple[np.ndarray, list[str]]]
"""domain -> (per-question rises, seeds x questions; the questions' source hashes)."""


def question_rises(run_dirs: Sequence[str | Path]) -> QuestionRises | None:
    """Per-question rises (last RL evaluation minus the RL start) of every run, per
    domain, from ``eval_scores.jsonl``; None unless every run has at least two RL
    evaluations on the same questions in the same order."""
    per_run = []
    for path in run_dirs:
        evals = rl_evaluations(read_eval_scores(path))
        if len(evals) < 2 or evals[0].ids != evals[-1].ids:
            return None
        per_run.append((evals[0], evals[-1]))
    ref = per_run[0][0]
    if any(start.ids != ref.ids for start, _ in per_run):
        return None
    rises_SQ = np.array(
        [np.subtract(last.scores, start.scores) for start, last in per_run], dtype=np.float64
    )
    domains = np.array(ref.domains)
    return {
        d: (
            rises_SQ[:, domains == d],
            [src for src, dom in zip(ref.sources, ref.domains, strict=True) if dom == d],
        )
        for d in dict.fromkeys(ref.domains)
    }


@dataclass(frozen=True)
class Verdict:
    domain: str
    spurious_rises: list[float]
    real_rises: list[float]
    mean: float
    sd: float
    """Sample standard deviation of the spurious rises (n - 1 in the denominator)."""
    noise: float
    """How far a mean rise reaches on noise alone: t_{confidence, n-1} * sd / sqrt(n)
    over seeds, or with per-question scores ``stats.noise_bound`` (seeds and questions)."""
    suspect: bool | None
    """mean > noise; None with fewer than two spurious runs."""
    questions: int | None = None
    """Questions (distinct sources) behind the noise bound; None: seeds alone."""


def check(
    spurious: Sequence[dict[str, Curve]],
    real: Sequence[dict[str, Curve]] = (),
    confidence: float = 0.95,
    per_question: QuestionRises | None = None,
) -> list[Verdict]:
    """One verdict per domain present in every spurious run (module docstring);
    ``per_question`` (``question_rises`` of the spurious runs) adds the questions'
    noise to the bound of the domains it holds."""
    if not spurious:
        raise ValueError("spurious-check needs at least one spurious run")
    domains = sorted(set.intersection(*(set(c) for c in spurious)))
    out = []
    for d in domains:
        rises = [rise(c[d]) for c in spurious]
        n = len(rises)
        mean = sum(rises) / n
        sd = math.sqrt(sum((r - mean) ** 2 for r in rises) / (n - 1)) if n > 1 else math.nan
        noise = t_quantile(confidence, n - 1) * sd / math.sqrt(n) if n > 1 else math.nan
        units = None
        if n > 1 and per_question is not None and d in per_question:
            rises_SQ, sources = per_question[d]
            clustered = stats.cluster_means(rises_SQ, sources)
            if clustered.shape[1] >= 2:
                noise = stats.noise_bound(clustered, confidence)
                units = clustered.shape[1]
        out.append(
            Verdict(
                domain=d,
                spurious_rises=rises,
                real_rises=[rise(c[d]) for c in real if d in c],
                mean=mean,
                sd=sd,
                noise=noise,
                suspect=bool(mean > noise) if n > 1 else None,
                questions=units,
            )
        )
    return out


def _fmt(xs: Sequence[float]) -> str:
    return ", ".join(f"{x:+.3f}" for x in xs) or "-"


def markdown(verdicts: Sequence[Verdict], spurious: Sequence[Path], real: Sequence[Path]) -> str:
    lines = [
        "# Spurious-reward control",
        "",
        f"Spurious runs: {', '.join(p.name for p in spurious)}",
        f"Real runs: {', '.join(p.name for p in real) or 'none'}",
        "",
        "Held-out pass@1 change from the RL start to the last evaluation. Suspect: the mean",
        "rise under spurious rewards exceeds its one-sided 95% noise bound: over seeds",
        "t(0.95, n-1) * sd / sqrt(n), and where the runs kept per-question scores also the",
        "questions' noise (bound sqrt(t(0.95, n-1)^2 max(MS_S, MS_E) + t(0.95, Q-1)^2",
        "max(0, MS_Q - MS_E)) / sqrt(nQ) on the per-question rises; questions column).",
        "",
        "| eval set | spurious rises | mean | sd | noise bound | questions | real rises | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v in verdicts:
        verdict = {None: "open (one run)", True: "SUSPECT", False: "flat"}[v.suspect]
        lines.append(
            f"| {v.domain} | {_fmt(v.spurious_rises)} | {v.mean:+.3f} | {v.sd:.3f} | "
            f"{v.noise:.3f} | {v.questions or '-'} | {_fmt(v.real_rises)} | {verdict} |"
        )
    return "\n".join(lines) + "\n\n![held-out curves](spurious_check.png)\n"


def plot(
    spurious: Sequence[dict[str, Curve]], real: Sequence[dict[str, Curve]], path: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    domains = sorted({d for c in [*spurious, *real] for d in c})
    fig, axes = plt.subplots(1, len(domains), figsize=(3.4 * len(domains), 2.8), squeeze=False)
    for ax, d in zip(axes[0], domains, strict=True):
        for runs, style, label in ((real, "-", "real"), (spurious, "--", "spurious")):
            for i, c in enumerate(runs):
                if d in c:
                    xs, ys = zip(*c[d], strict=True)
                    color = "C0" if label == "real" else "C3"
                    ax.plot(xs, ys, style, color=color, label=label if i == 0 else None)
        ax.set_title(f"held-out {d} pass@1", fontsize=8)
        ax.set_xlabel("RL step", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_spurious_check(
    spurious: Sequence[str | Path], real: Sequence[str | Path], out: str | Path
) -> Path:
    """Write spurious_check.{md,json,png} into ``out``; returns the Markdown's path."""
    s_paths, r_paths = [Path(p) for p in spurious], [Path(p) for p in real]
    s_curves = [rl_eval_curves(p) for p in s_paths]
    r_curves = [rl_eval_curves(p) for p in r_paths]
    for path, curves in zip([*s_paths, *r_paths], [*s_curves, *r_curves], strict=True):
        if not curves:
            raise ValueError(f"{path}: no held-out evaluation of an RL stage in metrics.jsonl")
    verdicts = check(s_curves, r_curves, per_question=question_rises(s_paths))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plot(s_curves, r_curves, out / "spurious_check.png")
    (out / "spurious_check.json").write_text(
        json.dumps([asdict(v) for v in verdicts], indent=2, default=str)
    )
    md = out / "spurious_check.md"
    md.write_text(markdown(verdicts, s_paths, r_paths))
    return md
