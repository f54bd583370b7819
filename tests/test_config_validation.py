"""Every config value that cannot run fails at start-up: exit 2, one line naming it,
and no run directory created. Values pydantic sees alone fail in ``load_config``; the
ones that need the machine or other fields fail in ``check_runnable`` (config_checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipe_arena.cli import main
from recipe_arena.compose import ConfigError, load_config


@pytest.mark.parametrize(
    ("override", "must_name"),
    [
        (
            "rl.lr=${oc.env:RECIPE_ARENA_NO_SUCH_VARIABLE}",
            ["rl.lr", "RECIPE_ARENA_NO_SUCH_VARIABLE"],
        ),
        (
            "rl.domain_weights.math=-1",
            ["rl.domain_weights.math", "-1", "greater than or equal to 0"],
        ),
        ("rl.temperature=inf", ["rl.temperature", "inf", "finite"]),
        ("rl.temperature=nan", ["rl.temperature", "finite"]),
        ("rewards.timeout_s=inf", ["rewards.timeout_s", "finite"]),
        ("rewards.code_wall_s=inf", ["rewards.code_wall_s", "finite"]),
        ("rewards.judge_timeout_s=-inf", ["rewards.judge_timeout_s"]),
        ("seed=4294967296", ["seed", "4294967296", "4294967295"]),
        ("world.data_seed=-1", ["world.data_seed"]),
        (
            "rl.domain_weights={math:0,code:0,ifeval:0,chat:0}",
            ["rl.domain_weights", "at least one domain"],
        ),
        ("name=/tmp/victim", ["name", "/tmp/victim", "not a path"]),
        ("name=..", ["name", "not a path"]),
        ("name=a/../../b", ["name", "not a path"]),
    ],
)
def test_values_that_cannot_run_fail_naming_the_key(override: str, must_name: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        load_config([override])
    msg = str(info.value)
    assert "\n" not in msg
    for part in must_name:
        assert part in msg, (part, msg)


def test_one_key_of_a_mapping_overrides_that_key_only() -> None:
    """``rl.domain_weights.ifeval=0.5`` sets ifeval and keeps the other three defaults
    (0.8, 0, 0.1); over budget=smoke (0.55, 0.15, 0.15, 0.15) it keeps smoke's three. A whole mapping
    still replaces: ``{math:1}`` then ``.code=0.5`` gives exactly those two keys. The
    smoke budget's explicit ``eval.domain_prompts: {}`` stays empty but for the key set."""
    assert load_config(["rl.domain_weights.ifeval=0.5"]).rl.domain_weights == {
        "math": 0.8,
        "code": 0.0,
        "ifeval": 0.5,
        "chat": 0.1,
    }
    smoke = load_config(["budget=smoke", "rl.domain_weights.ifeval=0.5"])
    assert smoke.rl.domain_weights == {"math": 0.55, "code": 0.15, "ifeval": 0.5, "chat": 0.15}
    whole = load_config(["rl.domain_weights={math:1}", "rl.domain_weights.code=0.5"])
    assert whole.rl.domain_weights == {"math": 1.0, "code": 0.5}
    assert load_config(["eval.domain_prompts.code=7"]).eval.domain_prompts == {
        "math": 300,
        "chat": 100,
        "code": 7,
    }
    assert load_config(["budget=smoke", "eval.domain_prompts.code=7"]).eval.domain_prompts == {
        "code": 7
    }


def _run(capsys, tmp_path: Path, *overrides: str) -> tuple[int, str]:
    code = main(["run", "budget=smoke", f"out_dir={tmp_path / 'runs'}", "name=r", *overrides])
    return code, capsys.readouterr().err.strip()


@pytest.mark.parametrize(
    ("overrides", "must_name"),
    [
        (["world.checkpoint=/nonexistent/ckpt"], ["world.checkpoint", "/nonexistent/ckpt"]),
        (["rewards.judge_model=/nonexistent/judge"], ["rewards.judge_model", "/nonexistent/judge"]),
        (["rewards.judge_model=http://"], ["rewards.judge_model", "no host"]),
        (["pipeline.stages=[eval]"], ["pipeline.stages", "eval", "needs a checkpoint"]),
        (["pipeline.stages=[sft,base]"], ["pipeline.stages", "sft"]),
        (["engine.device=quantum"], ["engine.device", "quantum"]),
        (["engine.device=cuda:99"], ["engine.device", "cuda:99"]),
        (
            ["prompt_filter.min_pass_rate=0.7"],
            ["prompt_filter.min_pass_rate", "0.7", "keeps no prompt"],
        ),
        (
            ["prompt_filter.min_pass_rate=0.3", "prompt_filter.max_pass_rate=0.32"],
            ["prompt_filter.min_pass_rate", "j/2"],
        ),
    ],
)
def test_run_fails_at_start_up_before_a_run_directory(
    capsys, tmp_path: Path, overrides: list[str], must_name: list[str]
) -> None:
    """Each exits 2 with one line naming key and value; no run directory 'r' appears.
    0.3..0.32 with the smoke budget's 2 rollouts: no j/2 (0, 0.5, 1) lies in it."""
    code, err = _run(capsys, tmp_path, *overrides)
    assert code == 2 and len(err.splitlines()) == 1, err
    for part in must_name:
        assert part in err, (part, err)
    assert not (tmp_path / "runs" / "r").exists()


def test_unwritable_out_dir_fails_at_start_up(capsys, tmp_path: Path) -> None:
    """out_dir under a regular file cannot be created: exit 2 naming out_dir."""
    (tmp_path / "file").write_text("x")
    code = main(["run", "budget=smoke", f"out_dir={tmp_path / 'file' / 'runs'}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "out_dir" in err and len(err.splitlines()) == 1, err


def test_weak_sandbox_refused_at_start_up(capsys, tmp_path: Path, monkeypatch) -> None:
    """Without bubblewrap ($RECIPE_ARENA_BWRAP names nothing) a run exits 2 at start-up,
    saying what is missing; rewards.allow_weak_sandbox=true gets past that check (the run
    then fails on the next one: a checkpoint for pipeline.stages=[eval])."""
    from recipe_arena.rewards import sandbox

    monkeypatch.setenv("RECIPE_ARENA_BWRAP", "/nonexistent/bwrap")
    sandbox.isolation_mode.cache_clear()
    try:
        code, err = _run(capsys, tmp_path)
        assert code == 2 and "bubblewrap" in err and "allow_weak_sandbox" in err, err
        code, err = _run(
            capsys, tmp_path, "rewards.allow_weak_sandbox=true", "pipeline.stages=[eval]"
        )
        assert code == 2 and "needs a checkpoint" in err, err
    finally:
        monkeypatch.delenv("RECIPE_ARENA_BWRAP")
        sandbox.isolation_mode.cache_clear()


def test_start_checkpoint_of_a_pretrained_world_counts(tmp_path: Path) -> None:
    """world=smol runs [prompt_filter, rlvr, eval] with no 'base' stage: its packaged
    SmolLM2 is the start checkpoint, so the stage check passes; the same stages on the
    micro world (no packaged model, no world.checkpoint) fail naming prompt_filter."""
    from recipe_arena.config_checks import check_stages

    out = f"out_dir={tmp_path}"
    check_stages(load_config(["world=smol", out]))
    with pytest.raises(ConfigError, match="stage 'prompt_filter' needs a checkpoint"):
        check_stages(load_config(["pipeline.stages=[prompt_filter,rlvr,eval]", out]))


def test_dpo_needs_its_weak_model_unless_resumed_after_sft(tmp_path: Path) -> None:
    """[base, dpo, eval]: no 'sft' before 'dpo' gives no weak model -> refused. A resumed
    run whose stages.json records an 'sft' input has one -> passes."""
    import json

    from recipe_arena.config_checks import check_stages

    over = ["pipeline.stages=[base,dpo,eval]", f"out_dir={tmp_path}", "name=r"]
    with pytest.raises(ConfigError, match="stage 'dpo' needs its weak"):
        check_stages(load_config(over))
    (tmp_path / "r").mkdir()
    state = {"checkpoint": "/x", "done": {"base": 1.0}, "inputs": {"sft": "/x"}}
    (tmp_path / "r" / "stages.json").write_text(json.dumps(state))
    check_stages(load_config([*over, "resume=true"]))
