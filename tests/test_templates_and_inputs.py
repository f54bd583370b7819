"""Prompt templates (chat, and RL-Zero's simple one) reach the actors and the evaluation
alike; a pipeline whose stage lacks its input fails at start-up naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipe_arena.cli import main
from recipe_arena.config import EngineConfig, EvalConfig, RunConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.core.actor import ActorTask
from recipe_arena.data.chat import encode_prompt
from recipe_arena.data.micro import generate_split
from recipe_arena.data.schema import Message, PromptRow
from recipe_arena.data.templates import SIMPLE_TEMPLATE, encode_messages
from recipe_arena.eval.final import evaluate_checkpoint
from recipe_arena.models.factory import TinyModelSpec, build_micro, save_checkpoint
from recipe_arena.models.tokenizer import SPECIAL_TOKENS, build_char_tokenizer
from recipe_arena.wiring import ActorSettings, make_actor

SPEC = TinyModelSpec(
    hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=256
)
ROW = PromptRow(
    id="r",
    domain="math",
    ground_truth="5",
    messages=[
        Message(role="system", content="Be brief."),
        Message(role="user", content="2+3?"),
        Message(role="assistant", content="5"),
        Message(role="user", content="1+1?"),
    ],
)


def test_simple_template_is_plain_text_without_special_tokens() -> None:
    """simple: 'Be brief.\\n\\nUser: 2+3?\\nAssistant: 5\\nUser: 1+1?\\nAssistant:\\n', no
    special token id; chat: ChatML with <|im_start|> markers. (The actors, the prompt
    filter and the evaluation all encode through this one function, data.chat.)"""
    tok = build_char_tokenizer()
    special = {tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    simple = encode_prompt(tok, ROW, "simple")
    assert (
        tok.decode(list(simple))
        == "Be brief.\n\nUser: 2+3?\nAssistant: 5\nUser: 1+1?\nAssistant:\n"
    )
    assert not special & set(simple)
    chat = encode_prompt(tok, ROW, "chat")
    assert tok.convert_tokens_to_ids("<|im_start|>") in chat
    assert "<|" not in SIMPLE_TEMPLATE
    with pytest.raises(ValueError, match="prompt_template='r1'"):
        encode_messages(tok, [{"role": "user", "content": "x"}], "r1")


def test_actor_writes_prompts_with_its_template() -> None:
    """An actor set to the simple template samples from the simple rendering of the row."""
    model, tok = build_micro(SPEC, seed=0)
    settings = ActorSettings(
        group_size=2, temperature=1.0, max_new_tokens=4, prompt_template="simple"
    )
    actor = make_actor(
        0,
        model,
        tok,
        "torch",
        EngineConfig(),
        RewardsConfig(workers=1),
        settings,
    )
    try:
        (group,) = actor.rollouts([ActorTask(row=ROW, seed=1, tag="t")])
    finally:
        actor.close()
    assert all(r.prompt_tokens == encode_prompt(tok, ROW, "simple") for r in group.rollouts)


def test_evaluation_uses_and_caches_by_template(tmp_path: Path) -> None:
    """Evaluating one checkpoint under both templates writes two cache entries (the
    template is part of what decides the result), and the default chat template keeps
    the key it had before templates existed (one entry per template, two in all)."""
    model, tok = build_micro(SPEC, seed=0)
    ckpt = save_checkpoint(model, tok, tmp_path / "m")
    rows = generate_split("math", "heldout", 3, seed=0)
    ev = EvalConfig(max_prompts_per_domain=3, domain_prompts={}, max_new_tokens=4)
    for template in ("chat", "simple", "chat"):
        cfg = RunConfig(eval=ev, prompt_template=template, rewards=RewardsConfig(workers=1))
        evaluate_checkpoint(cfg, ckpt, rows)
    assert len(list(ckpt.glob("eval-*.json"))) == 2


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        (["pipeline.stages=[base,dpo,eval]"], "stage 'dpo' needs its weak (rejected) model"),
        (["pipeline.stages=[sft,eval]"], "stage 'sft' needs a checkpoint"),
        (
            ["dpo.rejected_checkpoint=/nonexistent/weak"],
            "dpo.rejected_checkpoint='/nonexistent/weak'",
        ),
        (["world.checkpoint=/nonexistent/start"], "world.checkpoint='/nonexistent/start'"),
    ],
)
def test_missing_stage_input_fails_at_start_up(
    overrides: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit status 2 with one line naming the stage or key, before any run directory exists."""
    code = main(["run", *overrides, f"out_dir={tmp_path}", "name=x"])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()
