"""The base corpus's plain documents (``base.plain_fraction``, for RL-Zero): how many are
written in the simple template and how, and that the ChatML-only base model of the other
recipes keeps its cache key."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipe_arena.cache import cache_key, cache_root
from recipe_arena.compose import load_config
from recipe_arena.config import RunConfig
from recipe_arena.data.micro import generate_examples
from recipe_arena.models.tokenizer import build_char_tokenizer
from recipe_arena.stages.base import (
    _BASE_DATA_SEED_OFFSET,
    base_cache_entry,
    base_corpus,
    corpus_sizes,
    plain_documents,
    seeded_subset,
)


def _cfg(tmp_path: Path, **base: object) -> RunConfig:
    small: dict[str, object] = {"steps": 40, "batch_size": 8, "seq_len": 64, "evaluate": False}
    small["corpus"] = {"math": 300, "code": 30, "ifeval": 30, "chat": 30}
    return RunConfig.model_validate(
        {"base": {**small, **base}, "world": {"cache_dir": str(tmp_path / "cache")}}
    )


def test_seeded_subset_rounds_to_nearest_and_is_seeded() -> None:
    """floor(f * n + 0.5): 0.25 * 10 = 2.5 -> 3; 0.24 * 10 = 2.4 -> 2; 0 -> none; 1 -> all.
    The members depend on the label alone."""
    assert len(seeded_subset(10, 0.25, "a")) == 3
    assert len(seeded_subset(10, 0.24, "a")) == 2
    assert seeded_subset(10, 0.0, "a") == set()
    assert seeded_subset(10, 1.0, "a") == set(range(10))
    assert seeded_subset(100, 0.3, "a") == seeded_subset(100, 0.3, "a")
    assert seeded_subset(100, 0.3, "a") != seeded_subset(100, 0.3, "b")


def test_plain_documents_counts_and_text(tmp_path: Path) -> None:
    """Corpus sizes as in test_base_stage: math 158, code/ifeval/chat 20 each (218 docs).
    plain_fraction 0.25: math floor(39.5 + 0.5) = 40, the others floor(5 + 0.5) = 5 -> 55
    plain, 163 ChatML. plain_careful_fraction 0.5 of those: math 20, the others
    floor(2.5 + 0.5) = 3 -> 29 careful and 26 quick. In the stream a ChatML document opens
    its reply with ``<|im_start|>assistant\\n<think>`` and a plain one reads ``User: `` ...
    ``\\nAssistant:\\n<think>``, the quick ones with ``</think>`` at once."""
    tok = build_char_tokenizer()
    cfg = _cfg(tmp_path, plain_fraction=0.25, plain_careful_fraction=0.5)
    assert corpus_sizes(cfg) == {"math": 158, "code": 20, "ifeval": 20, "chat": 20}
    plain = {d: plain_documents(cfg, d, n) for d, n in corpus_sizes(cfg).items()}
    assert {d: len(p) for d, p in plain.items()} == {"math": 40, "code": 5, "ifeval": 5, "chat": 5}
    assert {d: sum(p.values()) for d, p in plain.items()} == {
        "math": 20,
        "code": 3,
        "ifeval": 3,
        "chat": 3,
    }
    text = tok.decode(base_corpus(cfg, tok).tolist(), skip_special_tokens=False)
    assert text.count("<|im_start|>assistant\n<think>") == 163
    assert text.count("User: ") == 55
    assert text.count("\nAssistant:\n<think>") == 55
    assert text.count("\nAssistant:\n<think></think>") == 26
    # The first plain math document, whole: prompt, generation prompt, reply, EOS.
    i = min(plain["math"])
    ex = generate_examples("math", "train", 158, cfg.world.data_seed + _BASE_DATA_SEED_OFFSET)[i]
    reply = ex.response if plain["math"][i] else ex.quick_response
    doc = f"User: {ex.row.messages[0].content}\nAssistant:\n{reply}<|im_end|>"
    assert doc in text


def test_plain_fraction_zero_leaves_the_corpus_as_it_was(tmp_path: Path) -> None:
    """At plain_fraction 0 the careful share is ignored: the same token stream, all ChatML."""
    tok = build_char_tokenizer()
    a = base_corpus(_cfg(tmp_path), tok)
    b = base_corpus(_cfg(tmp_path, plain_careful_fraction=0.9), tok)
    assert a.tolist() == b.tolist()
    assert "User: " not in tok.decode(a.tolist(), skip_special_tokens=False)


def _key_before_plain_documents(cfg: RunConfig) -> str:
    """The base cache key as computed before the plain-document fields existed."""
    return cache_key(
        {
            "stage": "base",
            "base": cfg.base.model_dump(
                mode="json", exclude={"evaluate", "plain_fraction", "plain_careful_fraction"}
            ),
            "model": cfg.world.model.model_dump(mode="json"),
            "data_seed": cfg.world.data_seed,
            "world": cfg.world.name,
        }
    )


@pytest.mark.parametrize("budget", ["default"])
@pytest.mark.parametrize("recipe", ["olmo3_think", "kimi_k3", "deepseek_v4_flash"])
def test_chatml_base_keeps_its_cache_key(recipe: str, budget: str) -> None:
    """The recipes that start from the ChatML-only base model find the entry their figures
    were measured on: the key the former formula gives, one for all three recipes. (At
    budget=smoke every recipe shares one base with plain documents: below.)"""
    cfg = load_config([f"recipe={recipe}", f"budget={budget}"])
    assert cfg.base.plain_fraction == 0
    entry = base_cache_entry(cfg)
    assert entry == cache_root(cfg.world.cache_dir) / "base" / _key_before_plain_documents(cfg)
    think = load_config(["recipe=olmo3_think", f"budget={budget}"])
    assert entry == base_cache_entry(think)


def test_smoke_base_is_one_entry_for_every_recipe() -> None:
    """At budget=smoke every recipe starts from one base model with plain documents
    (plain_fraction 0.5, 160 steps: recipes/budget/smoke.yaml; RL-Zero needs the plain
    ones, the others then find it in the cache), and the careful share then enters its
    key; at the default budget RL-Zero starts from the base model the other recipes
    share."""
    cfg = load_config(["recipe=olmo3_rl_zero", "budget=smoke"])
    assert (cfg.base.plain_fraction, cfg.base.steps) == (0.5, 160)
    for recipe in ("olmo3_think", "kimi_k3", "deepseek_v4_flash"):
        assert base_cache_entry(load_config([f"recipe={recipe}", "budget=smoke"])) == (
            base_cache_entry(cfg)
        )
    update = {"plain_careful_fraction": 0.3}
    other = cfg.model_copy(update={"base": cfg.base.model_copy(update=update)})
    assert base_cache_entry(other) != base_cache_entry(cfg)
    default = load_config(["recipe=olmo3_rl_zero"])
    assert base_cache_entry(default) == base_cache_entry(load_config(["recipe=olmo3_think"]))
