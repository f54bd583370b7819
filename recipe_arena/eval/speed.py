"""Learning speed in a comparison: the paired area under each arm's held-out curve, and
the learner tokens each arm needs to reach a share of the baseline's gain.

On the micro world healthy arms end near the same final score; how fast they get there
tells them apart. Both measures read the curve of the stage that trains the final policy
(``comparison.RunData.curve``) and go through the comparison's paired tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from recipe_arena.eval import stats
from recipe_arena.eval.comparison import (
    MEAN,
    ArmData,
    Columns,
    Comparison,
    RunData,
    arm_estimate,
    columns,
    paired_comparisons,
    paired_runs,
)


@dataclass(frozen=True)
class Speed:
    """Learning speed of every arm against the baseline, read off the held-out curve of
    the stage that trains the final policy (``RunData.curve``)."""

    stage: str | None
    """The baseline's curve stage; None when it has no curve of two evaluations."""
    steps: list[int]
    """Its evaluation steps (the baseline's; an arm is compared only at the same)."""
    cols: Columns | None
    """The domains of the curve's questions."""
    auc: dict[str, dict[str, stats.Estimate]]
    """arm -> domain -> its mean area under the curve over its runs (two-way interval)."""
    auc_runs: dict[str, int]
    """arm -> the runs its areas average."""
    comps: list[Comparison]
    """Paired area differences, arm - baseline (``paired_comparisons`` on areas)."""
    excluded: dict[str, str]
    """arm -> why its area is not compared (other stage or evaluation steps)."""
    reach: list[Reach]
    """Learner tokens to reach ``fraction`` of the baseline's gain, per arm (the
    baseline first)."""
    fraction: float


@dataclass(frozen=True)
class Reach:
    """An arm's learner tokens to reach a share of the baseline's gain (``tokens_to_reach``)."""

    arm: str
    seeds: list[int]
    tokens: list[float | None]
    """Per paired seed: learner tokens to reach the seed's target (None: not reached by
    the arm's last evaluation, or no target: the baseline gained nothing there)."""
    estimate: stats.Estimate | None
    """Mean over the seeds with a target, with a t interval, when every one reached."""
    diff: stats.Estimate | None
    """Mean of arm - baseline over the same seeds with a t interval (the baseline
    reaches its own target by construction)."""
    note: str = ""
    targeted: list[bool] = field(default_factory=list)
    """Per paired seed: whether there was a target (the baseline gained, and both runs
    have a curve on the same questions)."""


REACH_FRACTION = 0.8
"""The share of the baseline's gain (from its curve's start to its last evaluation)
whose learner tokens ``tokens_to_reach`` reports: 80%, late enough to be past the first
noisy evaluations, early enough that a slower arm that does get there is seen doing so."""


def curve_steps(run: RunData) -> list[int]:
    return [e.step for e in run.curve]


def trapezoid_auc(steps_T: Sequence[int], y_TQ: np.ndarray) -> np.ndarray:
    """Area under each question's held-out curve, normalised to the curve's length:

        AUC_q = 1/(t_K - t_0) * sum_{k=1..K} (t_k - t_{k-1}) * (y_{k-1,q} + y_{k,q}) / 2

    over the evaluations at steps t_0 < ... < t_K: the time average of pass@1 over the
    stage (in the score's unit, [0, 1] for [0, 1] scores; a flat curve at y gives y).
    The trapezoid weights an evaluation by the steps around it, so unequally spaced
    evaluations (the last one, at the final step) count for the time they stand for."""
    t = np.asarray(steps_T, dtype=np.float64)
    y = np.asarray(y_TQ, dtype=np.float64)
    if len(t) < 2 or y.shape[0] != len(t) or np.any(np.diff(t) <= 0):
        raise ValueError(
            f"trapezoid_auc: needs at least 2 increasing steps, one row each; got steps "
            f"{list(steps_T)} for {y.shape[0]} rows"
        )
    widths = np.diff(t)[:, None]
    return ((y[1:] + y[:-1]) / 2 * widths).sum(axis=0) / (t[-1] - t[0])


def run_auc(run: RunData) -> np.ndarray:
    """``trapezoid_auc`` of the run's final-policy curve, one value per question."""
    return trapezoid_auc(curve_steps(run), np.array([e.scores for e in run.curve]))


def _curve_mismatch(run: RunData, ref: RunData) -> str | None:
    """Why ``run``'s curve does not compare with ``ref``'s, or None."""
    if run.curve_stage != ref.curve_stage:
        return (
            f"its final policy is trained by stage {run.curve_stage}, the baseline's by "
            f"{ref.curve_stage}: areas over different stages do not compare"
        )
    if curve_steps(run) != curve_steps(ref):
        return (
            f"{run.path.name} was evaluated at steps {curve_steps(run)}, the baseline at "
            f"{curve_steps(ref)}: areas need the same evaluation steps (rl.eval_every and "
            "the stage's steps)"
        )
    if any(e.ids != ref.curve[0].ids for e in run.curve):
        return f"{run.path.name} was evaluated on other questions along its curve"
    return None


def paired_areas(arm: ArmData, base: ArmData) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(arm_SQ, base_SQ, seeds) of the areas under the held-out curve (``run_auc``),
    paired as the final scores are (``paired_runs``): the matrices ``paired_comparisons``
    compares for learning speed."""
    a, b = paired_runs(arm, base)
    return (
        np.array([run_auc(r) for r in a]),
        np.array([run_auc(r) for r in b]),
        [r.seed for r in a],
    )


def speed_comparisons(arms: Sequence[ArmData], fraction: float = REACH_FRACTION) -> Speed | None:
    """Learning speed of every arm against the baseline (arms[0]); None when the
    baseline has no run with a curve of two evaluations.

    Area under the curve: per seed s and question q, AUC_sq = ``trapezoid_auc`` of the
    final policy's curve, then arm - baseline through ``stats.paired_test`` as the final
    scores are (interval, MDE, Holm across arms). An arm whose curve is another stage
    or other steps than the baseline's is not compared (``Speed.excluded`` says why).
    Learner tokens to reach a share of the baseline's gain: ``tokens_to_reach``."""
    base = arms[0]
    if not base.runs or len(base.runs[0].curve) < 2:
        return None
    ref = base.runs[0]
    cols = columns(ref.curve[0])
    excluded: dict[str, str] = {}
    ok: list[ArmData] = []
    for arm in arms:
        why = next((w for r in arm.runs if (w := _curve_mismatch(r, ref))), None)
        if why is None:
            ok.append(arm)
        else:
            excluded[arm.name] = why

    doms = [*cols.domains, MEAN]
    auc = {
        a.name: {d: arm_estimate(np.array([run_auc(r) for r in a.runs]), cols, d) for d in doms}
        for a in ok
        if a.runs
    }
    comps = paired_comparisons(ok, cols, paired_areas) if base in ok else []
    reach = [tokens_to_reach(a, base, cols, fraction) for a in arms if a.runs]
    runs = {a.name: len(a.runs) for a in ok if a.runs}
    return Speed(
        ref.curve_stage, curve_steps(ref), cols, auc, runs, comps, excluded, reach, fraction
    )


def _weighted_curve(run: RunData, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
    """(learner tokens, held-out pass@1 as the unweighted mean over domains) at each
    evaluation of the run's final-policy curve."""
    c = np.array([run.curve_compute(e.step) for e in run.curve])
    m = np.array([float(np.mean(np.array(e.scores) * cols.weights_Q)) for e in run.curve])
    return c, m


def first_reach(compute_T: np.ndarray, score_T: np.ndarray, target: float) -> float | None:
    """Learner tokens at which the curve first reaches ``target``: linear in tokens
    between the last evaluation below it and the first at or above it (the first
    evaluation's tokens when it already is); None when no evaluation reaches it."""
    for k, y in enumerate(score_T):
        if y >= target:
            if k == 0:
                return float(compute_T[0])
            y0, c0, c1 = score_T[k - 1], compute_T[k - 1], compute_T[k]
            return float(c0 + (target - y0) / (y - y0) * (c1 - c0))
    return None


def tokens_to_reach(
    arm: ArmData, base: ArmData, cols: Columns, fraction: float = REACH_FRACTION
) -> Reach:
    """Per seed s (paired as ``paired_runs``): the target is the baseline's seed-s
    curve start m_0 plus ``fraction`` of its gain, m_0 + f (m_K - m_0), on the mean over
    domains; the arm's learner tokens to first reach it (``first_reach`` on its
    final-policy curve against ``RunData.curve_compute``: a pipeline's specialists or RL
    teacher count before its student's first step). Mean over seeds with Student's t
    interval, and the paired difference to the baseline's own tokens."""
    a_runs, b_runs = paired_runs(arm, base)
    seeds = [r.seed for r in a_runs]
    tokens: list[float | None] = []
    own: list[float | None] = []
    no_gain: list[str] = []
    no_curve: list[str] = []
    for a, b in zip(a_runs, b_runs, strict=True):
        ids = b.curve[0].ids if b.curve else []
        if (
            len(b.curve) < 2
            or not a.curve
            or len(ids) != len(cols.weights_Q)
            or any(e.ids != ids for e in a.curve + b.curve)
        ):
            no_curve.append(str(a.seed))
            tokens.append(None)
            own.append(None)
            continue
        bc, bm = _weighted_curve(b, cols)
        if bm[-1] <= bm[0]:
            no_gain.append(str(b.seed))
            tokens.append(None)
            own.append(None)
            continue
        target = bm[0] + fraction * (bm[-1] - bm[0])
        tokens.append(first_reach(*_weighted_curve(a, cols), target))
        own.append(first_reach(bc, bm, target))
    notes = []
    if no_gain:
        notes.append(f"the baseline gained nothing in seed {', '.join(no_gain)}")
    if no_curve:
        notes.append(f"no curve on the baseline's questions in seed {', '.join(no_curve)}")
    note = "; ".join(notes)
    targeted = [str(s) not in no_gain + no_curve for s in seeds]
    aimed = [(t, o) for t, o, ok in zip(tokens, own, targeted, strict=True) if ok]
    every = bool(aimed) and all(t is not None for t, _ in aimed)
    est = stats.t_interval([t for t, _ in aimed if t is not None]) if every else None
    diff = (
        stats.t_interval([t - o for t, o in aimed if t is not None and o is not None])
        if every
        else None
    )
    return Reach(arm.name, seeds, tokens, est, diff, note, targeted)
