"""RL samples per second: recipe-arena against TRL's GRPOTrainer, one run, same work.

Both train the same micro model (random weights, the micro world's shape and
tokenizer; a random model writes until the token cap, so every sample costs the same
in both) on the same math prompts, with the same batch (N prompts x G completions a
step), response cap, learning rate and verifier (the project's math verifier in both),
for the same number of steps. Loss settings matched as closely as the two allow:
token-level normalisation over the batch (TRL ``loss_type="dapo"``, ours
``token``), centred advantages without std scaling (TRL ``scale_rewards="none"``, ours
``centered``), ratio clip [0.8, 1.272] (TRL ``epsilon`` / ``epsilon_high``), no KL
(``beta=0``), one update per batch, no importance-sampling correction (ours
``staleness=none``), and every sample trained (ours: zero-gradient filtering and
active sampling off, as TRL has neither). TRL generates with ``transformers``'
``generate`` (``use_vllm=False``: its vLLM mode does not run on CPU); recipe-arena with
its torch engine and its asynchronous loop (in-flight updates, staleness <= 1), its
default. Gradient checkpointing is off in TRL (on by default there; it costs time).

Samples per second = completions trained / wall time of the training call (model and
engine construction excluded on both sides). TRL runs one thing at a time and is timed
at each of ``--trl-threads`` torch thread counts, its best counting; recipe-arena runs
its engine and learner at once, with half the cores' threads per op each.

Run: python benchmarks/vs_trl.py [--steps 5 --prompts 8 --group 4 --tokens 64]
Last line: ``vs_trl: <x>x`` (recipe-arena samples/s over TRL's best).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from recipe_arena.compose import load_config
from recipe_arena.config import RunConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core.backends import LocalBackend, threads_per_op
from recipe_arena.core.loop import train
from recipe_arena.core.prompts import PromptSource
from recipe_arena.data.micro import generate_split
from recipe_arena.data.schema import PromptRow
from recipe_arena.models.factory import build_micro, load_checkpoint, save_checkpoint
from recipe_arena.rewards import build_scorer
from recipe_arena.wiring import actor_spec, learner_settings, loop_settings, make_learner

LR = 1e-4


def our_config(a: argparse.Namespace) -> RunConfig:
    """The OLMo 3 recipe's loss with TRL's matching choices (module docstring)."""
    return load_config(
        [
            f"rl.steps={a.steps}",
            f"rl.prompts_per_step={a.prompts}",
            f"rl.group_size={a.group}",
            f"rl.max_new_tokens={a.tokens}",
            f"rl.lr={LR}",
            "rl.temperature=1.0",
            "rl.zero_gradient_filter=false",
            "rl.active_sampling=false",
            "staleness=none",
            f"engine.max_batch_size={a.prompts * a.group}",
            "rewards.workers=1",
        ]
    )


def ours(init: Path, rows: list[PromptRow], a: argparse.Namespace) -> dict[str, float]:
    cfg = our_config(a)
    model, tok = load_checkpoint(init)
    learner = make_learner(model, learner_settings(cfg))
    backend = LocalBackend(actor_spec(cfg, init, 0), share_cores=False)  # --ours-threads
    source = PromptSource(rows, {"math": 1.0}, seed=0)
    t0 = time.perf_counter()
    records = train(learner, backend, source, loop_settings(cfg, int(tok.pad_token_id)))
    wall = time.perf_counter() - t0
    trained = sum(len(r.trained) for r in records) * a.group
    lengths = [r.metrics["length/mean"] for r in records if "length/mean" in r.metrics]
    return {"wall": wall, "samples": float(trained), "mean_length": sum(lengths) / len(lengths)}


def trl(init: Path, rows: list[PromptRow], a: argparse.Namespace, out: Path) -> dict[str, float]:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model, tok = load_checkpoint(init)
    scorer = build_scorer(RewardsConfig(workers=1), shared=True)
    ds = Dataset.from_list(
        [{"prompt": [m.model_dump() for m in r.messages], "row": r.model_dump_json()} for r in rows]
    )

    def math_reward(
        prompts: list[Any], completions: list[Any], row: list[str], **_: Any
    ) -> list[float]:
        texts = [c[0]["content"] if isinstance(c, list) else str(c) for c in completions]
        results = scorer.score([PromptRow.model_validate_json(r) for r in row], texts)
        return [float(r.score) for r in results]

    cfg = GRPOConfig(
        output_dir=str(out),
        max_steps=a.steps,
        per_device_train_batch_size=a.prompts * a.group,
        num_generations=a.group,
        max_completion_length=a.tokens,
        learning_rate=LR,
        lr_scheduler_type="constant",
        warmup_steps=0,
        temperature=1.0,
        beta=0.0,
        epsilon=0.2,
        epsilon_high=0.272,
        loss_type="dapo",
        scale_rewards="none",
        num_iterations=1,
        max_grad_norm=1.0,
        use_vllm=False,
        gradient_checkpointing=False,
        bf16=False,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        seed=0,
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=model, reward_funcs=math_reward, args=cfg, train_dataset=ds, processing_class=tok
    )
    math_reward(
        [], ["\\boxed{1}"], [rows[0].model_dump_json()]
    )  # start the verifier pool before timing
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    scorer.close()
    lengths = [
        h["completions/mean_length"]
        for h in trainer.state.log_history
        if "completions/mean_length" in h
    ]
    return {
        "wall": wall,
        "samples": float(a.steps * a.prompts * a.group),
        "mean_length": float(sum(lengths) / len(lengths)),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--tokens", type=int, default=64)
    cores = torch.get_num_threads()
    p.add_argument(
        "--trl-threads",
        default=f"1,{cores}",
        help="torch threads to try for TRL (its best counts; default 1 and all cores)",
    )
    p.add_argument(
        "--ours-threads",
        type=int,
        default=threads_per_op(cores, 1),
        help="torch threads per op for recipe-arena, whose engine and learner run at once "
        "(default half the cores, as benchmarks/async_vs_sync.py)",
    )
    a = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    rows = generate_split("math", "train", 400, seed=0)
    with tempfile.TemporaryDirectory() as d:
        model, tok = build_micro(seed=0)
        init = save_checkpoint(model, tok, Path(d) / "init")
        n_params = sum(p.numel() for p in model.parameters())
        print(
            f"micro model {n_params / 1e6:.2f}M params (random weights); {a.steps} steps x "
            f"{a.prompts} prompts x G={a.group}, {a.tokens}-token cap"
        )
        # warm-up (not reported): the verifier worker pool and first-call costs are paid
        # once per process, and would otherwise fall on whichever side runs first
        ours(init, rows, argparse.Namespace(**{**vars(a), "steps": 1}))
        runs = []
        for threads in sorted({int(t) for t in a.trl_threads.split(",")}):
            torch.set_num_threads(threads)
            runs.append(
                (f"TRL GRPOTrainer, {threads} threads", trl(init, rows, a, Path(d) / "trl"))
            )
        torch.set_num_threads(a.ours_threads)
        runs.append((f"recipe-arena, {a.ours_threads} threads/op", ours(init, rows, a)))
    for name, r in runs:
        print(
            f"{name:32s} {r['samples'] / r['wall']:7.2f} samples/s ({r['samples']:.0f} samples in "
            f"{r['wall']:.1f} s, mean length {r['mean_length']:.1f} tokens)"
        )
    got_ours = runs[-1][1]
    got_trl = max((r for _, r in runs[:-1]), key=lambda r: r["samples"] / r["wall"])
    ratio = (got_ours["samples"] / got_ours["wall"]) / (got_trl["samples"] / got_trl["wall"])
    print(f"vs_trl: {ratio:.2f}x")


if __name__ == "__main__":
    main()
