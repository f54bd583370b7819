"""Hydra composition of `recipes/` into a validated RunConfig.

Overrides on the command line come in two kinds:
- ``group=option`` where ``group`` is a folder of `recipes/` (``staleness=tis``): Hydra
  picks the file; an option that has no file is an error listing the files there.
- ``a.b=value``: set one field. Hydra adds it (``++``) and pydantic then checks it, so a
  misspelt key or an out-of-range number fails naming the key, the value and what is
  allowed.
Any failure raises ConfigError with one line of text; the CLI prints it and exits 2
before any work starts.
"""

from __future__ import annotations

import json
import os
import typing
from pathlib import Path
from typing import Any, get_origin

from pydantic import BaseModel, ValidationError

from recipe_arena.config import RunConfig


class ConfigError(ValueError):
    """A bad recipe, group option, key or value. The message is one line."""


def recipes_dir() -> Path:
    env = os.environ.get("RECIPE_ARENA_RECIPES")
    path = Path(env) if env else Path(__file__).resolve().parents[1] / "recipes"
    if not path.is_dir():
        raise ConfigError(f"recipes folder not found at {path} (set RECIPE_ARENA_RECIPES)")
    return path


def _options(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.yaml"))


def _split_override(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise ConfigError(f"override '{item}' is not of the form key=value")
    key, value = item.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"override '{item}' has an empty key")
    return key, value


def compose_raw(overrides: list[str]) -> dict[str, Any]:
    """Compose the Hydra config for ``recipe=NAME`` (default olmo3_think) plus overrides."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    root = recipes_dir()
    recipe = "olmo3_think"
    hydra_overrides: list[str] = []
    for item in overrides:
        key, value = _split_override(item)
        if key == "recipe":
            recipe = value
            continue
        bare = key.lstrip("+~")
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
        raise ConfigError(f"recipe={recipe!r} is not a recipe; allowed: {', '.join(recipes)}")
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
    assert isinstance(raw, dict)
    raw.setdefault("recipe", recipe)
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
    """A strategy axis's parameter models by name (empty if ``ann`` is not such a union)."""
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
        return f"unknown key '{key}' (value {e['input']!r}); allowed keys here: {allowed}"
    if e["type"] in ("union_tag_invalid", "union_tag_not_found"):
        ctx = e.get("ctx", {})
        tag = ctx.get("tag", "(missing)")
        return (
            f"{key}.name={tag!r}: not an option of {key}; allowed: {ctx.get('expected_tags', '?')}"
        )
    more = f" (and {len(err.errors()) - 1} more)" if len(err.errors()) > 1 else ""
    return f"{key}={e['input']!r}: {e['msg']}{more}"


def load_config(overrides: list[str]) -> RunConfig:
    raw = compose_raw(overrides)
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err)) from None
