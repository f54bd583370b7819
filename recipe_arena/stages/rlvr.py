"""The RLVR stage: OlmoRL on the async actor-learner core, with checkpoints and evals.

``run_rlvr`` builds the learner from the starting checkpoint, the actors (local threads
or Ray actors, ``cluster.backend``; their settings, hooks and factories come from the
config through ``recipe_arena.wiring``), the prompt source over the (filtered) training
rows with the domain mixture, and runs ``core.loop.train``. After every step it logs
the metrics (``rlvr`` stage of metrics.jsonl), appends the step's prompt ids to the
ledger, and every ``rl.checkpoint_every`` steps saves the full training state; every
``rl.eval_every`` steps (and at steps 0 and the last) it evaluates held-out pass@1.
With ``resume=true`` it continues from the latest checkpoint: no prompt lost, none
trained twice.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from recipe_arena.config import RunConfig
from recipe_arena.core import lockstep
from recipe_arena.core.backends import LocalBackend, make_backend
from recipe_arena.core.checkpoint import (
    Ledger,
    latest_training_state,
    load_training_state,
    prune,
    save_training_state,
    set_rng_state,
)
from recipe_arena.core.learner import Learner
from recipe_arena.core.loop import InFlight, LoopSettings, StepHook, StepRecord, train
from recipe_arena.core.placement import role_gpus
from recipe_arena.core.prompts import PromptSource
from recipe_arena.data.schema import PromptRow
from recipe_arena.eval.evaluate import Evaluation, churn
from recipe_arena.eval.final import eval_rows, evaluate_checkpoint, evaluate_model
from recipe_arena.eval.scores import log_eval_scores
from recipe_arena.models.factory import load_checkpoint, save_checkpoint
from recipe_arena.progress import StageBar, heldout_text, rl_postfix
from recipe_arena.rundir import RunDir
from recipe_arena.wiring import (
    ActorSpec,
    actor_spec,
    learner_settings,
    loop_settings,
    make_learner,
)


def prompt_source(cfg: RunConfig, train_rows: Sequence[PromptRow]) -> PromptSource:
    """The training rows drawn in the configured domain mixture, seeded by the run."""
    return PromptSource(train_rows, {str(d): w for d, w in cfg.rl.domain_weights.items()}, cfg.seed)


def run_rlvr(
    cfg: RunConfig,
    run: RunDir,
    init: Path,
    train_rows: Sequence[PromptRow],
    heldout_rows: Sequence[PromptRow],
    *,
    stage: str = "rlvr",
    teachers: dict[str, str] | None = None,
) -> Path:
    """Train with OlmoRL from ``init``; return the final checkpoint directory. ``stage``
    names the metrics, ledger and checkpoint folder (a specialist, a distillation
    stage); ``teachers`` (route -> checkpoint) has the actors attach teacher logprobs.
    Longer than most functions because its step hook (log, evaluate, checkpoint) is a
    closure over the stage's learner, held-out start and progress bar."""
    from recipe_arena.rewards import build_scorer

    root = run.checkpoints / stage
    ledger = Ledger(run.path / f"{stage}_ledger.jsonl")
    resumed = latest_training_state(root) if cfg.resume else None
    start_model = resumed / "model" if resumed else Path(init)
    model, tok = load_checkpoint(start_model)
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)
    ref = load_checkpoint(init)[0] if cfg.loss.kl_beta > 0 else None
    learner = make_learner(model, learner_settings(cfg), ref_model=ref)
    source = prompt_source(cfg, train_rows)
    start_step, schedule_state = _restore(resumed, learner, source, ledger, run, stage)
    settings = loop_settings(cfg, int(tok.pad_token_id))
    held = list(heldout_rows)
    final = root / "final"
    scorer = build_scorer(cfg.rewards, shared=True)
    bar = StageBar(stage, cfg.rl.steps, initial=start_step)
    try:
        # cached when the previous stage evaluated ``init`` (and on resume: this stage did)
        start = evaluate_checkpoint(cfg, Path(init), held, scorer) if held else None
        held_rows = eval_rows(cfg, held)
        held_domains = [r.domain for r in held_rows]
        if start is not None and start_step == 0:
            run.log(stage, 0, start.metrics)
            log_eval_scores(run.path, stage, 0, held_rows, start.scores)
        start_metrics = start.metrics if start is not None else {}
        latest = [f"@0 {heldout_text(start_metrics)}" if start_metrics else ""]
        if start_metrics:
            bar.note(
                f"{stage} step 0/{cfg.rl.steps}: held-out pass@1 {heldout_text(start_metrics)}"
            )

        def held_out(result: Evaluation, step: int) -> dict[str, float]:
            """The evaluation's metrics and, per domain, its churn against the RL start;
            its per-row scores go to eval_scores.jsonl."""
            log_eval_scores(run.path, stage, step, held_rows, result.scores)
            if start is None:
                return result.metrics
            return {**result.metrics, **churn(held_domains, start.scores, result.scores)}

        def on_step(rec: StepRecord, flight: InFlight) -> None:
            ledger.append(
                {
                    "step": rec.step,
                    "trained": rec.trained,
                    "zero_variance": rec.zero_variance,
                    "stale": rec.stale,
                }
            )
            metrics = dict(rec.metrics)
            last = rec.step == cfg.rl.steps
            if last:  # the eval stage then finds this checkpoint's evaluation cached
                save_checkpoint(learner.model, tok, final)
            evaluated: dict[str, float] = {}
            if held and last:
                evaluated = held_out(evaluate_checkpoint(cfg, final, held, scorer), rec.step)
            elif held and rec.step % cfg.rl.eval_every == 0:
                evaluated = held_out(
                    evaluate_model(cfg, learner.model, tok, held, scorer), rec.step
                )
            if evaluated:
                metrics.update(evaluated)
                latest[0] = f"@{rec.step} {heldout_text(evaluated)}"
                result = heldout_text(evaluated, start_metrics)
                bar.note(f"{stage} step {rec.step}/{cfg.rl.steps}: held-out pass@1 {result}")
            run.log(stage, rec.step, metrics)
            run.log_rollouts(_sample_rollouts(rec, stage))
            if rec.step % cfg.rl.checkpoint_every == 0 or last:
                state = {"learner": learner.state_dict(), "source": source.state_dict(flight.ids())}
                if rec.schedule_state is not None:
                    state["schedule"] = rec.schedule_state
                save_training_state(root, rec.step, learner.model, tok, state)
                prune(root, keep=2)
            bar.update(1, rl_postfix(rec.metrics, latest[0]))

        spec = actor_spec(cfg, start_model, learner.version, teachers)
        _train(cfg, spec, learner, source, settings, start_step, on_step, schedule_state)
    finally:
        bar.close()
        scorer.close()
    if not final.exists():  # no step ran (rl.steps reached before a resume)
        save_checkpoint(model, tok, final)
    return final


def _restore(
    resumed: Path | None,
    learner: Learner,
    source: PromptSource,
    ledger: Ledger,
    run: RunDir,
    stage: str,
) -> tuple[int, dict[str, Any] | None]:
    """Load the training state saved at ``resumed`` (learner, prompt source, RNGs) and
    drop the ledger and log lines of the steps after it, which run again; without one,
    start the ledger and the stage's logs afresh. Returns (the step to start after, the
    deterministic schedule's saved state or None)."""
    if resumed is None:
        ledger.reset()
        run.truncate_logs(stage, -1)
        return 0, None
    state = load_training_state(resumed)
    learner.load_state_dict(state["learner"])
    source.load_state_dict(state["source"])
    set_rng_state(state["rng"])
    start_step = int(state["step"])
    ledger.truncate_after(start_step)
    run.truncate_logs(stage, start_step)  # steps after the checkpoint run again
    print(
        f"{stage}: resumed from {resumed.name} (step {start_step}, version {learner.version})",
        file=sys.stderr,
    )
    return start_step, state.get("schedule")


def _train(
    cfg: RunConfig,
    spec: ActorSpec,
    learner: Learner,
    source: PromptSource,
    settings: LoopSettings,
    start_step: int,
    on_step: StepHook,
    schedule_state: dict[str, Any] | None,
) -> None:
    """Start the actors (``cluster.backend``) and train from ``start_step`` on the
    configured schedule: the wall-clock loop (``core.loop``), or one local actor
    stepped on this thread by the logical clock (``core.lockstep``)."""
    backend = make_backend(
        cfg.cluster.backend,
        spec,
        cfg.rl.num_actors,
        cfg.cluster.address,
        cfg.cluster.num_cpus,
        overlap=cfg.rl.pipeline_depth > 1 and cfg.rl.schedule == "wall_clock",
        gpus=role_gpus(cfg.cluster, cfg.rl.num_actors),
    )
    if cfg.rl.schedule != "deterministic":
        train(learner, backend, source, settings, start_step=start_step, on_step=on_step)
        return
    assert isinstance(backend, LocalBackend)  # one local actor, stepped on this thread
    try:
        lockstep.train(
            learner,
            backend.actors[0],
            source,
            settings,
            start_step,
            on_step=on_step,
            state=schedule_state,
        )
    finally:
        backend.shutdown()


def _sample_rollouts(rec: StepRecord, stage: str, per_step: int = 2) -> list[dict[str, object]]:
    """A few rollouts of the step for rollouts.jsonl (the first group's first ones)."""
    out: list[dict[str, object]] = []
    for g in rec.groups[:1]:
        for r in g.rollouts[:per_step]:
            out.append(
                {
                    "stage": stage,
                    "step": rec.step,
                    "prompt_id": r.prompt_id,
                    "domain": r.domain,
                    "reward": r.reward,
                    "reason": r.reward_reason,
                    "text": r.text,
                    "finish": r.finish_reason,
                }
            )
    return out
