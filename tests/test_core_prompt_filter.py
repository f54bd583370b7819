"""Offline prompt filter: the keep rule on the seed's numbers, and the stage end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipe_arena.config import RunConfig
from recipe_arena.data.micro import generate_split
from recipe_arena.data.schema import read_rows
from recipe_arena.models.factory import TinyModelSpec, build_micro, save_checkpoint
from recipe_arena.rundir import RunDir
from recipe_arena.stages.prompt_filter import keep_prompt, run_prompt_filter


def test_keep_rule_on_the_seed_example() -> None:
    """Seed sec. 9.9: 3 of 8 solved = 37.5% <= 62.5%: kept. 5 of 8 = 62.5% is not *above*
    the threshold: kept. 6 of 8 = 75%: removed. 8 of 8: removed."""
    assert keep_prompt(3 / 8, 0.625)
    assert keep_prompt(5 / 8, 0.625)
    assert not keep_prompt(6 / 8, 0.625)
    assert not keep_prompt(1.0, 0.625)


def test_min_pass_rate_removes_unsolved_prompts() -> None:
    """min_pass_rate = 1/8 with k = 8: 0 of 8 solved is removed, 1 of 8 (12.5%) is kept
    (the bound is inclusive); the default 0 keeps the unsolved prompt, as OLMo 3 does."""
    assert not keep_prompt(0.0, 0.625, 1 / 8)
    assert keep_prompt(1 / 8, 0.625, 1 / 8)
    assert keep_prompt(0.0, 0.625)


@pytest.fixture()
def init(tmp_path: Path) -> Path:
    spec = TinyModelSpec(
        hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=256
    )
    model, tok = build_micro(spec, seed=0)
    return save_checkpoint(model, tok, tmp_path / "init")


def test_stage_samples_k_rollouts_scores_and_writes_the_filtered_set(
    tmp_path: Path, init: Path
) -> None:
    """A random model on 'no comma' style IFEval prompts (all-or-nothing): each prompt's
    pass rate is a multiple of 1/k (k = 4), the returned rows are exactly those with rate
    <= 0.5, and both files land in the run directory, the filtered rows readable back."""
    cfg = RunConfig.model_validate(
        {
            "seed": 0,
            "engine": {"max_batch_size": 32},
            "rewards": {"workers": 1},
            "rl": {"max_new_tokens": 10},
            "prompt_filter": {"rollouts": 4, "max_pass_rate": 0.5, "max_prompts": 12},
        }
    )
    rows = generate_split("ifeval", "train", 30, seed=0)
    run = RunDir(cfg, tmp_path / "run")
    kept = run_prompt_filter(cfg, run, init, rows)
    rates = [
        json.loads(line) for line in (run.path / "prompt_filter.jsonl").read_text().splitlines()
    ]
    assert [r["id"] for r in rates] == [r.id for r in rows[:12]]
    assert all(abs(r["pass_rate"] * 4 - round(r["pass_rate"] * 4)) < 1e-9 for r in rates)
    assert [r.id for r in kept] == [r["id"] for r in rates if r["pass_rate"] <= 0.5]
    assert [r.id for r in read_rows(run.path / "train_filtered.jsonl")] == [r.id for r in kept]
    logged = json.loads(run.metrics_path.read_text().splitlines()[-1])
    assert logged["prompt_filter/kept"] == len(kept) and logged["prompt_filter/prompts"] == 12


def test_interleave_takes_every_domain_round_robin() -> None:
    """math m0 m1 m2, code c0: round robin gives m0 c0 m1 m2, so a prefix of 2 holds both."""
    from recipe_arena.data.schema import Message, PromptRow
    from recipe_arena.stages.prompt_filter import interleave_domains

    def row(i: str, d: str) -> PromptRow:
        return PromptRow(id=i, messages=[Message(role="user", content="q")], domain=d)  # type: ignore[arg-type]

    rows = [row("m0", "math"), row("m1", "math"), row("m2", "math"), row("c0", "code")]
    assert [r.id for r in interleave_domains(rows)] == ["m0", "c0", "m1", "m2"]


def test_domain_quotas_split_by_weight_with_largest_remainder() -> None:
    """10 over {math 0.5, code 0.25, chat 0.25}: shares 5, 2.5, 2.5 -> 5 + 2 + 2 = 9, and
    the one left goes to the first of the tied remainders (code): 5, 3, 2. 7 over
    {math 0.4, ifeval 0.3, code 0.2, chat 0.1}: shares 2.8, 2.1, 1.4, 0.7 -> 2, 2, 1, 0
    plus the 2 largest remainders (math .8, chat .7): 3, 2, 1, 1. Zero weight: no quota."""
    from recipe_arena.stages.prompt_filter import domain_quotas

    assert domain_quotas(10, {"math": 0.5, "code": 0.25, "chat": 0.25}) == {
        "math": 5,
        "code": 3,
        "chat": 2,
    }
    assert domain_quotas(7, {"math": 0.4, "ifeval": 0.3, "code": 0.2, "chat": 0.1}) == {
        "math": 3,
        "ifeval": 2,
        "code": 1,
        "chat": 1,
    }
    assert domain_quotas(4, {"math": 1.0, "chat": 0.0}) == {"math": 4}
    with pytest.raises(ValueError, match="positive weight"):
        domain_quotas(4, {"math": 0.0})


def test_select_prompts_follows_the_mixture_of_the_domains_present() -> None:
    """Rows m0..m5 (math), c0..c5 (code), no chat; weights math 3, code 1, chat 4: chat is
    absent, so 4 prompts split 3 math : 1 code -> m0 m1 m2 and c0, interleaved."""
    from recipe_arena.data.schema import Message, PromptRow
    from recipe_arena.stages.prompt_filter import select_prompts

    def row(i: str, d: str) -> PromptRow:
        return PromptRow(id=i, messages=[Message(role="user", content="q")], domain=d)  # type: ignore[arg-type]

    rows = [row(f"m{i}", "math") for i in range(6)] + [row(f"c{i}", "code") for i in range(6)]
    chosen = select_prompts(rows, 4, {"math": 3.0, "code": 1.0, "chat": 4.0})
    assert [r.id for r in chosen] == ["m0", "c0", "m1", "m2"]
