"""Configuration: Hydra composes recipes/, pydantic validates, bad input exits 2 in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from recipe_arena.compose import ConfigError, load_config


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recipe_arena.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_recipe_defaults_are_olmo3() -> None:
    """The OLMo 3 recipe keeps OlmoRL's settings: clip [0.8, 1.272], TIS cap 2, no KL,
    centred advantages, token-level loss, G = 8, prompt filter 8 rollouts / 0.625."""
    cfg = load_config(["recipe=olmo3_think"])
    assert (1 - cfg.loss.clip_low, 1 + cfg.loss.clip_high) == pytest.approx((0.8, 1.272))
    assert cfg.staleness.name == "tis" and cfg.staleness.cap == 2.0
    assert cfg.loss.kl_beta == 0.0
    assert cfg.advantage.name == "centered" and cfg.loss.normalisation == "token"
    assert cfg.rl.group_size == 8
    assert (cfg.prompt_filter.rollouts, cfg.prompt_filter.max_pass_rate) == (8, 0.625)
    assert cfg.budget.name == "default"


def test_budget_group_overrides_nested_sections() -> None:
    smoke = load_config(["budget=smoke"])
    full = load_config(["budget=full"])
    assert smoke.budget.name == "smoke" and smoke.rl.steps == 2
    assert full.rl.prompts_per_step == 64 and full.rl.max_new_tokens == 32768


def test_field_override_is_applied() -> None:
    cfg = load_config(["rl.lr=0.01", "seed=3", "engine=torch_static"])
    assert cfg.rl.lr == 0.01 and cfg.seed == 3 and cfg.engine.mode == "static"


@pytest.mark.parametrize(
    ("override", "must_name"),
    [
        ("staleness=nonsense", ["staleness", "nonsense", "tis", "none"]),
        ("stalenes=tis", ["stalenes", "staleness"]),
        ("rl.lrr=0.1", ["rl.lrr", "lr"]),
        ("rl.lr=5", ["rl.lr", "5", "less than or equal to 1"]),
        ("staleness.name=x", ["staleness.name", "'tis'"]),
        ("recipe=nope", ["recipe", "nope", "olmo3_think"]),
    ],
)
def test_bad_config_fails_naming_key_value_and_allowed(override: str, must_name: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        load_config([override])
    message = str(info.value)
    assert "\n" not in message
    for part in must_name:
        assert part in message


def test_cli_exits_2_with_one_line_before_any_work(tmp_path: object) -> None:
    for bad in ("staleness=nonsense", "stalenes=tis", "loss.clip_low=-0.5"):
        proc = _cli("run", "recipe=olmo3_think", bad, f"out_dir={tmp_path}")
        assert proc.returncode == 2, proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("recipe-arena: config error:")
        assert bad.split("=")[0] in lines[0]
    assert not list(tmp_path.iterdir())  # type: ignore[attr-defined]


ENTRY_PROBE = """
import atexit, sys, threading, time
from pathlib import Path
from recipe_arena import cli
out = Path(sys.argv[1])
atexit.register(lambda: (out / "exit_handler").write_text("ran"))
def late():
    time.sleep(0.5)
    (out / "thread").write_text("joined")
threading.Thread(target=late).start()  # not a daemon: an exit waits for it
print("printed before the exit", end="")  # no newline: only a flush writes it to a pipe
sys.argv = ["recipe-arena", *sys.argv[2:]]
cli.entry()
"""


@pytest.mark.parametrize(
    ("args", "rc"), [(["run", "budget=smoke", "--cfg", "job"], 0), (["run", "recipe=nope"], 2)]
)
def test_entry_exits_with_mains_code_after_threads_and_exit_handlers(
    tmp_path: Path, args: list[str], rc: int
) -> None:
    """``cli.entry`` ends the process without the interpreter's teardown, but only after
    what a normal exit does first: a non-daemon thread still running is joined, exit
    handlers run, buffered output is flushed; the exit code is main's."""
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY_PROBE, str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == rc, proc.stderr
    assert proc.stdout.startswith("printed before the exit")
    assert (tmp_path / "thread").read_text() == "joined"
    assert (tmp_path / "exit_handler").read_text() == "ran"


def test_cfg_job_prints_resolved_config() -> None:
    proc = _cli("run", "recipe=olmo3_think", "budget=smoke", "rl.lr=0.002", "--cfg", "job")
    assert proc.returncode == 0, proc.stderr
    printed = yaml.safe_load(proc.stdout)
    assert printed["rl"]["lr"] == 0.002
    assert printed["budget"]["name"] == "smoke"
    assert printed["loss"]["clip_high"] == 0.272


_READ_CONFIGS = """
import contextlib, io, sys
from pathlib import Path
from recipe_arena.cli import main
for recipe in sorted(p.stem for p in Path("recipes").glob("*.yaml")):
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", f"recipe={recipe}", "--cfg", "job"]) == 0
print("torch" in sys.modules)
"""


def test_reading_every_recipes_config_imports_no_torch() -> None:
    """The command line reads and prints each recipe's config (``--cfg job``, what a
    config error or ``--help`` also costs) without importing torch: the strategy
    modules whose parameter models the config holds reach torch through
    ``core.lazy.torch`` only when a strategy runs. A fresh process, so nothing else
    has imported torch."""
    proc = subprocess.run(
        [sys.executable, "-c", _READ_CONFIGS],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[1],
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_lazy_module_imports_on_first_read_and_keeps_what_it_read() -> None:
    """``LazyModule("json")``: reading ``dumps`` gives the module's own function and
    keeps it on the proxy (the next read skips ``__getattr__``); a dunder is not looked
    up in the module (copy and pickle probe them on any object)."""
    import json

    from recipe_arena.core.lazy import LazyModule

    lazy = LazyModule("json")
    assert "dumps" not in vars(lazy)
    assert lazy.dumps is json.dumps
    assert vars(lazy)["dumps"] is json.dumps
    with pytest.raises(AttributeError):
        lazy.__wrapped__  # noqa: B018
