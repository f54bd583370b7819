"""The choices `recipe-arena run --help` lists, read at run time from `recipes/` and
the pydantic models, so the help cannot fall behind a new recipe, option or key.

- Recipes: the YAML files at the top of `recipes/`; one line each from the file's
  header comment.
- Config groups: the folders of `recipes/`; each option is a file there, described by
  the first sentence of its header comment (or, lacking one, by the keys it sets). The
  group's own line is the docstring of the RunConfig section of the same name. A
  strategy axis's options (its registry's entries) list their parameters under them.
- Keys: every field of RunConfig, nested sections flattened to ``a.b``, with its
  default, what values it allows (type, bounds from the Field constraints, Literal
  choices) and the first sentence of its docstring.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import annotated_types
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from recipe_arena.compose import recipes_dir, union_members
from recipe_arena.config import DEFAULT_RECIPE, RunConfig
from recipe_arena.strategy import StrategyParams

RUN_DESCRIPTION = """\
Run a recipe's stages (pipeline.stages; olmo3_think on the micro world: base -> SFT ->
DPO -> prompt filter -> RLVR -> eval) and write runs/<recipe>-<budget>-s<seed>/ with
report.md and report.html.

  recipe-arena run recipe=olmo3_think                 the default budget (minutes)
  recipe-arena run recipe=olmo3_think budget=smoke    every stage, a few steps (seconds)
  recipe-arena run staleness=none rl.lr=5e-5 seed=1   one group option, two keys changed
  recipe-arena run rl.steps=20 --cfg job              print the resolved config and exit"""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`'\"])")


# ----------------------------------------------------------------------------- text helpers
def first_sentence(text: str | None) -> str:
    """The first sentence of ``text`` on one line ('' for None). A sentence ends at
    '.', '!' or '?' followed by a space and a capital letter or an opening mark, so
    "sec. 9.9" and "e.g. a" do not end one."""
    if not text:
        return ""
    flat = " ".join(text.split())
    return _SENTENCE_END.split(flat, maxsplit=1)[0]


def header_comment(path: Path) -> str:
    """The comment block at the top of a YAML file, without '#' marks and without
    Hydra's ``# @package`` directive."""
    lines: list[str] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line.startswith("#"):
            break
        body = line.lstrip("#").strip()
        if body.startswith("@package"):
            continue
        lines.append(body)
    return " ".join(lines)


def _yaml_value(value: Any) -> str:
    """A default written the way an override would write it (Hydra/YAML flow style)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, dict | list | tuple):
        plain = json.loads(json.dumps(value))
        text = yaml.safe_dump(plain, default_flow_style=True, width=10**6, sort_keys=False)
        return str(text).strip()
    return str(value)


def describe_option(path: Path) -> str:
    """One line on what a recipe or group option is: its header comment's first
    sentence, else the keys it sets."""
    sentence = first_sentence(header_comment(path))
    if sentence:
        return sentence
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if isinstance(data, dict):
        data.pop("defaults", None)
        return "sets " + ", ".join(f"{k}={_yaml_value(v)}" for k, v in data.items())
    return ""


# ----------------------------------------------------------------------------- recipes/
def recipes(root: Path | None = None) -> dict[str, str]:
    """recipe name -> one line, for every YAML file at the top of `recipes/`."""
    root = root or recipes_dir()
    return {p.stem: describe_option(p) for p in sorted(root.glob("*.yaml"))}


def groups(root: Path | None = None) -> dict[str, dict[str, str]]:
    """group -> {option -> one line}, for every folder of `recipes/` holding YAML files."""
    root = root or recipes_dir()
    out: dict[str, dict[str, str]] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        options = {p.stem: describe_option(p) for p in sorted(folder.glob("*.yaml"))}
        if options:
            out[folder.name] = options
    return out


def recipe_choices(recipe: str, root: Path | None = None) -> dict[str, str]:
    """group -> option that ``recipe`` picks in its Hydra defaults list."""
    root = root or recipes_dir()
    path = root / f"{recipe}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    chosen: dict[str, str] = {}
    for item in (data or {}).get("defaults", []):
        if isinstance(item, dict):
            for group, option in item.items():
                chosen[str(group).split("@")[0].lstrip("+~")] = str(option)
    return chosen


# ----------------------------------------------------------------------------- RunConfig
def _submodel(annotation: Any) -> type[BaseModel] | None:
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    )


def _section_model(field: FieldInfo) -> type[BaseModel] | None:
    """The model of a nested section; for a strategy axis (a union of parameter models)
    the model of its default option."""
    if union_members(field.annotation):
        default = field.get_default(call_default_factory=True)
        return type(default) if isinstance(default, BaseModel) else None
    return _submodel(field.annotation)


def iter_keys(
    model: type[BaseModel] = RunConfig, prefix: str = ""
) -> Iterator[tuple[str, FieldInfo]]:
    """(dotted key, field) for every leaf field of ``model``, nested sections flattened
    in declaration order; a strategy axis shows its default option's keys."""
    for name, field in model.model_fields.items():
        sub = _section_model(field)
        if sub is not None:
            yield from iter_keys(sub, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", field


def axis_options(model: type[BaseModel] = RunConfig) -> dict[str, list[str]]:
    """Strategy axis -> its options (the ``name`` values of its union): the fields whose
    union is of strategies' parameter models (a union of other models, told apart by a
    ``name`` too, is a section)."""
    return {
        name: list(members)
        for name, field in model.model_fields.items()
        if (members := union_members(field.annotation))
        and all(issubclass(m, StrategyParams) for m in members.values())
    }


def axis_params(axis: str, option: str) -> list[tuple[str, str, str, str]]:
    """(key, default, allowed values, one line) of each parameter of one option of a
    strategy axis (``name`` left out): what ``axis.key=value`` may set."""
    params = union_members(RunConfig.model_fields[axis].annotation)[option]
    defaults = params()
    return [
        (
            f"{axis}.{key}",
            _yaml_value(_default_at(defaults, key)),
            allowed(field.annotation, field.metadata),
            first_sentence(field.description),
        )
        for key, field in iter_keys(params)
        if key != "name"
    ]


def sections(model: type[BaseModel] = RunConfig) -> dict[str, str]:
    """Top-level section -> first sentence of its model's docstring."""
    out: dict[str, str] = {}
    for name, field in model.model_fields.items():
        sub = _submodel(field.annotation)
        if union_members(field.annotation):  # a strategy axis: its field's docstring
            out[name] = first_sentence(field.description)
        elif sub is not None:
            out[name] = first_sentence(sub.__doc__)
    return out


def _bounds(metadata: list[Any], kind: str) -> str:
    low = high = ""
    for m in metadata:
        if isinstance(m, annotated_types.Ge):
            low = f"{m.ge} <= "
        elif isinstance(m, annotated_types.Gt):
            low = f"{m.gt} < "
        elif isinstance(m, annotated_types.Le):
            high = f" <= {m.le}"
        elif isinstance(m, annotated_types.Lt):
            high = f" < {m.lt}"
    if low and not high:  # "int >= 0" reads better than "0 <= int"
        op, num = low.split()[1], low.split()[0]
        return f"{kind} {'>=' if op == '<=' else '>'} {num}"
    return f"{low}{kind}{high}"


def allowed(annotation: Any, metadata: list[Any] | None = None) -> str:
    """What values a field of this type accepts, in a few words."""
    metadata = list(metadata or [])
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return allowed(args[0], [*metadata, *args[1:]])
    if origin is Literal:
        return "|".join(_yaml_value(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [allowed(a, metadata) for a in args if a is not type(None)]
        return " or ".join(parts) + (" or null" if type(None) in args else "")
    if origin is list:
        return f"list of {allowed(args[0])}" if args else "list"
    if origin is dict:
        return f"map {allowed(args[0])} -> {allowed(args[1])}" if args else "map"
    if annotation is bool:
        return "true|false"
    if annotation in (int, float):
        return _bounds(metadata, annotation.__name__)
    return getattr(annotation, "__name__", str(annotation))


def _default_at(config: BaseModel, key: str) -> Any:
    """The value at dotted ``key`` of a default-built config: a section's own default
    can differ from its model's field defaults (the micro judge's model spec)."""
    value: Any = config
    for part in key.split("."):
        value = getattr(value, part)
    return value


def key_rows(model: type[BaseModel] = RunConfig) -> list[tuple[str, str, str, str]]:
    """(key, default, allowed values, one line) for every leaf field of ``model``."""
    axes = {f"{axis}.name": "|".join(opts) for axis, opts in axis_options(model).items()}
    defaults = model()
    return [
        (
            key,
            _yaml_value(_default_at(defaults, key)),
            axes.get(key) or allowed(field.annotation, field.metadata),
            first_sentence(field.description),
        )
        for key, field in iter_keys(model)
    ]


# ----------------------------------------------------------------------------- rendering
def _fit(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


def _columns(cells: list[str], widths: list[int]) -> str:
    """Cells padded to ``widths``; a cell too long for its column pushes the rest."""
    line = ""
    for cell, w in zip(cells, widths, strict=False):
        line += f"{cell:<{w}}" if len(cell) + 2 <= w else f"{cell}  "
    return (line + cells[-1] if len(cells) > len(widths) else line).rstrip()


def run_help(width: int | None = None) -> str:
    """The part of `run --help` after argparse's usage: recipes, groups, keys."""
    width = width or max(100, shutil.get_terminal_size((100, 24)).columns)
    found = recipes()
    found_groups = groups()
    chosen = recipe_choices(DEFAULT_RECIPE)
    docs = sections()
    axes = axis_options()
    opt_w = (
        max([len(n) for n in found] + [len(o) + 2 for g in found_groups.values() for o in g]) + 4
    )
    out = [f"recipes (recipe=NAME; default {DEFAULT_RECIPE}):"]
    out += [_fit(_columns(["  " + n, line], [opt_w]), width) for n, line in found.items()]
    out += ["", f"config groups (GROUP=OPTION; * marks what {DEFAULT_RECIPE} picks):"]
    for group, options in found_groups.items():
        out.append(_fit(_columns(["  " + group, docs.get(group, "")], [opt_w]), width))
        for opt, line in options.items():
            mark = " *" if chosen.get(group) == opt else ""
            out.append(_fit(_columns([f"    {opt}{mark}", line], [opt_w]), width))
            if opt in axes.get(group, ()):  # a strategy: its parameters
                for key, default, values, doc in axis_params(group, opt):
                    cells = [f"      {key}={default}", values, doc]
                    out.append(_fit(_columns(cells, [opt_w + 12, 20]), width))
    out += [
        "",
        "keys (KEY=VALUE, shown with its default and allowed values; group options and budgets",
        "change some defaults: add --cfg job to a command to print what it resolves to):",
    ]
    for key, default, values, line in key_rows():
        out.append(_fit(_columns([f"  {key}={default}", values, line], [36, 20]), width))
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- argparse hook
class _RunHelp(argparse.Action):
    """-h/--help of `run`: argparse's usage and options, then ``run_help()``, read only
    when asked for (a broken recipes/ folder must not break the other verbs)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kw: Any):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kw: Any) -> None:
        parser.print_help()
        print()
        print(run_help(), end="")
        parser.exit()


def add_run_help(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` (created with ``add_help=False``) the listing -h/--help."""
    parser.add_argument(
        "-h",
        "--help",
        action=_RunHelp,
        help="show this help (the recipes, config groups and keys below) and exit",
    )
