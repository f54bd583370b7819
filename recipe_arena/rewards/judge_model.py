"""The model that judges chat: ``rewards.judge_model`` names the micro world's own judge
('micro', trained on first use, ``rewards.micro_judge``), SmolLM2-135M-Instruct
('smol'), a checkpoint directory, or an OpenAI-compatible base URL (http://...)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recipe_arena.rewards.judge import EngineGenerator, HTTPGenerator, Judge, TextGenerator
from recipe_arena.rewards.micro_judge import micro_judge_checkpoint


def build_generator(cfg: Any) -> TextGenerator:
    """The configured judge model: 'micro', 'smol', a local checkpoint directory, or an
    http URL."""
    name = cfg.judge_model
    if name.startswith(("http://", "https://")):
        return HTTPGenerator(
            name,
            max_new_tokens=cfg.judge_max_new_tokens,
            timeout_s=cfg.judge_timeout_s,
            retries=cfg.judge_retries,
        )
    from recipe_arena.engines import build_engine

    if name == "smol":
        from recipe_arena.models.smol import load_smol

        model, tok = load_smol()
    elif name == "micro":
        from recipe_arena.models.factory import load_checkpoint

        model, tok = load_checkpoint(micro_judge_checkpoint(cfg.micro_judge))
        model.eval()  # type: ignore[no-untyped-call]
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if not Path(name).is_dir():
            raise ValueError(
                f"judge_model {name!r}: use 'micro', 'smol', a checkpoint directory or an "
                "http(s) URL"
            )
        model = AutoModelForCausalLM.from_pretrained(name).eval()  # type: ignore[no-untyped-call]
        tok = AutoTokenizer.from_pretrained(name)
    return EngineGenerator(
        build_engine(judge_engine(model), model, tok),
        tok,
        cfg.judge_max_new_tokens,
        markers=cfg.judge_markers,
    )


def judge_engine(model: Any) -> str:
    """The project's fastest engine that runs ``model``: ``torch`` (continuous batching)
    for the Llama-family models it supports, else ``hf``."""
    from recipe_arena.engines.kv_runner import check_supported

    try:
        check_supported(model)
    except ValueError:
        return "hf"
    return "torch"


def build_judge(cfg: Any) -> Judge:
    return Judge(build_generator(cfg), cfg.judge_mode)
