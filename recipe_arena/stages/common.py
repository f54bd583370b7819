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
from recipe_arena.data.schema import DOMAINS, Domain


def render(tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]]) -> str:
    """The conversation as text through the tokenizer's chat template."""
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    assert isinstance(text, str)
    return text


def heldout_eval(
    cfg: RunConfig, checkpoint: Path, domains: Sequence[Domain] = DOMAINS
) -> dict[str, float]:
    """Held-out pass@1 per domain of ``checkpoint`` on the world's held-out rows of
    ``domains`` (all four by default; cached next to it, see
    ``eval.final.evaluate_checkpoint``, so a cached base model is evaluated once)."""
    from recipe_arena.data.micro import generate_split
    from recipe_arena.eval.final import evaluate_checkpoint

    n, seed = cfg.world.heldout_per_domain, cfg.world.data_seed
    heldout = [r for d in domains for r in generate_split(d, "heldout", n, seed)]
    return evaluate_checkpoint(cfg, checkpoint, heldout).metrics
