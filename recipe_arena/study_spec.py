"""The study file's schema (``studies/<name>.yaml``): rows of comparisons, regimes,
findings and contrasts, validated by pydantic so that a bad file fails in one line before
any run starts (``load_spec``). ``recipe-arena study`` (``study``) runs what it declares.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, model_validator

from recipe_arena.compose import ConfigError
from recipe_arena.config import DEFAULT_RECIPE
from recipe_arena.cpu_isa import Isa
from recipe_arena.yaml_bounds import YamlBoundsError, load_bounded

Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RowSpec(_Strict):
    """One row: a comparison of arms against OLMo 3's choice (the first arm)."""

    name: Name
    title: str | None = None
    """What the row asks, for the report (default: its name)."""
    axis: str | None = None
    """A folder of recipes/ (``staleness``) or a config key (``rl.lr``) whose options
    ``arms`` lists; None: ``arms`` maps arm names to override lists."""
    arms: list[str] | dict[Name, list[str]]
    """With ``axis``: its values, OLMo 3's first. Without: name -> overrides, OLMo 3's
    first. At least two."""
    regimes: list[str] = ["default"]
    """Names from the study's ``regimes`` the row is run in."""
    overrides: list[str] = []
    """Settings of every run of this row (after the study's and the regime's)."""
    aa: bool = False
    """Add an A/A control: OLMo 3's choice again on the seeds + 1000."""
    design: str | None = None
    """How the row's arms were made comparable beyond the paired design (e.g. the
    steps that match a pipeline's learner tokens); printed in the row's section."""
    budget: Literal["samples", "design"] = "samples"
    """'samples': every arm trains the same RL samples (steps x prompts x group), which
    is checked; 'design': the arms' step counts differ on purpose, matched as
    ``design`` states (required then), e.g. on learner tokens across pipelines."""

    @model_validator(mode="after")
    def _two_arms(self) -> RowSpec:
        if len(self.arms) < 2:
            raise ValueError(f"row {self.name}: a comparison needs at least two arms")
        if self.axis is None and not isinstance(self.arms, dict):
            raise ValueError(f"row {self.name}: without axis, arms maps names to overrides")
        if self.axis is not None and isinstance(self.arms, dict):
            raise ValueError(f"row {self.name}: with axis={self.axis}, arms is a list of values")
        if self.budget == "design" and not self.design:
            raise ValueError(f"row {self.name}: budget: design needs the design that matches it")
        names = [n for n, _ in arm_overrides(self)]
        if self.aa:
            names.append(f"{names[0]}_aa")  # the A/A control's name (study.row_plan)
        if dup := next((n for n in names if names.count(n) > 1), None):
            raise ValueError(
                f"row {self.name}: two arms are named {dup!r}"
                + (" (the A/A control takes <first arm>_aa)" if self.aa else "")
            )
        return self


class FindingSpec(_Strict):
    """A claim, read off one comparison of the study."""

    claim: str
    row: str
    regime: str = "default"
    arm: str
    """An arm name of the row as the comparison names it (``compare``'s naming for an
    axis: the option, or ``<last key part>_<value>`` for a config key)."""
    domain: str = "mean"
    expect: Literal["better", "worse", "same"]
    """What the claim says of the arm against OLMo 3's choice."""


class GroupSpec(_Strict):
    name: str
    """What the group's rows vary, for the report ("rewards")."""
    rows: list[str] = Field(min_length=1)


class ContrastSpec(_Strict):
    """Two groups of rows: which one's choices move held-out pass@1 more
    (``eval.contrast``)."""

    claim: str
    groups: tuple[GroupSpec, GroupSpec]
    """The claim says the first group moves it more."""
    domain: str = "mean"
    regime: str = "default"


class StudySpec(_Strict):
    name: Name
    title: str | None = None
    recipe: str = DEFAULT_RECIPE
    seeds: list[Annotated[StrictInt, Field(ge=0)]] = Field(min_length=1)
    """The seeds every comparison runs on: distinct integers (a quoted "1" is refused,
    not read as 1, and a seed listed twice would count one run as two paired draws)."""
    threads: int | None = Field(None, ge=1)
    """torch threads of every run, 1 or more, whatever ``jobs=N`` and the machine's cores;
    None: the cores shared among the jobs. The thread count changes floating-point sums,
    so a study that fixes it gives the same numbers at any ``jobs`` and on any machine of
    the same type; it is part of each run's key."""
    isa: Isa | None = None
    """The instruction set every run's CPU kernels are capped at (``cpu_isa``); None:
    the widest the machine has. Kernels of another width sum in another order, so a study
    that fixes it gives the same numbers on Intel and AMD machines with AVX2 or more. Not
    part of the runs' keys: the study file fixes it for every run of the study (the
    cached models it builds are keyed by it, ``cache.cache_key``)."""
    common: list[str] = []
    regimes: dict[Name, list[str]] = {"default": []}
    regime_notes: dict[Name, str] = {}
    """How a regime was made and why, printed under its overrides in the report."""
    regime_seeds: dict[Name, Annotated[int, Field(ge=1)]] = {}
    """Regime -> how many seeds its comparisons run on, where more than ``seeds``: the
    study's seeds, then the integers after the largest of them (``seeds_of``), so that
    ``seeds=8,9,10,11`` moves a regime of 8 seeds to 8-15 with the rest. Why: a regime
    whose arms' seeds spread (one that makes training unstable on purpose) needs more
    seeds for the same MDE than the others, and giving them to it alone costs its runs
    only."""
    rows: list[RowSpec] = Field(min_length=1)
    findings: list[FindingSpec] = []
    contrasts: list[ContrastSpec] = []

    @model_validator(mode="after")
    def _references(self) -> StudySpec:
        names = [r.name for r in self.rows]
        if len(set(names)) != len(names):
            raise ValueError(f"row names must be distinct, got {names}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct, got {self.seeds}")
        for r in self.rows:
            for g in r.regimes:
                if g not in self.regimes:
                    raise ValueError(
                        f"row {r.name}: regime {g!r} is not one of {sorted(self.regimes)}"
                    )
        if unknown := set(self.regime_notes) - set(self.regimes):
            raise ValueError(f"regime_notes: no regime {sorted(unknown)[0]!r}")
        if unknown := set(self.regime_seeds) - set(self.regimes):
            raise ValueError(f"regime_seeds: no regime {sorted(unknown)[0]!r}")
        for g, n in self.regime_seeds.items():
            if n < len(self.seeds):
                raise ValueError(
                    f"regime_seeds: {g} has {n} seeds, fewer than the study's {len(self.seeds)}"
                )
        rows = {r.name: r for r in self.rows}
        for f in self.findings:
            if f.row not in rows:
                raise ValueError(f"finding {f.claim!r}: no row {f.row!r}")
            arms = [n for n, _ in arm_overrides(rows[f.row])][1:]
            if f.arm not in arms:
                raise ValueError(
                    f"finding {f.claim!r}: row {f.row} has no alternative {f.arm!r}; "
                    f"alternatives: {', '.join(arms)}"
                )
            if f.regime not in rows[f.row].regimes:
                raise ValueError(f"finding {f.claim!r}: row {f.row} is not run in {f.regime!r}")
        for c in self.contrasts:
            for g in c.groups:
                for name in g.rows:
                    if name not in rows or c.regime not in rows[name].regimes:
                        raise ValueError(
                            f"contrast {c.claim!r}: no row {name!r} run in {c.regime!r}"
                        )
        return self


def seeds_of(seeds: list[int], regime_seeds: dict[str, int], regime: str) -> list[int]:
    """The seeds ``regime``'s comparisons run on: the study's ``seeds``, followed, where
    ``regime_seeds`` (``StudySpec.regime_seeds``) asks for more, by the integers after
    the largest of them ([0, 1, 2, 3] with 8 -> 0-7)."""
    more = regime_seeds.get(regime, len(seeds)) - len(seeds)
    return [*seeds, *range(max(seeds) + 1, max(seeds) + 1 + more)]


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping: plain YAML keeps
    the last silently, so a second ``seeds:`` or an arm named twice in a row's ``arms``
    would replace the first without a word."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if not isinstance(key, Hashable):
                continue  # refused by the base loader below, with its own message
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_spec(path: Path) -> StudySpec:
    """The study file, validated; ConfigError (one line) if it is not a valid study, or
    is beyond ``yaml_bounds``' bounds (a study file from someone else nested 500 deep
    ended in a RecursionError traceback, and a 200 MB one was read for minutes)."""
    try:
        raw = load_bounded(Path(path), _UniqueKeyLoader)
    except YamlBoundsError as e:
        raise ConfigError(f"study file {path}: {e}") from None
    except OSError as e:
        raise ConfigError(f"study file {path}: {e.strerror}") from None
    try:
        return StudySpec.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(f"study file {path}: {first_error(e)}") from None


def first_error(e: ValidationError) -> str:
    """A study's first validation error on one line: where in the study, and what."""
    err = e.errors()[0]
    where = ".".join(str(x) for x in err["loc"]) or "(top level)"
    return f"{where}: {err['msg']}"


def _label(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", value)


def arm_overrides(row: RowSpec) -> list[tuple[str, list[str]]]:
    """(name, overrides) of the row's arms, OLMo 3's first. An axis's arms are named as
    ``compare`` names them: the option, or <last key part>_<value> for a config key."""
    if isinstance(row.arms, dict):
        return [(name, list(ov)) for name, ov in row.arms.items()]
    out = []
    for v in row.arms:
        name = f"{str(row.axis).rsplit('.', 1)[-1]}_{v}" if "." in str(row.axis) else v
        out.append((_label(name), [f"{row.axis}={v}"]))
    return out
