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
    assert_refused_naming(override, must_name)


def assert_refused_naming(override: str, must_name: list[str]) -> None:
    """Composing a config with ``override`` raises ConfigError in one line that names
    every part of ``must_name`` (the key, and what is wrong with its value)."""
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
        (["device=cuda:99"], ["device='cuda:99'", "CUDA device(s)"]),
        (["rl.device=cuda:99"], ["rl.device", "cuda:99"]),
        (["dpo.device=quantum"], ["dpo.device", "quantum"]),
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


def test_device_sets_every_part_that_names_none() -> None:
    """``device`` fills the engine's device unless it is given, and the learner, SFT and
    DPO devices default to it; without it they follow the engine's; a part's own
    device wins."""
    cfg = load_config(["budget=smoke", "device=cuda:1", "sft.device=cpu"])
    assert cfg.engine.device == "cuda:1"
    assert [cfg.device_for(p) for p in ("learner", "sft", "dpo")] == ["cuda:1", "cpu", "cuda:1"]
    cfg = load_config(["budget=smoke", "device=cuda:1", "engine.device=cpu"])
    assert (cfg.engine.device, cfg.device_for("learner")) == ("cpu", "cuda:1")
    cfg = load_config(["budget=smoke", "engine.device=cuda:2"])
    assert cfg.device_for("learner") == cfg.device_for("dpo") == "cuda:2"
    assert load_config(["budget=smoke"]).device_for("learner") == "cpu"


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


# ----------------------------------------------------------------------------- hostile
# Configs an attacker (or a slip) can hand the CLI. Each must exit 2 with one line naming
# what is wrong, before Hydra composes anything that could run away, and leave every file
# as it was. `test_hostile_config_suite` runs them all and prints the summary line
# ``hostile config suite: N attempts, M contained, K failed``.

DEEP_LIST = "[" * 150 + "1" + "]" * 150
"""150 nested lists: Hydra's override parser overflowed the stack at 100 to 150."""

DEEP_MAP = "{a:" * 40 + "1" + "}" * 40

LONG_LIST = "[" + ",".join(["1"] * 5000) + "]"
"""10,001 characters: Hydra parses this in minutes (127 s for 40,000 on 2 cores)."""

HOSTILE_OVERRIDES: dict[str, tuple[list[str], list[str]]] = {
    "nested lists 150 deep": (["rl.lr=" + DEEP_LIST], ["rl.lr", "150 deep"]),
    "nested mappings 40 deep": (["rl.domain_weights=" + DEEP_MAP], ["40 deep"]),
    "nested 3000 deep": (["rl.lr=" + "[" * 3000 + "]" * 3000], ["characters long"]),
    "10 KB list": (["pipeline.stages=" + LONG_LIST], ["characters long", "4096"]),
    "nested, appended": (["++rl.extra=" + DEEP_LIST], ["150 deep"]),
    "too many overrides": ([f"seed={i}" for i in range(300)], ["303 overrides", "at most 256"]),
    "hydra.run.dir": (["hydra.run.dir=/tmp/elsewhere"], ["hydra.run.dir", "not used"]),
    "++hydra.job.chdir": (["++hydra.job.chdir=true"], ["hydra.job.chdir", "not used"]),
    "hydra group": (["hydra/launcher=basic"], ["hydra/launcher", "not used"]),
    "hydra searchpath": (["+hydra.searchpath=[file:///tmp]"], ["hydra.searchpath"]),
    "++recipe absolute": (["++recipe=/tmp/abs/run"], ["recipe=", "not a recipe", "not a path"]),
    "+recipe dotdot": (["+recipe=../.."], ["not a recipe"]),
    "recipe traversal": (["recipe=../../etc/passwd"], ["not a recipe"]),
    "recipe file path": (["recipe=recipes/olmo3_think.yaml"], ["not a recipe"]),
    "~recipe": (["~recipe="], ["always has a recipe"]),
}


@pytest.mark.parametrize("case", list(HOSTILE_OVERRIDES))
def test_hostile_override_exits_2_in_one_line(capsys, tmp_path: Path, case: str) -> None:
    """Each override is refused by ``compose`` itself: exit 2, one line naming it, no
    run directory anywhere (``++recipe=/tmp/abs/run`` named the run directory
    ``/tmp/abs/run-default-s0`` before)."""
    overrides, must_name = HOSTILE_OVERRIDES[case]
    code, err = _run(capsys, tmp_path, *overrides)
    assert code == 2 and len(err.splitlines()) == 1 and len(err) < 600, err[:600]
    for part in must_name:
        assert part in err, (part, err)
    assert not (tmp_path / "runs").exists()


def test_a_quoted_bracket_is_not_nesting() -> None:
    """Brackets inside a quoted string are text: ``'[[[['`` nests 0 deep, ``[['a]']]``
    2 deep (the quoted ``]`` does not close a list)."""
    from recipe_arena.compose import value_depth

    assert value_depth("'" + "[" * 40 + "'") == 0
    assert value_depth("[['a]']]") == 2
    assert value_depth('{a:"}}}",b:[1]}') == 2


def _mapping_bomb(levels: int) -> str:
    """The same with mappings: level i maps 8 keys to level i-1 (8**8 = 16.8 million)."""
    lines = ["m0: &m0 {" + ", ".join(f"k{j}: 1" for j in range(8)) + "}"]
    for i in range(1, levels):
        lines.append(f"m{i}: &m{i} {{" + ", ".join(f"k{j}: *m{i - 1}" for j in range(8)) + "}")
    return "\n".join(lines) + "\n"


def _bomb(levels: int, width: int = 9) -> str:
    """A billion-laughs YAML: level i lists ``width`` aliases of level i-1, so the last
    expands to width**levels scalars (9**9 = 387,420,489 for the default) in 1 KB."""
    lines = ["l0: &l0 [" + ",".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


HOSTILE_RECIPE_FILES: dict[str, tuple[str, str, list[str]]] = {
    # name: (file under the recipes folder, its text, what the message names)
    "alias bomb as a recipe": ("bomb.yaml", _bomb(9), ["bomb.yaml", "100000 nodes"]),
    "alias bomb as a group option": ("budget/bomb.yaml", _bomb(9), ["100000 nodes"]),
    "alias bomb of mappings": ("budget/bomb.yaml", _mapping_bomb(8), ["100000 nodes"]),
    "alias bomb under a key": ("rewards/bomb.yaml", "rewards:\n  x: 1\n" + _bomb(8), ["nodes"]),
    "recursive alias": ("budget/loop.yaml", "a: &a [1, *a]\n", ["alias *a"]),
    "flow nesting 20000 deep": ("budget/deep.yaml", "a: " + "[" * 20000 + "]" * 20000, ["deep"]),
    "block nesting 60 deep": (
        "budget/deep.yaml",
        "".join("  " * i + f"k{i}:\n" for i in range(60)) + "  " * 60 + "v: 1\n",
        ["32 levels deep"],
    ),
    "over 1 MiB": ("budget/big.yaml", "# " + "x" * (1 << 20) + "\n", ["bytes"]),
    "hydra key": ("budget/hydra.yaml", "hydra:\n  run: {dir: /tmp/elsewhere}\n", ["'hydra'"]),
    "hydra in defaults": (
        "budget/hydra.yaml",
        "defaults:\n  - override hydra/launcher: basic\n",
        ["hydra/launcher"],
    ),
    "not YAML": ("budget/broken.yaml", "a: [1, 2\nb: {", ["not valid YAML"]),
    "a link to /dev/zero": ("budget/zero.yaml", "/dev/zero", ["not a regular file"]),
}
"""(A text of ``/dev/zero`` plants a symbolic link to that device instead of a file.)"""


def _plant(path: Path, text: str) -> None:
    if text == "/dev/zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_text(text)


@pytest.fixture
def recipes_copy(tmp_path: Path, monkeypatch) -> Path:
    """A copy of recipes/ that $RECIPE_ARENA_RECIPES points to."""
    import shutil

    from recipe_arena.compose import recipes_dir

    root = tmp_path / "recipes"
    shutil.copytree(recipes_dir(), root)
    monkeypatch.setenv("RECIPE_ARENA_RECIPES", str(root))
    return root


@pytest.mark.parametrize("case", list(HOSTILE_RECIPE_FILES))
def test_hostile_recipe_file_exits_2_before_composing(
    capsys, tmp_path: Path, recipes_copy: Path, case: str
) -> None:
    """A recipe file beyond the bounds (compose.check_recipe_files) fails every run in
    one line naming the file, read as a stream of YAML events: a 9-level alias bomb
    (9**9 scalars once expanded; composed, it ran for minutes past 500 MB) is refused
    when its count passes 100,000, without building anything."""
    rel, text, must_name = HOSTILE_RECIPE_FILES[case]
    _plant(recipes_copy / rel, text)
    option = Path(rel)
    extra = [f"{option.parent}={option.stem}"] if option.parent != Path(".") else []
    extra += [f"recipe={option.stem}"] if option.parent == Path(".") else []
    code, err = _run(capsys, tmp_path, *extra)
    assert code == 2 and len(err.splitlines()) == 1, err[:600]
    for part in must_name:
        assert part in err, (part, err)
    assert not (tmp_path / "runs").exists()


def test_a_recipe_file_with_a_few_aliases_still_composes(recipes_copy: Path) -> None:
    """Anchors and aliases within the bound are fine: a budget option whose eval and
    rl settings share one anchored mapping composes, each key getting the value."""
    (recipes_copy / "budget" / "shared.yaml").write_text(
        "# @package _global_\nbudget: {name: smoke}\nworld: &w {train_per_domain: 30}\n"
    )
    cfg = load_config(["budget=shared"])
    assert cfg.world.train_per_domain == 30 and cfg.recipe == "olmo3_think"


def test_alias_bomb_is_refused_in_a_bounded_process(tmp_path: Path) -> None:
    """The CLI in a subprocess under a 1.5 GB address-space limit and a 120 s timeout,
    on a recipe folder holding a 10-level alias bomb (3.5e9 scalars expanded): it exits
    2 with one line, where composing the bomb ran past 500 MB for minutes."""
    import shutil
    import subprocess
    import sys

    from recipe_arena.compose import recipes_dir

    root = tmp_path / "recipes"
    shutil.copytree(recipes_dir(), root)
    (root / "budget" / "bomb.yaml").write_text(_bomb(10))
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20));"
        "from recipe_arena.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {
        **__import__("os").environ,
        "RECIPE_ARENA_RECIPES": str(root),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", code, "run", "budget=bomb", "--cfg", "job"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1 and "bomb.yaml" in err, err[-2000:]


HOSTILE_STAGES: dict[str, bytes] = {
    "truncated": b'{"checkpoint": "/x", "done": {"base": 1.0}, "inp',
    "empty": b"",
    "a list": b"[]",
    "binary": bytes(range(256)),
    "done not a mapping": b'{"done": "base"}',
    "an input not a path": b'{"inputs": {"sft": 5}}',
    "unknown field": b'{"done": {}, "owner": "me"}',
    "nested 100000 deep": b"[" * 100000 + b"]" * 100000,
}


@pytest.mark.parametrize("case", list(HOSTILE_STAGES))
def test_damaged_stages_json_on_resume_exits_2(capsys, tmp_path: Path, case: str) -> None:
    """resume=true over a stages.json that no run wrote (cut short by a crash, edited)
    exits 2 in one line naming the file and what to do, and leaves it as it was (a
    truncated one gave a JSONDecodeError traceback)."""
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    (run / "stages.json").write_bytes(HOSTILE_STAGES[case])
    code, err = _run(capsys, tmp_path, "resume=true", "rewards.allow_weak_sandbox=true")
    assert code == 2 and len(err.splitlines()) == 1, err[-2000:]
    assert "stages.json" in err and "resume=false" in err, err
    assert (run / "stages.json").read_bytes() == HOSTILE_STAGES[case]
    assert sorted(p.name for p in run.iterdir()) == ["stages.json"]


def test_hostile_config_suite(capsys, tmp_path: Path, monkeypatch) -> None:
    """Every attempt above once more, in one test, counted: each is contained when it
    exits 2 with one line and creates no run directory. Prints
    ``hostile config suite: N attempts, M contained, K failed``."""
    import shutil

    from recipe_arena.compose import recipes_dir

    failed: dict[str, str] = {}
    attempts = 0
    for i, (name, (overrides, _)) in enumerate(HOSTILE_OVERRIDES.items()):
        attempts += 1
        out = tmp_path / f"o{i}"
        code = main(["run", "budget=smoke", f"out_dir={out}", "name=r", *overrides])
        err = capsys.readouterr().err.strip()
        if code != 2 or len(err.splitlines()) != 1 or out.exists():
            failed[name] = err[:200]
    for i, (name, (rel, text, _)) in enumerate(HOSTILE_RECIPE_FILES.items()):
        attempts += 1
        root = tmp_path / f"recipes{i}"
        shutil.copytree(recipes_dir(), root)
        _plant(root / rel, text)
        monkeypatch.setenv("RECIPE_ARENA_RECIPES", str(root))
        option = Path(rel)
        pick = (
            f"recipe={option.stem}"
            if option.parent == Path(".")
            else f"{option.parent}={option.stem}"
        )
        out = tmp_path / f"f{i}"
        code = main(["run", "budget=smoke", f"out_dir={out}", "name=r", pick])
        err = capsys.readouterr().err.strip()
        monkeypatch.delenv("RECIPE_ARENA_RECIPES")
        if code != 2 or len(err.splitlines()) != 1 or out.exists():
            failed[name] = err[:200]
    for i, (name, data) in enumerate(HOSTILE_STAGES.items()):
        attempts += 1
        out = tmp_path / f"s{i}"
        (out / "r").mkdir(parents=True)
        (out / "r" / "stages.json").write_bytes(data)
        code = main(
            [
                "run",
                "budget=smoke",
                f"out_dir={out}",
                "name=r",
                "resume=true",
                "rewards.allow_weak_sandbox=true",
            ]
        )
        err = capsys.readouterr().err.strip()
        if code != 2 or len(err.splitlines()) != 1 or len(list((out / "r").iterdir())) != 1:
            failed[name] = err[:200]
    with capsys.disabled():
        print(
            f"\nhostile config suite: {attempts} attempts, {attempts - len(failed)} contained, "
            f"{len(failed)} failed"
        )
    assert not failed, failed


def test_world_keys_belong_to_the_chosen_world() -> None:
    """``world`` is a union of per-world models told apart by ``name``: world=smol takes
    smol's keys and refuses the micro model's shape; the micro world refuses olmo3_7b's
    train_path, which world=olmo3_7b takes; settings that name no world are the micro
    world's, as a Python caller's dict was before the union."""
    from recipe_arena.config import RunConfig
    from recipe_arena.config_world import MicroWorld, Olmo3World, SmolWorld

    smol = load_config(["world=smol", "world.gym_tasks=[products]"]).world
    assert isinstance(smol, SmolWorld) and smol.gym_tasks == ["products"]
    with pytest.raises(ConfigError, match="unknown key 'world.model'"):
        load_config(["world=smol", "world.model.hidden_size=32"])
    with pytest.raises(ConfigError, match="unknown key 'world.train_path'"):
        load_config(["world.train_path=/data/train.jsonl"])
    olmo = load_config(["world=olmo3_7b", "world.train_path=/data/train.jsonl"]).world
    assert isinstance(olmo, Olmo3World) and olmo.train_path == "/data/train.jsonl"
    micro = RunConfig.model_validate({"world": {"data_seed": 5}}).world
    assert isinstance(micro, MicroWorld) and micro.data_seed == 5
