"""`recipe-arena --help` and `recipe-arena run --help` list what exists.

The expected lists are derived here from `recipes/` and RunConfig, independently of
recipe_arena/helptext.py, so a recipe, group option or config key added later is
expected by these tests without anyone editing them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, Field, TypeAdapter
from pydantic.fields import FieldInfo

from recipe_arena.cli import _parser
from recipe_arena.config import RunConfig
from recipe_arena.helptext import allowed, first_sentence, header_comment

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "recipes"


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The real entry point; COLUMNS=400 so that no line is cut."""
    return subprocess.run(
        [sys.executable, "-m", "recipe_arena.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "400", **env},
    )


def _leaf_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys: list[str] = []
    for name in model.model_fields:
        sub = _section(model, name)
        if sub is not None:
            keys += _leaf_keys(sub, f"{prefix}{name}.")
        else:
            keys.append(f"{prefix}{name}")
    return keys


def _section(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    """A nested section's model; for a strategy axis (a union of parameter models) the
    model of its default option, whose keys the help lists."""
    field = model.model_fields[name]
    ann = field.annotation
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    default = field.get_default(call_default_factory=True)
    return type(default) if isinstance(default, BaseModel) else None


def _value_at(cfg: BaseModel, key: str) -> object:
    value: object = cfg
    for part in key.split("."):
        value = getattr(value, part)
    return value


def _field(key: str) -> FieldInfo:
    model: type[BaseModel] = RunConfig
    *sections, name = key.split(".")
    for part in sections:
        sub = _section(model, part)
        assert sub is not None
        model = sub
    return model.model_fields[name]


def _group_blocks(text: str) -> dict[str, list[str]]:
    """group -> the option names listed under it (4-space indented lines after a
    2-space indented group line, inside the 'config groups' section; a strategy's
    parameters, 6-space indented, are ``_option_params``')."""
    section = text.split("config groups (", 1)[1].split("\nkeys (", 1)[0]
    blocks: dict[str, list[str]] = {}
    current = ""
    for line in section.splitlines()[1:]:
        if line.startswith("      "):
            continue
        if line.startswith("    "):
            blocks[current].append(line.split()[0])
        elif line.startswith("  "):
            current = line.split()[0]
            blocks[current] = []
    return blocks


def _option_params(text: str) -> dict[tuple[str, str], dict[str, str]]:
    """(group, option) -> {key: default as printed} of the parameter lines under it."""
    section = text.split("config groups (", 1)[1].split("\nkeys (", 1)[0]
    out: dict[tuple[str, str], dict[str, str]] = {}
    group = option = ""
    for line in section.splitlines()[1:]:
        if line.startswith("      "):
            key, default = line.split()[0].split("=", 1)
            out[(group, option)][key] = default
        elif line.startswith("    "):
            option = line.split()[0]
            out[(group, option)] = {}
        elif line.startswith("  "):
            group = line.split()[0]
    return out


def test_run_help_lists_every_strategy_with_its_parameters() -> None:
    """Under each option of a strategy axis (each registry entry with a YAML file),
    every parameter of its model but ``name``, as axis.key=its default: tis lists
    staleness.cap=2.0 (TISParams().cap), deepseek_mask its three, none nothing."""
    from recipe_arena.compose import union_members

    text = _cli("run", "--help").stdout
    listed = _option_params(text)
    for axis in ("advantage", "staleness", "length_control", "policy_loss"):
        for option, model in union_members(RunConfig.model_fields[axis].annotation).items():
            if (axis, option) not in listed:  # an entry no recipe file selects
                continue
            expected = {f"{axis}.{k}" for k in _leaf_keys(model) if k != "name"}
            assert set(listed[(axis, option)]) == expected, (axis, option)
    assert listed[("staleness", "tis")] == {"staleness.cap": "2.0"}
    assert len(listed[("staleness", "deepseek_mask")]) == 3
    assert listed[("staleness", "none")] == {} and ("policy_loss", "olmo") in listed


def test_top_level_help_names_every_verb() -> None:
    """Every verb registered on the parser (others may add more) is named in --help,
    each with its one-line help."""
    proc = _cli("--help")
    assert proc.returncode == 0, proc.stderr
    sub = next(a for a in _parser()._actions if a.dest == "verb")
    verbs = list(sub.choices)  # type: ignore[arg-type]
    assert {"run", "verify", "audit", "report"} <= set(verbs)
    lines = proc.stdout.splitlines()
    for verb in verbs:
        assert any(line.split()[:1] == [verb] and len(line.split()) > 1 for line in lines), verb


def test_run_help_lists_every_recipe_group_option_and_key() -> None:
    """`run --help` names each recipe (a YAML file at the top of recipes/), each group
    (a folder) with exactly its options (the files there), each described by its
    header comment, and every leaf key of RunConfig as KEY=DEFAULT with RunConfig()'s
    value, e.g. rl.steps=<RunConfig().rl.steps>."""
    proc = _cli("run", "--help")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    lines = text.splitlines()
    recipes = sorted(p.stem for p in RECIPES.glob("*.yaml"))
    assert recipes, "no recipes found"
    for recipe in recipes:
        words = first_sentence(header_comment(RECIPES / f"{recipe}.yaml")).split()[:4]
        assert any(ln.split()[:1] == [recipe] and " ".join(words) in ln for ln in lines), recipe

    expected = {
        d.name: sorted(p.stem for p in d.glob("*.yaml"))
        for d in sorted(RECIPES.iterdir())
        if d.is_dir() and any(d.glob("*.yaml"))
    }
    assert {"staleness", "length_control", "engine", "world", "budget", "cluster"} <= set(expected)
    assert _group_blocks(text) == expected
    for group, options in expected.items():
        for option in options:
            sentence = first_sentence(header_comment(RECIPES / group / f"{option}.yaml"))
            assert sentence, f"{group}/{option}.yaml has no header comment to describe it"
            assert any(ln.startswith(f"    {option}") and sentence[:40] in ln for ln in lines), (
                group,
                option,
            )

    defaults = RunConfig()
    keys = _leaf_keys(RunConfig)
    assert {"seed", "rl.steps", "staleness.name", "world.model.hidden_size"} <= set(keys)
    for top in RunConfig.model_fields:
        assert any(k == top or k.startswith(top + ".") for k in keys)
    shown = {
        cells[1].split("=", 1)[0]: cells[1].split("=", 1)[1]
        for cells in (re.split(r"\s{2,}", ln) for ln in text.split("\nkeys (", 1)[1].splitlines())
        if len(cells) > 2 and "=" in cells[1]
    }
    assert sorted(shown) == sorted(keys)
    for key in keys:
        # the default as printed, read back the way an override is, is RunConfig()'s
        read_back = TypeAdapter(_field(key).annotation).validate_python(yaml.safe_load(shown[key]))
        assert read_back == _value_at(defaults, key), (key, shown[key])


def test_run_help_picks_up_a_new_recipe_and_option(tmp_path: Path) -> None:
    """A copy of recipes/ with one more recipe and one more staleness option: both are
    listed, with their header comments, with no code change."""
    root = tmp_path / "recipes"
    shutil.copytree(RECIPES, root)
    (root / "staleness" / "halfcap.yaml").write_text(
        "# TIS with a tighter cap. Second sentence not shown.\nname: tis\ncap: 1.5\n"
    )
    (root / "no_comment.yaml").write_text("defaults:\n  - world: micro\nrecipe: no_comment\n")
    text = _cli("run", "--help", RECIPE_ARENA_RECIPES=str(root)).stdout
    assert "halfcap" in _group_blocks(text)["staleness"]
    assert "    halfcap  " in text and "TIS with a tighter cap." in text
    assert "Second sentence" not in text
    # a file without a header comment is described by what it sets
    assert any(
        ln.split()[:1] == ["no_comment"] and "sets recipe=no_comment" in ln
        for ln in text.splitlines()
    )


def test_allowed_values_read_from_the_field_constraints() -> None:
    """Bounds and choices come from the pydantic field: ge=0 -> 'int >= 0',
    gt=0, le=1 -> '0 < float <= 1', Literal -> 'a|b', Optional -> '... or null'."""

    class M(BaseModel):
        a: int = Field(0, ge=0)
        b: float = Field(0.5, gt=0, le=1)
        c: Literal["x", "y"] = "x"
        d: int | None = Field(None, ge=1)
        e: bool = True
        f: list[Literal["p", "q"]] = ["p"]

    f = M.model_fields
    assert allowed(f["a"].annotation, f["a"].metadata) == "int >= 0"
    assert allowed(f["b"].annotation, f["b"].metadata) == "0 < float <= 1"
    assert allowed(f["c"].annotation, f["c"].metadata) == "x|y"
    assert allowed(f["d"].annotation, f["d"].metadata) == "int >= 1 or null"
    assert allowed(f["e"].annotation, f["e"].metadata) == "true|false"
    assert allowed(f["f"].annotation, f["f"].metadata) == "list of p|q"


def test_first_sentence_keeps_abbreviations_and_numbers() -> None:
    """'sec. 9.9' and 'x.y' do not end a sentence; '. Capital' does."""
    text = "The real settings (seed sec. 9.9): 64 x 8.\nMeant for a GPU. More."
    assert first_sentence(text) == "The real settings (seed sec. 9.9): 64 x 8."
    assert first_sentence(None) == ""
