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
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recipe_arena.comparison_plan import (
    PLAN_FILE,
    RUN_KEYS,
    ArtifactError,
    Plan,
    flatten,
    read_json,
    read_run_config,
    run_finished,
    scores_gone,
    without_later_defaults,
)
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
    """Run directories of this arm the comparison cannot count: not (yet) finished, or
    finished with their per-question scores gone (``not_counted``)."""

    @property
    def seeds(self) -> list[int]:
        return [r.seed for r in self.runs]

    def final_SQ(self) -> np.ndarray:
        return np.array([r.final.scores for r in self.runs], dtype=np.float64)


def load_run(path: Path) -> RunData | None:
    """A finished run's data; None when it is not finished or has no per-question
    scores (runs from before eval_scores.jsonl existed)."""
    _check_written(path)
    if not run_finished(path):
        return None
    records = read_eval_scores(path, finished=True)
    final = final_scores(records)
    if final is None:
        return None
    raw = read_run_config(path)
    stages = read_json(path / "stages.json")
    trained: dict[str, list[dict[str, Any]]] = {}
    try:
        metrics = read_metrics(path)
    except (OSError, EOFError, zlib.error) as e:
        raise ArtifactError(f"{path / 'metrics.jsonl'}[.gz]: cannot be read whole ({e})") from None
    for r in metrics:
        if trains_policy(str(r.get("stage"))):
            trained.setdefault(str(r["stage"]), []).append(r)
    for recs in trained.values():
        recs.sort(key=lambda r: r["step"])
    config = without_later_defaults({k: v for k, v in flatten(raw).items() if k not in RUN_KEYS})
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


def _check_written(path: Path) -> None:
    """ArtifactError when the run's config.yaml or stages.json is there but is not what a
    run writes (each is written whole, by a rename): a damaged run is not taken for one
    that has not finished yet."""
    if (path / "config.yaml").exists():
        read_run_config(path)
    if (path / "stages.json").exists():
        stages = read_json(path / "stages.json")
        if not isinstance(stages, dict) or not isinstance(stages.get("done", {}), dict):
            raise ArtifactError(f"{path / 'stages.json'}: not a run's record of its stages")


def not_counted(path: Path) -> str:
    """How a report names the run at ``path`` that it cannot count: its directory's name,
    with "(finished, scores gone)" when it finished and its per-question scores are not
    there (``scores_gone``), since resuming will not make it count, whereas a run that
    is not finished yet will once resumed."""
    return f"{path.name} (finished, scores gone)" if scores_gone(path) else path.name


def load_comparison(root: Path) -> tuple[Plan, list[ArmData]]:
    """The comparison's plan (``comparison.json``) and its arms' finished runs, the
    baseline first; ArtifactError when the plan is not one ``compare`` writes."""
    raw = read_json(root / PLAN_FILE)
    try:
        plan = Plan.from_json(raw)
        if plan.baseline not in [a.name for a in plan.arms]:
            raise KeyError(f"baseline {plan.baseline!r} is not an arm")
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise ArtifactError(f"{root / PLAN_FILE}: not a comparison plan ({e})") from None
    arms = []
    for arm in plan.arms:
        data = ArmData(arm.name, [], control=arm.control)
        for seed in arm.seeds:
            path = root / "runs" / f"{arm.name}-s{seed}"
            run = load_run(path)
            if run is None:
                data.missing.append(not_counted(path))
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
            skipped.append(not_counted(Path(p)))
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


def domain_columns(cols: Columns, domain: str) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    """(question indices, weights or None, cluster labels) of ``domain``: every question
    weighted so that each domain counts equally for ``MEAN``, else the domain's own."""
    if domain == MEAN:
        return np.arange(len(cols.sources)), cols.weights_Q, list(cols.sources)
    idx = cols.index[domain]
    return idx, None, [cols.sources[i] for i in idx]


def domain_test(a_SQ: np.ndarray, b_SQ: np.ndarray, cols: Columns, domain: str) -> stats.PairedTest:
    idx, w, clusters = domain_columns(cols, domain)
    return stats.paired_test(a_SQ[:, idx], b_SQ[:, idx], clusters_Q=clusters, weights_Q=w)


@dataclass(frozen=True)
class Comparison:
    arm: str
    domain: str
    test: stats.PairedTest
    p_holm: float
    control: bool


def identical(comps: Sequence[Comparison]) -> bool:
    """Every comparison of one arm (one per domain and the mean, at two seeds or more)
    has a zero mean difference with zero standard error: every paired difference is 0."""
    return bool(comps) and all(
        c.test.seeds >= 2 and c.test.diff.value == 0.0 and c.test.se == 0.0 for c in comps
    )


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
