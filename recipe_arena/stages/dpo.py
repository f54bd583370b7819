"""Think DPO with delta learning: SFT -> DPO -> RLVR, as in OLMo 3 (seed "SFT -> DPO ->
RLVR"; Team OLMo et al. 2025, sec. 4.3).

Loss (Rafailov et al. 2023, sigmoid form), over a batch of B pairs (x, y_w, y_l):

    h_b = beta * [(log pi(y_w|x) - log pi_ref(y_w|x)) - (log pi(y_l|x) - log pi_ref(y_l|x))]
    L   = -mean_b log sigmoid(h_b)

where log pi(y|x) sums the response's token log-probabilities (prompt tokens excluded) and
the reference is the stage's starting checkpoint, whose log-probabilities are computed
once, before training, for every pair.

Pairs come from ``dpo_pairs`` (strong model against weak model, length-capped). Dataset
size is a hyperparameter (OLMo 3: more pairs were not monotonically better): each size in
``dpo.sizes`` trains from the starting checkpoint on the first ``size`` kept pairs, with
early stopping on the validation slice (greedy pass@1 on train-split prompts of a draw of
their own; the held-out evaluation rows never take part in selection). The size and step
with the best validation score give the stage's checkpoint.

Writes ``dpo_pairs.jsonl`` (every pair before the cap, with its texts) and ``dpo.json``
(pair counts, length-difference percentiles before and after the cap per subset, the
chosen/rejected contrast, each size's validation curve and the winner).

Deviations from OLMo 3: the micro world's strong model is its reference solutions (see
``dpo_pairs``); a few dozen optimiser steps instead of an epoch over ~150K pairs; plain
(not length-normalised) sigmoid DPO.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from recipe_arena.config import RunConfig
from recipe_arena.core.logprobs import sequence_logprobs
from recipe_arena.core.schedule import lr_at
from recipe_arena.data.schema import PromptRow
from recipe_arena.models.factory import load_checkpoint, save_checkpoint
from recipe_arena.progress import StageBar
from recipe_arena.rundir import RunDir
from recipe_arena.stages.dpo_pairs import (
    PairSet,
    PreferencePair,
    build_pairs,
    length_report,
    pair_contrast,
    validation_rows,
    write_pairs_file,
)

REF_BATCH = 32
"""Pairs per forward when computing reference log-probabilities (memory only)."""


# ----------------------------------------------------------------------------- the loss
def dpo_loss(
    policy_chosen_B: torch.Tensor,
    policy_rejected_B: torch.Tensor,
    ref_chosen_B: torch.Tensor,
    ref_rejected_B: torch.Tensor,
    beta: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Sigmoid DPO: -mean_b log sigmoid(beta * [(pc_b - rc_b) - (pr_b - rr_b)]), inputs
    being each response's summed log-probability. Metrics: ``loss/dpo``, the implicit
    rewards beta * (log pi - log pi_ref) of chosen and rejected, their margin and the
    share of pairs whose margin is positive."""
    chosen_reward_B = beta * (policy_chosen_B - ref_chosen_B)
    rejected_reward_B = beta * (policy_rejected_B - ref_rejected_B)
    margin_B = chosen_reward_B - rejected_reward_B
    loss = -F.logsigmoid(margin_B).mean()
    metrics = {
        "loss/dpo": float(loss.detach()),
        "dpo/chosen_reward": float(chosen_reward_B.detach().mean()),
        "dpo/rejected_reward": float(rejected_reward_B.detach().mean()),
        "dpo/margin": float(margin_B.detach().mean()),
        "dpo/reward_accuracy": float((margin_B.detach() > 0).float().mean()),
    }
    return loss, metrics


@dataclass(frozen=True)
class PairBatch:
    """Chosen rows 0..B-1, rejected rows B..2B-1, each prompt + response, right-padded."""

    tokens_2BL: torch.Tensor
    attention_2BL: torch.Tensor
    response_mask_2BL: torch.Tensor
    """1 on response tokens (position l scores token l), 0 on prompt and padding."""


def pair_batch(pairs: Sequence[PreferencePair], pad_id: int) -> PairBatch:
    seqs = [(p.prompt_tokens, p.chosen_tokens) for p in pairs]
    seqs += [(p.prompt_tokens, p.rejected_tokens) for p in pairs]
    L = max(len(a) + len(b) for a, b in seqs)
    tokens_2BL = torch.full((len(seqs), L), pad_id, dtype=torch.long)
    attention_2BL = torch.zeros((len(seqs), L), dtype=torch.long)
    mask_2BL = torch.zeros((len(seqs), L), dtype=torch.float32)
    for i, (prompt, response) in enumerate(seqs):
        n = len(prompt) + len(response)
        tokens_2BL[i, :n] = torch.tensor([*prompt, *response])
        attention_2BL[i, :n] = 1
        mask_2BL[i, len(prompt) : n] = 1.0
    return PairBatch(tokens_2BL, attention_2BL, mask_2BL)


def response_logps(model: Any, batch: PairBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(chosen_B, rejected_B): summed log-probabilities of each response given its prompt,
    on the model's device."""
    dev = next(model.parameters()).device
    logp_2BL = sequence_logprobs(model, batch.tokens_2BL.to(dev), batch.attention_2BL.to(dev))
    logp_2B = (logp_2BL * batch.response_mask_2BL.to(dev)).sum(-1)
    B = logp_2B.shape[0] // 2
    return logp_2B[:B], logp_2B[B:]


@torch.no_grad()
def reference_logps(
    model: Any, pairs: Sequence[PreferencePair], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference log-probabilities of every pair, computed once: (chosen_P, rejected_P)."""
    model.train(False)
    chosen, rejected = [], []
    for start in range(0, len(pairs), REF_BATCH):
        c_B, r_B = response_logps(model, pair_batch(pairs[start : start + REF_BATCH], pad_id))
        chosen.append(c_B)
        rejected.append(r_B)
    return torch.cat(chosen), torch.cat(rejected)


# ----------------------------------------------------------------------------- one size
Validate = Callable[[Any], tuple[float, dict[str, float]]]
"""model -> (validation score, its metrics)."""


@dataclass
class SizeResult:
    """One dataset size's validation curve with early stopping: the best score (ties keep
    the earlier step) and whether ``patience`` validations in a row brought no new best."""

    size: int
    patience: int
    best_score: float = -math.inf
    best_step: int = 0
    steps_run: int = 0
    stale: int = 0
    curve: list[tuple[int, float]] = field(default_factory=list)
    best_state: dict[str, torch.Tensor] | None = None

    def offer(self, step: int, score: float) -> bool:
        """Record a validation; True when it is a new best (strictly above the old one)."""
        self.curve.append((step, score))
        if score > self.best_score:
            self.best_score, self.best_step, self.stale = score, step, 0
            return True
        self.stale += 1
        return False

    @property
    def stop(self) -> bool:
        return self.stale >= self.patience


def choose(results: Sequence[SizeResult]) -> SizeResult:
    """The size with the best validation score; a tie goes to the smaller size."""
    return max(results, key=lambda r: (r.best_score, -r.size))


def batch_order(n: int, steps: int, batch_size: int, seed: int) -> list[list[int]]:
    """Pair indices of each step: epochs of a seeded permutation, concatenated and cut
    into batches (the last epoch may be partial)."""
    stream: list[int] = []
    epoch = 0
    while len(stream) < steps * batch_size:
        perm = list(range(n))
        random.Random(f"{seed}/{epoch}").shuffle(perm)
        stream += perm
        epoch += 1
    return [stream[i * batch_size : (i + 1) * batch_size] for i in range(steps)]


def train_size(
    cfg: RunConfig,
    model: Any,
    init_state: dict[str, torch.Tensor],
    pairs: Sequence[PreferencePair],
    ref: tuple[torch.Tensor, torch.Tensor],
    validate: Validate,
    run: RunDir | None,
    pad_id: int,
) -> SizeResult:
    """DPO from ``init_state`` on ``pairs`` with early stopping: validate every
    ``dpo.eval_every`` steps and at the last; stop after ``dpo.patience`` validations
    without a new best; keep the best weights. With ``dpo.select=last``: train every
    step and keep the final weights (best_step and best_score then name those)."""
    d = cfg.dpo
    last = d.select == "last"
    model.load_state_dict(init_state)
    steps = math.ceil(len(pairs) * d.epochs / d.batch_size)
    order = batch_order(len(pairs), steps, d.batch_size, cfg.seed)
    opt = torch.optim.AdamW(
        model.parameters(), lr=d.lr, betas=d.adam_betas, weight_decay=d.weight_decay
    )
    result = SizeResult(size=len(pairs), patience=d.patience)
    bar = StageBar("dpo", steps)
    for step in range(steps):
        model.train()
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, min(d.warmup_steps, steps), d.lr)
        idx = order[step]
        chosen_B, rejected_B = response_logps(model, pair_batch([pairs[i] for i in idx], pad_id))
        loss, metrics = dpo_loss(chosen_B, rejected_B, ref[0][idx], ref[1][idx], d.beta)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        metrics["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        result.steps_run = step + 1
        done = step + 1
        if done % d.eval_every == 0 or done == steps:
            model.train(False)
            score, val_metrics = validate(model)
            metrics.update(val_metrics)
            if result.offer(done, score) and not last:
                result.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if run is not None:
            run.log(
                "dpo",
                done,
                {"dpo/size": float(len(pairs)), "lr": opt.param_groups[0]["lr"], **metrics},
            )
        postfix = f"{len(pairs)} pairs, loss {metrics['loss/dpo']:.3f}"
        bar.update(1, f"{postfix}, acc {metrics['dpo/reward_accuracy']:.2f}")
        if result.stop and not last:
            best = f"best {result.best_score:.3f} at {result.best_step}"
            bar.note(f"dpo: early stop at step {done} ({best})")
            break
    bar.close()
    if last:
        result.best_step, result.best_score = result.curve[-1]
        result.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return result


# ----------------------------------------------------------------------------- the stage
def make_validate(cfg: RunConfig, tok: Any, rows: Sequence[PromptRow], scorer: Any) -> Validate:
    """Greedy pass@1 per domain of ``rows`` (``val/<domain>/pass@1``); the score is their
    mean over domains. Greedy whatever ``eval.temperature`` says: a validation score
    compares checkpoints to pick one, and greedy decoding adds no sampling noise to it at
    a quarter of the cost of the held-out evaluation's samples."""
    from recipe_arena.engines import build_engine
    from recipe_arena.eval.evaluate import evaluate_rows

    greedy = cfg.eval.model_copy(update={"temperature": 0.0, "samples": 1})

    def validate(model: Any) -> tuple[float, dict[str, float]]:
        engine = build_engine(cfg.engine.name, model, tok, cfg.engine)
        try:
            ev = evaluate_rows(engine, tok, rows, scorer, greedy, cfg.prompt_template)
        finally:
            engine.close()
        metrics = {k.replace("eval/", "val/", 1): v for k, v in ev.metrics.items()}
        return metrics["val/mean/pass@1"], metrics

    return validate


def run_dpo(cfg: RunConfig, run: RunDir, init: Path, weak: Path) -> Path:
    """DPO from checkpoint ``init`` (also the reference) with rejected responses from the
    weak checkpoint ``weak``; returns ``<run>/checkpoints/dpo``."""
    from recipe_arena.rewards import build_scorer
    from recipe_arena.stages.common import log_heldout_eval

    torch.manual_seed(cfg.seed)
    model, tok = load_checkpoint(init)
    model.to(cfg.device_for("dpo"))
    pad = int(tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)
    pairs = _make_pairs(cfg, model, tok, weak)
    write_pairs_file(run.path / "dpo_pairs.jsonl", pairs)
    lengths = length_report(pairs.before_cap, pairs.kept)
    summary: dict[str, Any] = {"counts": dict(pairs.counts), "length_delta": lengths}
    with build_scorer(cfg.rewards, shared=True) as scorer:
        summary["contrast"] = pair_contrast(pairs, scorer)
        counts = {f"dpo/pairs/{k}": float(v) for k, v in pairs.counts.items()}
        run.log("dpo", 0, {**_length_metrics(lengths), **summary["contrast"], **counts})
        validate = make_validate(cfg, tok, validation_rows(cfg, pairs.candidates), scorer)
        start_score, results, best = _sweep(cfg, run, model, pairs.kept, validate, pad)
    assert best.best_state is not None
    model.load_state_dict(best.best_state)
    out = save_checkpoint(model, tok, run.checkpoints / "dpo")
    summary["start_score"] = start_score
    summary["sizes"] = [
        {k: getattr(r, k) for k in ("size", "best_score", "best_step", "steps_run", "curve")}
        for r in results
    ]
    summary["chosen"] = {"size": best.size, "step": best.best_step, "score": best.best_score}
    run.write_json("dpo.json", summary)
    chosen = {
        "dpo/chosen_size": float(best.size),
        "dpo/chosen_step": float(best.best_step),
        "val/chosen/score": best.best_score,
        "val/start/score": start_score,
    }
    run.log("dpo", best.best_step, chosen)
    if cfg.dpo.evaluate:
        log_heldout_eval(cfg, run, "dpo", best.best_step, out)
    return out


def _make_pairs(cfg: RunConfig, model: Any, tok: Any, weak: Path) -> PairSet:
    """Delta-learning pairs for the largest size: the weak checkpoint's samples as
    rejected, the references (or the policy's samples) as chosen."""
    from recipe_arena.engines import build_engine

    weak_model, _ = load_checkpoint(weak)
    weak_engine = build_engine(cfg.engine.name, weak_model, tok, cfg.engine)
    policy_engine = (
        build_engine(cfg.engine.name, model, tok, cfg.engine)
        if cfg.dpo.chosen == "policy"
        else None
    )
    try:
        pairs = build_pairs(
            cfg,
            tok,
            weak_engine,
            policy_engine,
            max(cfg.dpo.sizes),
            model.config.max_position_embeddings,
            progress=lambda m: print(m, file=sys.stderr, flush=True),
        )
    finally:
        weak_engine.close()
        if policy_engine is not None:
            policy_engine.close()
    if not pairs.kept:
        raise RuntimeError(f"dpo: no pair survived the length cap out of {len(pairs.before_cap)}")
    return pairs


def _sweep(
    cfg: RunConfig,
    run: RunDir,
    model: Any,
    pairs: Sequence[PreferencePair],
    validate: Validate,
    pad: int,
) -> tuple[float, list[SizeResult], SizeResult]:
    """Validate the starting checkpoint, then train every size of ``dpo.sizes`` (capped
    at the kept pairs) from it; returns the start score, every size's result and the
    chosen one (the only one that keeps its weights). The start itself is a candidate
    (size 0, step 0), and a tie goes to it: early stopping never keeps weights that
    validate below the checkpoint DPO started from. With ``dpo.select=last`` only the
    largest size trains, and its final weights are chosen whatever they validate at."""
    ref = reference_logps(model, pairs, pad)
    init_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    start_score, start_metrics = validate(model)
    run.log("dpo", 0, {"dpo/size": 0.0, **start_metrics})
    start = SizeResult(size=0, patience=0, best_score=start_score, best_state=init_state)
    results: list[SizeResult] = []
    sizes = sorted({min(s, len(pairs)) for s in cfg.dpo.sizes})
    if cfg.dpo.select == "last":
        largest = train_size(cfg, model, init_state, pairs[: sizes[-1]], ref, validate, run, pad)
        return start_score, [largest], largest
    for size in sizes:
        results.append(train_size(cfg, model, init_state, pairs[:size], ref, validate, run, pad))
        best = choose([start, *results])
        for r in results:  # only the best so far keeps its weights in memory
            if r is not best:
                r.best_state = None
    return start_score, results, choose([start, *results])


def _length_metrics(report: dict[str, dict[str, dict[str, float]]]) -> dict[str, float]:
    """``dpo/length_delta/<subset>/<before|after>/p<q>`` and ``.../n``."""
    return {
        f"dpo/length_delta/{subset}/{when}/{k}": v
        for subset, by_when in report.items()
        for when, stats in by_when.items()
        for k, v in stats.items()
    }
