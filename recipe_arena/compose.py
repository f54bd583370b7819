"""Hydra composition of `recipes/` into a validated RunConfig.

Overrides on the command line come in two kinds:
- ``group=option`` where ``group`` is a folder of `recipes/` (``staleness=tis``): Hydra
  picks the file; an option that has no file is an error listing the files there.
- ``a.b=value``: set one field. Hydra adds it (``++``) and pydantic then checks it, so a
  misspelt key or an out-of-range number fails naming the key, the value and what is
  allowed.
Any failure raises ConfigError with one line of text; the CLI prints it and exits 2
before any work starts.

What is composed is bounded before Hydra sees it, so no input makes composition run for
minutes, grow without limit or end in a traceback:
- ``recipe=`` is the name of a file of `recipes/` (``+recipe=`` and ``++recipe=`` too),
  never a path: the run directory is named after it (rundir.py).
- An override is at most ``MAX_OVERRIDE_CHARS`` long and nests lists and mappings at
  most ``MAX_VALUE_DEPTH`` deep (Hydra's parser recurses per level and slows down
  quadratically with length).
- ``hydra.*`` keys and ``hydra/`` groups are refused: Hydra only composes here, its job
  settings (run directory, logging, launcher, search path) would be silently ignored.
- Every recipe file is read as a YAML event stream first (``check_recipe_files``, with
  ``yaml_bounds.load_bounded``): at most ``MAX_YAML_BYTES``, nested at most
  ``MAX_YAML_DEPTH`` deep, and at most ``MAX_YAML_NODES`` nodes once its aliases are
  expanded (an alias "bomb" of a few hundred bytes expands to billions), with no
  ``hydra`` key.
"""

from __future__ import annotations

import json
import os
import stat
import typing
from pathlib import Path
from typing import Any, get_origin

from pydantic import BaseModel, ValidationError

from recipe_arena.config import DEFAULT_RECIPE, RunConfig


class ConfigError(ValueError):
    """A bad recipe, group option, key or value. The message is one line."""


MAX_OVERRIDES = 256
"""Overrides on one command line, at most (far more than a run or comparison uses)."""

MAX_OVERRIDE_CHARS = 4096
"""Characters of one ``key=value`` override, at most: Hydra's override parser slows down
faster than linearly in a value's length."""

MAX_VALUE_DEPTH = 16
"""Nesting of ``[...]`` and ``{...}`` in an override value, at most (a config is at most
4 levels deep; Hydra's parser overflowed the stack between 100 and 150 levels)."""

MAX_RECIPE_FILES = 1000
"""YAML files under the recipes folder, at most."""


def _short(value: object, limit: int = 120) -> str:
    """``repr(value)``, cut to ``limit`` characters for a one-line message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def recipes_dir() -> Path:
    env = os.environ.get("RECIPE_ARENA_RECIPES")
    path = Path(env) if env else Path(__file__).resolve().parents[1] / "recipes"
    if not path.is_dir():
        raise ConfigError(f"recipes folder not found at {path} (set RECIPE_ARENA_RECIPES)")
    return path


def _options(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.yaml"))


def _split_override(item: str) -> tuple[str, str]:
    if len(item) > MAX_OVERRIDE_CHARS:
        raise ConfigError(
            f"override {_short(item, 60)} is {len(item)} characters long; "
            f"at most {MAX_OVERRIDE_CHARS} are accepted"
        )
    if "=" not in item:
        raise ConfigError(f"override {_short(item)} is not of the form key=value")
    key, value = item.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"override {_short(item)} has an empty key")
    bare = key.lstrip("+~")
    if bare == "hydra" or bare.startswith(("hydra.", "hydra/")):
        raise ConfigError(
            f"{key}: hydra settings are not used (Hydra only composes the recipe here; a "
            "run's directory is out_dir/name, its output goes to the terminal and the run "
            "directory); remove it"
        )
    depth = value_depth(value)
    if depth > MAX_VALUE_DEPTH:
        raise ConfigError(
            f"{key}: the value nests lists or mappings {depth} deep; "
            f"at most {MAX_VALUE_DEPTH} are accepted"
        )
    return key, value


def value_depth(value: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in an override value, brackets inside
    quoted strings not counted."""
    depth = deepest = 0
    quote = ""
    escaped = False
    for ch in value:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def check_recipe_files(root: Path) -> None:
    """Every YAML file under ``root`` is within the bounds of the module docstring and
    has no ``hydra`` key; ConfigError naming the file otherwise. Files already checked
    at their current size and modification time are not read again."""
    files = sorted(root.rglob("*.yaml"))
    if len(files) > MAX_RECIPE_FILES:
        raise ConfigError(
            f"recipes folder {root} holds {len(files)} YAML files; at most {MAX_RECIPE_FILES}"
        )
    for path in files:
        try:
            st = path.stat()
        except OSError as e:
            raise ConfigError(f"recipe file {path}: cannot be read ({e.strerror})") from None
        if not stat.S_ISREG(st.st_mode):  # a FIFO or device would block or never end
            raise ConfigError(f"recipe file {path} is not a regular file")
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if _CHECKED.get(path) == stamp:
            continue
        _check_recipe_file(path)
        _CHECKED[path] = stamp


_CHECKED: dict[Path, tuple[int, int, int]] = {}
"""Recipe files that passed ``_check_recipe_file``, by (inode, size, mtime)."""


def _check_recipe_file(path: Path) -> None:
    """Read the file within ``yaml_bounds``' bounds (its YAML events streamed and counted
    before anything builds it); then look for Hydra settings in what it holds."""
    from recipe_arena.yaml_bounds import YamlBoundsError, load_bounded

    try:
        data = load_bounded(path)
    except YamlBoundsError as e:
        raise ConfigError(f"recipe file {path}: {e}") from None
    except OSError as e:
        raise ConfigError(f"recipe file {path}: cannot be read ({e.strerror})") from None
    if not isinstance(data, dict):
        return
    defaults = data.get("defaults")
    named = [str(k) for k in data] + [
        str(k)
        for entry in (defaults if isinstance(defaults, list) else [])
        for k in (entry if isinstance(entry, dict) else [entry])
    ]
    hydra = [k for k in named if k == "hydra" or "hydra/" in k]
    if hydra:
        raise ConfigError(
            f"recipe file {path}: {hydra[0]!r} is a Hydra setting, which is not used "
            "(Hydra only composes the recipe here); remove it"
        )


def compose_raw(overrides: list[str]) -> dict[str, Any]:
    """Compose the Hydra config for ``recipe=NAME`` (default ``DEFAULT_RECIPE``) plus overrides."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    root = recipes_dir()
    recipe = DEFAULT_RECIPE
    hydra_overrides: list[str] = []
    if len(overrides) > MAX_OVERRIDES:
        raise ConfigError(f"{len(overrides)} overrides given; at most {MAX_OVERRIDES}")
    for item in overrides:
        key, value = _split_override(item)
        bare = key.lstrip("+~")
        if bare == "recipe":
            if key.startswith("~"):
                raise ConfigError(f"{key}: a run always has a recipe; name one with recipe=NAME")
            recipe = value
            continue
        if (root / bare).is_dir():
            allowed = _options(root / bare)
            if value not in allowed:
                raise ConfigError(
                    f"{bare}={value!r} is not an option of {bare}; allowed: {', '.join(allowed)}"
                )
            hydra_overrides.append(f"{bare}={value}")
        else:
            hydra_overrides.append(f"++{bare}={value}")
    recipes = _options(root)
    if recipe not in recipes:
        raise ConfigError(
            f"recipe={_short(recipe)} is not a recipe (a name of a file in {root}, not a "
            f"path); allowed: {', '.join(recipes)}"
        )
    check_recipe_files(root)
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_dir(config_dir=str(root), version_base="1.3"):
            extra: list[str] = []
            if any(_mapping_key(o) for o in hydra_overrides):
                plain = [o for o in hydra_overrides if not _mapping_key(o)]
                extra = _mapping_defaults(
                    compose(config_name=recipe, overrides=plain), hydra_overrides
                )
            cfg = compose(config_name=recipe, overrides=extra + hydra_overrides)
        raw = OmegaConf.to_container(cfg, resolve=True)
    except HydraException as e:
        raise ConfigError(" ".join(str(e).split())) from None
    except OmegaConfBaseException as e:  # ${oc.env:NOPE} and other interpolations
        key = getattr(e, "full_key", "") or "?"
        msg = " ".join(str(e).split("\n")[0].split())
        raise ConfigError(f"{key}: cannot resolve the value ({msg})") from None
    except RecursionError:  # bounded above; kept so that no input ends in a traceback
        raise ConfigError(f"recipe={recipe}: the config nests too deeply to compose") from None
    assert isinstance(raw, dict)
    raw["recipe"] = recipe  # the file's name, whatever the file or an override says
    return {str(k): v for k, v in raw.items()}


def _mapping_key(override: str) -> tuple[str, dict[str, Any]] | None:
    """For ``++a.b.key=v`` where ``a.b`` is a mapping field (rl.domain_weights,
    length_control.budget_by_effort): the mapping's path and its default; None for any
    other override. In a strategy axis the field is looked up in the one option that
    has it."""
    key = override.split("=", 1)[0].lstrip("+~")
    parts = key.split(".")
    model: type[BaseModel] = RunConfig
    for i, part in enumerate(parts[:-1]):
        field = model.model_fields.get(part)
        if field is None:
            return None
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
            continue
        owners = [m for m in union_members(ann).values() if parts[i + 1] in m.model_fields]
        if len(owners) == 1:
            model = owners[0]
            continue
        if get_origin(ann) is dict:
            default = field.get_default(call_default_factory=True)
            return ".".join(parts[: i + 1]), dict(default or {})
        return None
    return None


def _mapping_defaults(cfg: Any, overrides: list[str]) -> list[str]:
    """Setting one key of a mapping must override that key only. Defaults live in
    pydantic, so when nothing else set the mapping (``cfg`` is the composition without
    the key overrides), Hydra would build it from the one key given and the others
    would be lost: start it from its default instead."""
    from omegaconf import OmegaConf

    extra: list[str] = []
    for o in overrides:
        found = _mapping_key(o)
        if found is None:
            continue
        path, default = found
        if OmegaConf.select(cfg, path) is not None:
            continue  # a recipe file or a whole-mapping override set it: merged key by key
        body = ",".join(f"{k}:{json.dumps(v)}" for k, v in default.items())
        item = f"++{path}={{{body}}}"
        if item not in extra:
            extra.append(item)
    return extra


def union_members(ann: Any) -> dict[str, type[BaseModel]]:
    """A strategy axis's parameter models by name (empty if ``ann`` is not such a union).
    An axis of one strategy is its model itself (a union of one collapses)."""
    from recipe_arena.strategy import StrategyParams

    if isinstance(ann, type) and issubclass(ann, StrategyParams):
        return {str(ann.model_fields["name"].default): ann}
    members: dict[str, type[BaseModel]] = {}
    for arg in typing.get_args(ann):
        for model in typing.get_args(arg) or (arg,):
            if isinstance(model, type) and issubclass(model, BaseModel):
                name = model.model_fields.get("name")
                if name is not None and isinstance(name.default, str):
                    members[name.default] = model
    return members


def _resolve(loc: tuple[int | str, ...]) -> tuple[type[BaseModel] | None, list[str]]:
    """The pydantic model that owns the field at ``loc`` and the user's key path (a
    strategy union's tag, which pydantic puts in ``loc``, is not part of the key)."""
    model: type[BaseModel] | None = RunConfig
    path: list[str] = []
    parts = list(loc)
    while parts:
        part = str(parts.pop(0))
        path.append(part)
        if not parts or model is None:
            break
        field = model.model_fields.get(part)
        ann = field.annotation if field else None
        members = union_members(ann)
        if members and str(parts[0]) in members:
            model = members[str(parts.pop(0))]
        elif isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        elif len(members) == 1:  # an optional model (``Model | None``)
            model = next(iter(members.values()))
        else:
            model = None
    return model, path


def format_validation_error(err: ValidationError) -> str:
    """First error as one line: 'key=value: problem; allowed: ...'."""
    e = err.errors()[0]
    loc = tuple(e["loc"])
    owner, path = _resolve(loc)
    key = ".".join(path)
    if e["type"] == "extra_forbidden":
        allowed = ", ".join(owner.model_fields) if owner else "?"
        return f"unknown key '{key}' (value {_short(e['input'])}); allowed keys here: {allowed}"
    if e["type"] in ("union_tag_invalid", "union_tag_not_found"):
        ctx = e.get("ctx", {})
        tag = ctx.get("tag", "(missing)")
        return (
            f"{key}.name={tag!r}: not an option of {key}; allowed: {ctx.get('expected_tags', '?')}"
        )
    more = f" (and {len(err.errors()) - 1} more)" if len(err.errors()) > 1 else ""
    return f"{key}={_short(e['input'])}: {e['msg']}{more}"


def load_config(overrides: list[str]) -> RunConfig:
    raw = compose_raw(overrides)
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err)) from None
