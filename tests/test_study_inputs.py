"""A user's mistakes in a study file or on the ``recipe-arena study`` command line: each
stops before any run with one line naming what is wrong (exit status 2), never a Python
traceback and never a study that quietly runs something other than what was written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BASE = """\
name: tiny
recipe: olmo3_think
seeds: [0, 1]
common: [budget=smoke, rl.schedule=deterministic, rl.steps=2]
rows:
  - name: lr
    axis: rl.lr
    arms: ["1e-5", "0"]
"""


def _study(tmp_path: Path, text: str | bytes, *args: str) -> subprocess.CompletedProcess[str]:
    """``recipe-arena study FILE ARGS`` on a study file holding ``text``; ``rows=nope``
    (a row the file lacks) makes a valid file stop at the row check, so no run starts."""
    path = tmp_path / "study.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "recipe_arena.cli", "study", str(path), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def _one_line(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    """The command failed with exit status 2 and one line that holds every needle."""
    err = done.stderr.strip()
    assert done.returncode == 2, err
    assert "Traceback" not in err and "\n" not in err, err
    for needle in needles:
        assert needle in err, err


def _bomb() -> str:
    """A study whose ``common`` is a billion-laughs list: 9 levels of 9 aliases of the
    level below, 9**9 strings once built, in under 1 KB."""
    lines = ['l0: &l0 ["rl.lr=0"' + ', "rl.lr=0"' * 8 + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    common = "common: [budget=smoke, rl.schedule=deterministic, rl.steps=2]"
    return "\n".join(lines) + "\n" + BASE.replace(common, "common: *l8")


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        (b"name: t\xff\xfe\n", ("study.yaml", "not UTF-8")),
        ("name: [\n", ("not valid YAML", "line 2")),  # its message was three lines
        # quoted seeds are refused, not read as integers
        (BASE.replace("[0, 1]", '["0", "1"]'), ("seeds.0", "valid integer")),
        # a seed twice would count one run as two paired draws
        (BASE.replace("[0, 1]", "[0, 0]"), ("seeds must be distinct",)),
        # YAML keeps the last of two equal keys silently
        (BASE + "seeds: [5]\n", ("key 'seeds' given twice",)),
        (
            BASE.replace(
                'axis: rl.lr\n    arms: ["1e-5", "0"]',
                "arms: {centered: [], standard: [advantage=standard], centered: [x=1]}",
            ),
            ("key 'centered' given twice",),
        ),
        (BASE.replace('["1e-5", "0"]', '["0", "0"]'), ("row lr: two arms are named 'lr_0'",)),
        # two values that one arm name stands for
        (BASE.replace('["1e-5", "0"]', '["a b", "a_b"]'), ("two arms are named 'lr_a_b'",)),
        # an arm that takes the A/A control's name
        (
            BASE.replace(
                'axis: rl.lr\n    arms: ["1e-5", "0"]',
                "aa: true\n    arms: {centered: [], centered_aa: [advantage=standard]}",
            ),
            ("two arms are named 'centered_aa'", "A/A control"),
        ),
        # beyond yaml_bounds: PyYAML's composer recursed per level (a RecursionError
        # traceback), and an alias bomb would be built before pydantic saw it
        (BASE + "x: " + "[" * 500 + "]" * 500 + "\n", ("32 levels deep",)),
        (_bomb(), ("expands to more than 100000 nodes",)),
        ("# " + "x" * (1 << 20) + "\n", ("larger than 1048576 bytes",)),
    ],
)
def test_a_mistaken_study_file_stops_in_one_line(
    tmp_path: Path, text: str | bytes, needles: tuple[str, ...]
) -> None:
    _one_line(_study(tmp_path, text, "rows=nope"), *needles)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("seeds=4,4", "rows=nope"), ("seeds='4,4'", "distinct")),
        (("rows=",), ("rows=''", "name at least one")),
        (("rows=lr", "regimes="), ("regimes=''", "name at least one")),
    ],
)
def test_a_mistaken_option_stops_in_one_line(
    tmp_path: Path, args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    """Without the check, ``rows=`` ran nothing, wrote an empty report and exited 0."""
    done = _study(tmp_path, BASE, *args, f"out_dir={tmp_path / 'out'}")
    _one_line(done, *needles)
    assert not (tmp_path / "out" / "tiny" / "report.md").exists()


def test_a_study_file_that_never_ends_stops_in_one_line(tmp_path: Path) -> None:
    """A study file that is a link to ``/dev/zero`` was read until memory ran out (and a
    FIFO would block): it is refused before it is opened."""
    link = tmp_path / "zero.yaml"
    link.symlink_to("/dev/zero")
    done = subprocess.run(
        [sys.executable, "-m", "recipe_arena.cli", "study", str(link)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    _one_line(done, "zero.yaml", "not a regular file")
