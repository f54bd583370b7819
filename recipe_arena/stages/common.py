"""Shared pieces of the supervised stages (base training, SFT): rendering conversations
and the held-out evaluation of a checkpoint. The step loop is ``supervised.train_steps``;
the cache helpers live in ``recipe_arena.cache`` (re-exported here for the stages that
import them from this module).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from transformers import PreTrainedTokenizerBase

from recipe_arena.cache import (  # noqa: F401 - re-exported for the stages
    CODE_VERSION,
    STALE_TMP_S,
    build_cached,
    cache_key,
    cache_root,
    write_json_atomic,
)
from recipe_arena.config import RunConfig
from recipe_arena.data.schema import DOMAINS, Domain, PromptRow
from recipe_arena.rundir import RunDir


def render(tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]]) -> str:
    """The conversation as text through the tokenizer's chat template."""
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    assert isinstance(text, str)
    return text


def heldout_rows(cfg: RunConfig, domains: Sequence[Domain] = DOMAINS) -> list[PromptRow]:
    """The world's held-out rows of ``domains`` (all four by default), domain by domain."""
    from recipe_arena.data.micro import generate_split

    n, seed = cfg.world.heldout_per_domain, cfg.world.data_seed
    return [r for d in domains for r in generate_split(d, "heldout", n, seed)]


def log_heldout_eval(cfg: RunConfig, run: RunDir, stage: str, step: int, checkpoint: Path) -> None:
    """Log held-out pass@1 per domain of ``checkpoint`` (``heldout_eval``'s metrics)
    under ``stage`` and ``step``; the chat scores wait for a micro judge still training
    in the background while the run goes on (``eval.deferred.log_heldout_eval``)."""
    from recipe_arena.eval.deferred import log_heldout_eval as log_eval

    log_eval(cfg, run, stage, step, checkpoint, heldout_rows(cfg))


def heldout_eval(
    cfg: RunConfig, checkpoint: Path, domains: Sequence[Domain] = DOMAINS
) -> dict[str, float]:
    """Held-out pass@1 per domain of ``checkpoint`` on the world's held-out rows of
    ``domains`` (all four by default; cached next to it, see
    ``eval.final.evaluate_checkpoint``, so a cached base model is evaluated once)."""
    from recipe_arena.eval.final import evaluate_checkpoint

    return evaluate_checkpoint(cfg, checkpoint, heldout_rows(cfg, domains)).metrics
