"""lm-evaluation-harness integration: our checkpoints as lm-eval models, our worlds'
held-out sets as local lm-eval tasks scored by our verifiers.

- ``RecipeArenaLM`` (registered as lm-eval model ``recipe_arena``): a checkpoint
  directory loaded through ``models.factory.load_checkpoint`` and served by lm-eval's
  HF model class, so every lm-eval task type (log-likelihood and generation) runs on
  it. lm-eval's plug-in interface is a base class, hence the one subclass here; it
  changes one thing: generated text keeps special tokens (then cut at the end-of-turn
  marker) as ``data.chat.decode_response`` does, because the verifiers look for the answer after ``</think>``, which the
  micro tokenizer holds as a special token.
- ``write_tasks``: one task per domain of the world's held-out evaluation rows (the
  same rows as the run's own evaluation, ``eval.final.eval_rows``), written as a
  local JSONL file and a task YAML (``dataset_path: json``: no hub). Each question's
  prompt is its conversation through the checkpoint's chat template, so the model
  sees exactly what our own evaluation feeds it. ``k`` samples per question
  (``repeats``); ``process_results`` scores them with the world's verifiers and
  reports pass@1 (the share of samples that pass) and the unbiased pass@k.
- ``run_harness``: ``lm_eval.simple_evaluate`` on those tasks (and any other tasks
  lm-eval knows, whose data must then be available offline).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from recipe_arena import offline_env
from recipe_arena.comparison_plan import read_run_config
from recipe_arena.config import RunConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core.metrics import PASS_THRESHOLD
from recipe_arena.data.schema import PromptRow
from recipe_arena.eval.stats import pass_at_k

REWARDS_FILE = "rewards.json"
"""The verifier settings the task directory's ``process_results`` scores with."""
UTILS = """\
# Written by recipe_arena.eval.harness: scores samples with recipe-arena's verifiers.
from recipe_arena.eval.harness import process_results  # noqa: F401
"""


@cache
def _lm_class() -> type:
    offline_env()
    from lm_eval.api.registry import register_model
    from lm_eval.models.huggingface import HFLM

    @register_model("recipe_arena")
    class RecipeArenaLM(HFLM):  # type: ignore[misc]
        """A recipe-arena checkpoint directory as an lm-eval model:
        ``--model recipe_arena --model_args checkpoint=DIR[,batch_size=N]``."""

        def __init__(self, checkpoint: str, batch_size: int | str = 16, **kwargs: Any) -> None:
            from recipe_arena.models.factory import load_checkpoint

            model, tok = load_checkpoint(checkpoint)
            model.train(False)
            super().__init__(
                pretrained=model,
                tokenizer=tok,
                batch_size=int(batch_size),
                max_length=int(model.config.max_position_embeddings),
                **kwargs,
            )

        def tok_decode(self, tokens: Any, skip_special_tokens: bool = False) -> str:
            # special tokens kept, padding dropped: what data.chat.decode_response returns (the
            # end-of-turn marker is one of lm-eval's stop strings and cut there)
            text = str(self.tokenizer.decode(tokens, skip_special_tokens=skip_special_tokens))
            pad = self.tokenizer.pad_token
            return text.replace(pad, "") if pad and not skip_special_tokens else text

    return RecipeArenaLM


def make_lm(checkpoint: str | Path, batch_size: int = 16) -> Any:
    """The checkpoint as an lm-eval LM object."""
    return _lm_class()(checkpoint=str(checkpoint), batch_size=batch_size)


def task_name(world: str, domain: str) -> str:
    return f"{world}_{domain}"


def write_tasks(
    cfg: RunConfig,
    tokenizer: Any,
    out_dir: str | Path,
    k: int = 1,
    temperature: float | None = None,
    rows: Sequence[PromptRow] | None = None,
) -> list[str]:
    """Write one lm-eval task per held-out domain into ``out_dir``; return their names.

    ``rows`` defaults to the world's held-out evaluation rows; ``temperature`` to 1.0
    when ``k > 1`` (pass@k needs distinct samples) and to ``cfg.eval.temperature``
    otherwise (0: greedy)."""
    from recipe_arena.eval.final import eval_rows
    from recipe_arena.eval.scores import source_of

    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if rows is None:
        from recipe_arena.data.worlds import build_world

        heldout = [r for by_domain in build_world(cfg.world)["heldout"].values() for r in by_domain]
        rows = eval_rows(cfg, heldout)
    temp = temperature if temperature is not None else (1.0 if k > 1 else cfg.eval.temperature)
    (out / REWARDS_FILE).write_text(cfg.rewards.model_dump_json())
    (out / "utils.py").write_text(UTILS)
    names = []
    for domain in dict.fromkeys(r.domain for r in rows):
        name = task_name(cfg.world.name, domain)
        data = out / f"{name}.jsonl"
        with open(data, "w", encoding="utf-8") as f:
            for row in (r for r in rows if r.domain == domain):
                msgs = [m.model_dump() for m in row.messages]
                prompt = tokenizer.apply_chat_template(
                    msgs, add_generation_prompt=True, tokenize=False
                )
                rec = {"id": row.id, "source": source_of(row), "prompt": prompt}
                f.write(json.dumps({**rec, "row": row.model_dump_json()}) + "\n")
        # the hook is a YAML tag (!function), which yaml.safe_dump would quote into a string
        text = yaml.safe_dump(_task_yaml(name, data, k, temp, cfg), sort_keys=False)
        (out / f"{name}.yaml").write_text(
            text + "process_results: !function utils.process_results\n"
        )
        names.append(name)
    return names


def _task_yaml(name: str, data: Path, k: int, temperature: float, cfg: RunConfig) -> dict[str, Any]:
    gen: dict[str, Any] = {"until": [], "max_gen_toks": cfg.eval.max_new_tokens}
    gen.update(
        {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
    )
    return {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(data)}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "{{prompt}}",
        "doc_to_target": "",
        "generation_kwargs": gen,
        "repeats": k,
        "filter_list": [{"name": "all", "filter": [{"function": "take_first_k", "k": k}]}],
        "metric_list": [
            {"metric": "pass@1", "aggregation": "mean", "higher_is_better": True},
            {"metric": f"pass@{k}", "aggregation": "mean", "higher_is_better": True},
        ][: 1 if k == 1 else 2],
        "metadata": {"version": 1.0, "k": k},
    }


@cache
def _scorer(task_dir: str) -> Any:
    from recipe_arena.rewards import build_scorer

    path = Path(task_dir) / REWARDS_FILE
    rewards = (
        RewardsConfig.model_validate_json(path.read_text()) if path.exists() else RewardsConfig()
    )
    return build_scorer(rewards, shared=True)


def score_samples(row: PromptRow, responses: Sequence[str], scorer: Any) -> dict[str, float]:
    """pass@1 and pass@k (k = number of responses) of one question's samples; a
    sample passes when its verifier score is 1."""
    results = scorer.score([row] * len(responses), list(responses))
    passed = sum(float(r.score) >= PASS_THRESHOLD for r in results)
    n = len(responses)
    out = {"pass@1": pass_at_k(n, passed, 1)}
    if n > 1:
        out[f"pass@{n}"] = pass_at_k(n, passed, n)
    return out


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """lm-eval hook: ``results`` holds the question's k samples (``[[s1, ..., sk]]``
    after the ``take_first_k`` filter); the verifier settings come from the task
    directory's rewards.json (found through ``RECIPE_ARENA_TASK_DIR``, which
    ``run_harness`` sets, or the default settings)."""
    samples = results[0] if results and isinstance(results[0], list) else results
    row = PromptRow.model_validate_json(doc["row"])
    return score_samples(
        row, [str(s) for s in samples], _scorer(os.environ.get("RECIPE_ARENA_TASK_DIR", ""))
    )


def run_harness(
    checkpoint: str | Path,
    task_dir: str | Path,
    tasks: Sequence[str],
    limit: int | None = None,
    batch_size: int = 16,
    seed: int = 0,
) -> dict[str, Any]:
    """lm-eval's ``simple_evaluate`` of the checkpoint on ``tasks`` (ours in
    ``task_dir``, or any other lm-eval task available offline); returns lm-eval's
    results dict (``results[task]["pass@1,all"]``, per-sample logs in ``samples``)."""
    offline_env()
    import lm_eval
    from lm_eval.tasks import TaskManager

    task_dir = Path(task_dir).resolve()
    os.environ["RECIPE_ARENA_TASK_DIR"] = str(task_dir)
    ours = {p.stem for p in task_dir.glob("*.yaml")}
    # indexing lm-eval's own catalogue (thousands of YAML files) only when it is used
    manager = TaskManager(include_path=str(task_dir), include_defaults=not set(tasks) <= ours)
    out = lm_eval.simple_evaluate(
        model=make_lm(checkpoint, batch_size),
        tasks=list(tasks),
        task_manager=manager,
        limit=limit,
        log_samples=True,
        random_seed=seed,
        numpy_random_seed=seed,
        torch_random_seed=seed,
    )
    assert out is not None
    return dict(out)


def resolve_target(target: str | Path, overrides: Sequence[str]) -> tuple[Path, RunConfig]:
    """(checkpoint, config) of a run directory (its final checkpoint and its resolved
    config; ``overrides`` then not allowed) or of a checkpoint directory (the config
    composed from ``overrides``, e.g. ``budget=smoke`` for the smoke world's rows)."""
    from recipe_arena.compose import ConfigError, load_config

    path = Path(target)
    stages = path / "stages.json"
    if stages.exists():
        if overrides:
            raise ConfigError(
                f"{path} is a run directory; its config applies (drop {list(overrides)})"
            )
        checkpoint = json.loads(stages.read_text()).get("checkpoint")
        if not checkpoint:
            raise ConfigError(f"{path}: the run has no checkpoint yet (stages.json)")
        cfg = RunConfig.model_validate(read_run_config(path))
        return Path(checkpoint), cfg
    if not (path / "config.json").exists():
        raise ConfigError(f"{path} is neither a run directory nor a checkpoint directory")
    return path, load_config(list(overrides))


def evaluate_target(
    target: str | Path,
    overrides: Sequence[str],
    k: int,
    limit: int | None,
    extra_tasks: Sequence[str],
    task_dir: str | Path,
) -> dict[str, dict[str, float]]:
    """`recipe-arena lm-eval`: our held-out tasks (and ``extra_tasks``) through lm-eval;
    returns {task: {metric: value}}."""
    from recipe_arena.models.factory import load_checkpoint

    checkpoint, cfg = resolve_target(target, overrides)
    _, tok = load_checkpoint(checkpoint)
    names = write_tasks(cfg, tok, task_dir, k=k)
    out = run_harness(checkpoint, task_dir, [*names, *extra_tasks], limit=limit, seed=cfg.seed)
    return {
        task: {m: float(v) for m, v in res.items() if isinstance(v, int | float) and "," in m}
        for task, res in out["results"].items()
    }
