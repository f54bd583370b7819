"""The data of a comparison, read only from its runs' artifacts, and its analysis.

A comparison directory (written by `recipe-arena compare`) names its arms and seeds in
``comparison.json``; loose run directories are grouped into arms by their settings
(runs whose configs differ only in seed, name and output place form one arm, named
by the settings that set it apart). From each run: ``config.yaml``, ``stages.json``,
``metrics.jsonl`` (compute: the learner's trained tokens per step of every stage that
trains a policy after the RL start, and the tokens the teachers scored) and
``eval_scores.jsonl`` (per-question scores of every evaluation).

Compute is matched on learner tokens (``MATCHING_RULE``). Learning speed is read off the
held-out curve of the stage that trains the final policy (``curve_stage``): the area
under it (``speed_comparisons``) and the learner tokens each arm needs to reach a
fraction of the baseline's gain (``tokens_to_reach``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from recipe_arena.comparison_plan import PLAN_FILE, RUN_KEYS, Plan, flatten, run_finished
from recipe_arena.eval import stats
from recipe_arena.eval.scores import ScoreRecord, final_scores, read_eval_scores, rl_evaluations
from recipe_arena.rundir import read_metrics

POLICY_STAGES = ("rlvr", "mopd", "opd")
"""Stages whose output can be the run's final policy, in metrics.jsonl and
eval_scores.jsonl: the RL stage and the two distillation stages."""
SPECIALIST_PREFIX = "specialist_"
"""metrics.jsonl stage name of each specialist (``specialist_<domain>_<effort>``)."""
DISTILL_STAGES = ("mopd", "opd")
TEACHER_TOKENS = "distill/all/tokens"
"""The completion tokens a distillation step's teachers scored (``advantages.distill``)."""
MATCHING_RULE = (
    "Arms are matched on learner tokens: the completion tokens trained by every stage "
    "that trains a policy after the RL start (the RL stage, each specialist's RL, the "
    "MOPD or OPD distillation), summed. Stages before the RL start (base, SFT, DPO, "
    "the prompt filter) are not counted; the tokens the distillation teachers scored "
    "(one forward pass each, no training) are reported beside them, not matched."
)
"""The compute-matching rule every comparison and study report states."""


def trains_policy(stage: str) -> bool:
    """Whether a metrics.jsonl stage trains a policy after the RL start (counted in
    the learner tokens): the RL stage, a specialist, a distillation stage."""
    return stage in POLICY_STAGES or stage.startswith(SPECIALIST_PREFIX)


@dataclass
class RunData:
    path: Path
    seed: int
    config: dict[str, Any]
    """Flattened resolved config, without the per-run keys (seed, name, ...)."""
    final: ScoreRecord
    evals: list[ScoreRecord]
    """The RL stage's evaluations by step (the ScaleRL fit's points)."""
    rl: list[dict[str, Any]]
    """metrics.jsonl records of the RL stage, by step."""
    seconds: float
    """Wall time of all stages (stages.json)."""
    trained: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """metrics.jsonl records of every stage that trains a policy after the RL start
    (``trains_policy``), by stage, each by step."""
    curve_stage: str | None = None
    """The stage that trains the final policy: the last of ``POLICY_STAGES`` in the
    run's pipeline (rlvr for OLMo 3, mopd for specialists + MOPD, opd for RL + OPD);
    None when the pipeline has none."""
    curve: list[ScoreRecord] = field(default_factory=list)
    """``curve_stage``'s evaluations by step (step 0: its start): the final policy's
    held-out curve."""

    def compute_at(self, step: int) -> float:
        """Learner tokens the RL stage trained up to and including ``step`` (0 at the RL
        start)."""
        return self.stage_tokens("rlvr", step)

    def stage_tokens(self, stage: str, step: int | None = None) -> float:
        """Completion tokens ``stage`` trained in steps 1..``step`` (all when None)."""
        return float(
            sum(
                r.get("throughput/trained_tokens", 0.0)
                for r in self.trained.get(stage, [])
                if r["step"] > 0 and (step is None or r["step"] <= step)
            )
        )

    @property
    def learner_tokens(self) -> float:
        """Compute under ``MATCHING_RULE``: completion tokens trained by every stage that
        trains a policy after the RL start, summed (tokens, >= 0)."""
        return sum(self.stage_tokens(s) for s in self.trained)

    @property
    def specialist_tokens(self) -> float:
        """The part of ``learner_tokens`` the specialists trained."""
        return sum(self.stage_tokens(s) for s in self.trained if s.startswith(SPECIALIST_PREFIX))

    @property
    def distill_tokens(self) -> float:
        """The part of ``learner_tokens`` the distillation stages (mopd, opd) trained."""
        return sum(self.stage_tokens(s) for s in DISTILL_STAGES)

    @property
    def teacher_tokens(self) -> float:
        """Completion tokens the distillation teachers scored, summed over the steps
        (one teacher forward each; not learner compute, reported beside it)."""
        return float(
            sum(
                r.get(TEACHER_TOKENS, 0.0)
                for s in DISTILL_STAGES
                for r in self.trained.get(s, [])
                if r["step"] > 0
            )
        )

    def curve_compute(self, step: int) -> float:
        """Learner tokens spent when the final policy's stage reached ``step``: those
        of every other policy-training stage (they ran before it: the specialists before
        MOPD, the RL teacher before OPD) plus its own up to ``step``."""
        if self.curve_stage is None:
            return self.learner_tokens
        own = self.stage_tokens(self.curve_stage)
        return self.learner_tokens - own + self.stage_tokens(self.curve_stage, step)


@dataclass
class ArmData:
    name: str
    runs: list[RunData]
    control: bool = False
    missing: list[str] = field(default_factory=list)
    """Run directories of this arm that are not (yet) finished."""

    @property
    def seeds(self) -> list[int]:
        return [r.seed for r in self.runs]

    def final_SQ(self) -> np.ndarray:
        return np.array([r.final.scores for r in self.runs], dtype=np.float64)


def load_run(path: Path) -> RunData | None:
    """A finished run's data; None when it is not finished or has no per-question
    scores (runs from before eval_scores.jsonl existed)."""
    if not run_finished(path):
        return None
    records = read_eval_scores(path)
    final = final_scores(records)
    if final is None:
        return None
    raw = yaml.safe_load((path / "config.yaml").read_text())
    stages = json.loads((path / "stages.json").read_text())
    trained: dict[str, list[dict[str, Any]]] = {}
    for r in read_metrics(path):
        if trains_policy(str(r.get("stage"))):
            trained.setdefault(str(r["stage"]), []).append(r)
    for recs in trained.values():
        recs.sort(key=lambda r: r["step"])
    config = {k: v for k, v in flatten(raw).items() if k not in RUN_KEYS}
    mine = [s for s in (raw.get("pipeline") or {}).get("stages", []) if s in POLICY_STAGES]
    curve_stage = mine[-1] if mine else None
    return RunData(
        path=path,
        seed=int(raw["seed"]),
        config=config,
        final=final,
        evals=rl_evaluations(records),
        rl=trained.get("rlvr", []),
        seconds=float(sum(stages.get("done", {}).values())),
        trained=trained,
        curve_stage=curve_stage,
        curve=sorted((r for r in records if r.stage == curve_stage), key=lambda r: r.step),
    )


def load_comparison(root: Path) -> tuple[Plan, list[ArmData]]:
    plan = Plan.from_json(json.loads((root / PLAN_FILE).read_text()))
    arms = []
    for arm in plan.arms:
        data = ArmData(arm.name, [], control=arm.control)
        for seed in arm.seeds:
            path = root / "runs" / f"{arm.name}-s{seed}"
            run = load_run(path)
            if run is None:
                data.missing.append(path.name)
            else:
                data.runs.append(run)
        arms.append(data)
    baseline = next(a for a in arms if a.name == plan.baseline)
    return plan, [baseline] + [a for a in arms if a is not baseline]


def group_runs(paths: Sequence[Path]) -> list[ArmData]:
    """Loose run directories as arms: runs with equal settings (but for seed, name and
    output place) form one arm, named by the settings where it differs from the first
    path's arm (the baseline); unfinished runs are left out."""
    groups: list[tuple[dict[str, Any], list[RunData]]] = []
    skipped = []
    for p in paths:
        run = load_run(Path(p))
        if run is None:
            skipped.append(Path(p).name)
            continue
        for cfg, runs in groups:
            if cfg == run.config:
                runs.append(run)
                break
        else:
            groups.append((run.config, [run]))
    if not groups:
        raise ValueError(f"no finished run with eval_scores.jsonl among {[str(p) for p in paths]}")
    base_cfg = groups[0][0]
    arms = []
    for i, (cfg, runs) in enumerate(groups):
        # a key the arm lacks (another strategy's own parameter) is implied by its option
        diff = [f"{k}={cfg[k]}" for k in sorted(cfg) if cfg[k] != base_cfg.get(k)]
        name = "baseline" if i == 0 else ",".join(diff)[:80]
        arms.append(ArmData(name, sorted(runs, key=lambda r: r.seed)))
    arms[0].missing = skipped
    return arms


def check_questions(arms: Sequence[ArmData]) -> ScoreRecord:
    """The baseline's question list, after checking that every run was evaluated on the
    same questions in the same order (what pairing needs)."""
    ref = arms[0].runs[0].final
    for arm in arms:
        for run in arm.runs:
            if run.final.ids != ref.ids:
                raise ValueError(
                    f"{run.path} was evaluated on other questions than {arms[0].runs[0].path}; "
                    "runs of a comparison need the same world and eval settings"
                )
    return ref


# ----------------------------------------------------------------------------- analysis
@dataclass(frozen=True)
class Columns:
    """Which questions form each reported domain, and how they are weighted."""

    domains: list[str]
    index: dict[str, np.ndarray]
    sources: list[str]
    weights_Q: np.ndarray
    """1 / (number of domains x questions of the question's domain), scaled to mean 1:
    the weighted mean over all questions is the unweighted mean over domains."""


MEAN = "mean"
"""The pseudo-domain of the unweighted mean over domains."""


def columns(ref: ScoreRecord) -> Columns:
    domains = list(dict.fromkeys(ref.domains))
    dom = np.array(ref.domains)
    index = {d: np.flatnonzero(dom == d) for d in domains}
    w = np.array([1.0 / (len(domains) * len(index[d])) for d in ref.domains])
    return Columns(domains, index, list(ref.sources), w / w.mean())


def arm_estimate(y_SQ: np.ndarray, cols: Columns, domain: str) -> stats.Estimate:
    """An arm's mean pass@1 on ``domain`` with its 95% two-way t interval
    (``stats.two_way_interval``: seeds and questions, covers with 2 seeds)."""
    if domain == MEAN:
        return stats.two_way_interval(y_SQ * cols.weights_Q[None, :])
    return stats.two_way_interval(y_SQ[:, cols.index[domain]])


def paired_runs(arm: ArmData, base: ArmData) -> tuple[list[RunData], list[RunData]]:
    """The arm's and the baseline's runs, paired by seed (the same seeds), or for the
    A/A control by position (its seeds are a second set by design)."""
    if arm.control:
        n = min(len(arm.runs), len(base.runs))
        return arm.runs[:n], base.runs[:n]
    common = sorted(set(arm.seeds) & set(base.seeds))
    return [r for r in arm.runs if r.seed in common], [r for r in base.runs if r.seed in common]


def paired(arm: ArmData, base: ArmData) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(arm_SQ, base_SQ, seeds) of the final scores, paired (``paired_runs``)."""
    a, b = paired_runs(arm, base)
    seeds = [r.seed for r in a]
    return (
        np.array([r.final.scores for r in a], dtype=np.float64),
        np.array([r.final.scores for r in b], dtype=np.float64),
        seeds,
    )


def domain_test(a_SQ: np.ndarray, b_SQ: np.ndarray, cols: Columns, domain: str) -> stats.PairedTest:
    if domain == MEAN:
        return stats.paired_test(a_SQ, b_SQ, clusters_Q=cols.sources, weights_Q=cols.weights_Q)
    idx = cols.index[domain]
    return stats.paired_test(a_SQ[:, idx], b_SQ[:, idx], clusters_Q=[cols.sources[i] for i in idx])


@dataclass(frozen=True)
class Comparison:
    arm: str
    domain: str
    test: stats.PairedTest
    p_holm: float
    control: bool


Matrices = Callable[[ArmData, ArmData], tuple[np.ndarray, np.ndarray, list[int]]]
"""(arm, baseline) -> (arm_SQ, base_SQ, paired seeds) of the figure compared."""


def paired_comparisons(
    arms: Sequence[ArmData], cols: Columns, matrices: Matrices = paired
) -> list[Comparison]:
    """Every arm against the baseline (arms[0]), per domain and for the mean; Holm's
    correction across the (non-control) arms within each domain. The A/A control is
    tested alone (its p-value is not corrected: it is a check, not a finding).
    ``matrices`` gives the per-seed, per-question figures compared: by default the
    final scores (``paired``); ``speed_comparisons`` passes the areas under the curve."""
    base = arms[0]
    out: list[Comparison] = []
    for domain in [*cols.domains, MEAN]:
        tests: list[tuple[ArmData, stats.PairedTest]] = []
        for arm in arms[1:]:
            a, b, seeds = matrices(arm, base)
            if seeds:
                tests.append((arm, domain_test(a, b, cols, domain)))
        regular = [(a, t) for a, t in tests if not a.control]
        adjusted = dict(
            zip([a.name for a, _ in regular], stats.holm([t.p for _, t in regular]), strict=True)
        )
        for arm, t in tests:
            out.append(Comparison(arm.name, domain, t, adjusted.get(arm.name, t.p), arm.control))
    return out


# ----------------------------------------------------------------------------- speed
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

    def areas(arm: ArmData, other: ArmData) -> tuple[np.ndarray, np.ndarray, list[int]]:
        a, b = paired_runs(arm, other)
        return (
            np.array([run_auc(r) for r in a]),
            np.array([run_auc(r) for r in b]),
            [r.seed for r in a],
        )

    doms = [*cols.domains, MEAN]
    auc = {
        a.name: {d: arm_estimate(np.array([run_auc(r) for r in a.runs]), cols, d) for d in doms}
        for a in ok
        if a.runs
    }
    comps = paired_comparisons(ok, cols, areas) if base in ok else []
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


def curve_data(arm: ArmData, cols: Columns) -> tuple[np.ndarray, np.ndarray, list[int]] | None:
    """(compute_ST, scores_STQ weighted for the mean over domains, steps) over the RL
    evaluations that every run of the arm has; None when fewer than two."""
    if not arm.runs:
        return None
    steps = sorted(set.intersection(*(set(e.step for e in r.evals) for r in arm.runs)))
    if len(steps) < 2:
        return None
    compute = np.array([[r.compute_at(t) for t in steps] for r in arm.runs])
    by_step = [{e.step: e.scores for e in r.evals} for r in arm.runs]
    scores = np.array([[m[t] for t in steps] for m in by_step], dtype=np.float64)
    return compute, scores * cols.weights_Q[None, None, :], steps


def series(arm: ArmData, metric: str) -> tuple[list[int], np.ndarray] | None:
    """(steps, values_SN) of an RL metric over the steps every run logged it."""
    per_run = [{r["step"]: r[metric] for r in run.rl if metric in r} for run in arm.runs]
    if not per_run or not all(per_run):
        return None
    steps = sorted(set.intersection(*(set(m) for m in per_run)))
    if not steps:
        return None
    return steps, np.array([[m[t] for t in steps] for m in per_run], dtype=np.float64)


def config_differences(arms: Sequence[ArmData]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Settings whose value is not the same in every arm: (keys, arm -> key -> value);
    a key an arm does not have (a strategy's own parameter) is absent from its dict."""
    configs = {a.name: a.runs[0].config for a in arms if a.runs and not a.control}
    keys = sorted(set().union(*(set(c) for c in configs.values())))
    differing = [
        k for k in keys if len({json.dumps(c.get(k), sort_keys=True) for c in configs.values()}) > 1
    ]
    return differing, {name: {k: c[k] for k in differing if k in c} for name, c in configs.items()}
