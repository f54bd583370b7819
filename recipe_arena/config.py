"""Typed configuration: Hydra composes `recipes/`, pydantic validates it into RunConfig.
Defaults live here once (a strategy's in its own module, the training stages' in
``config_train``, the worlds' in ``config_world``, the rewards' in ``config_rewards``);
YAML files only override."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from recipe_arena.advantages import CenteredParams
from recipe_arena.axes import (
    AdvantageConfig,
    LengthControlConfig,
    PolicyLossConfig,
    StalenessConfig,
)
from recipe_arena.comparison_plan import NAME_PATTERN
from recipe_arena.config_distill import DistillConfig, SpecialistsConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.config_train import SEED_MAX, BaseTrainConfig, DPOConfig, SFTConfig, Strict
from recipe_arena.config_world import MicroWorld, WorldConfig
from recipe_arena.data.schema import Domain
from recipe_arena.data.templates import PromptTemplate
from recipe_arena.engine_registry import ENGINES
from recipe_arena.length_control import NoLengthControlParams
from recipe_arena.policy_loss import LossConfig, OlmoParams
from recipe_arena.stage_registry import STAGES
from recipe_arena.staleness import TISParams

NonNegative = Annotated[float, Field(ge=0)]


if TYPE_CHECKING:
    EngineName = str
else:
    EngineName = Literal[tuple(ENGINES)]


class EngineConfig(Strict):
    """Generation backend (machine setting, not science)."""

    name: EngineName = "torch"
    """A key of ``engine_registry.ENGINES``."""
    mode: Literal["continuous", "static"] = "continuous"
    """torch engine batching: continuous (refill finished slots) or static (Table 9.1)."""
    max_batch_size: int = Field(64, ge=1)
    """Sequences decoded together, 1 or more."""
    keep_kv_on_update: bool = True
    """An in-flight weight update keeps the KV cache computed under the older weights (OLMo 3)."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Weights, activations and KV cache of the torch and vLLM engines; half precision
    halves the bytes a decode step reads (benchmarks/precision_gap.py)."""
    lm_head_fp32: bool = False
    """torch engine in bfloat16/float16: the LM head in float32 over the whole vocabulary
    (MiniMax-M1's mismatch fix; the trainer's side is ``rl.lm_head_fp32``)."""
    max_prefill_tokens: int = Field(4096, ge=1)
    """torch engine: padded prompt tokens per batched prefill forward, 1 or more."""
    device: str = "cpu"
    """torch device (cpu, cuda, cuda:N); the top-level ``device`` sets it if not given."""
    num_threads: int | None = Field(None, ge=1)
    """torch intra-op threads, 1 or more; None keeps torch's default."""
    cuda_graphs: bool = True
    """torch on CUDA: decode steps as CUDA-graph replays (same greedy tokens)."""
    graph_steps: int = Field(4, ge=1)
    """Decode steps per CUDA-graph replay, 1 or more (amortising its launch)."""

    @model_validator(mode="after")
    def _lm_head_fp32_on_torch(self) -> EngineConfig:
        if self.lm_head_fp32 and self.name != "torch":
            raise ValueError(
                f"engine.lm_head_fp32 is implemented by the torch engine only, not {self.name!r}"
            )
        return self


class RLConfig(Strict):
    """The RLVR stage (OLMo 3's values, where they differ, in the docstrings)."""

    steps: int = Field(48, ge=0)
    """Optimiser steps, 0 or more (about 1,400 in OLMo 3 7B)."""
    prompts_per_step: int = Field(8, ge=1)
    """N, unique prompts with non-zero reward variance per optimiser step (64 in OLMo 3)."""
    group_size: int = Field(8, ge=2)
    """G, rollouts per prompt, 2 or more (8 in OLMo 3)."""
    temperature: float = Field(1.0, gt=0)
    """Sampling temperature of the rollouts, > 0."""
    max_new_tokens: int = Field(96, ge=1)
    """Response cap in tokens (32K in OLMo 3)."""
    lr: float = Field(1e-5, ge=0, le=1)
    """Peak AdamW rate in [0, 1] (~1e-6 in OLMo 3 7B); 0 freezes the policy."""
    warmup_steps: int = Field(0, ge=0)
    """Linear learning-rate warm-up, optimiser steps."""
    lr_schedule: Literal["constant", "cosine"] = "constant"
    """After warm-up: constant, or cosine decay to ``lr_floor`` at the last step."""
    max_staleness: int = Field(1, ge=0)
    """A group is trainable iff learner_version - min(token_versions) <= max_staleness."""
    pipeline_depth: int = Field(2, ge=1)
    """Batches of prompts in flight ahead of the learner, at most."""
    zero_gradient_filter: bool = True
    """Drop groups whose G rewards are all equal (no gradient; OLMo 3)."""
    active_sampling: bool = True
    """Keep drawing prompts until N groups with reward variance fill the batch (OLMo 3)."""
    max_resample_factor: int = Field(8, ge=1)
    """Give up filling a batch after drawing this many times its N prompts."""
    domain_weights: dict[Domain, NonNegative] = Field(
        default={"math": 0.8, "code": 0.0, "ifeval": 0.1, "chat": 0.1}
    )
    """Relative sampling weight per domain, >= 0; at 0 neither filtered nor trained."""
    num_actors: int = Field(1, ge=1)
    """Actors generating rollouts, 1 or more."""
    checkpoint_every: int = Field(10, ge=1)
    """Save a checkpoint every this many optimiser steps."""
    eval_every: int = Field(12, ge=1)
    """Held-out evaluation every this many steps, and at step 0 and the last step."""
    epochs: int = Field(1, ge=1)
    """Optimiser updates per batch, PPO's sample reuse (1 in OLMo 3)."""
    microbatch_tokens: int | None = Field(4096, ge=1)
    """Padded tokens per learner forward; None: one forward (same gradient)."""
    grad_clip: float = Field(1.0, gt=0)
    """Global gradient-norm clip of each learner step, > 0 (1.0 in open-instruct)."""
    adam_betas: tuple[float, float] = (0.9, 0.99)
    """AdamW (beta1, beta2) of the learner, each in [0, 1)."""
    weight_decay: float = Field(0.0, ge=0)
    """AdamW decoupled weight decay of the learner, >= 0 (0 in OLMo 3)."""
    device: str | None = None
    """torch device of the learner and reference model; None: ``device_for``."""
    bf16: bool | None = None
    """Learner under bfloat16 autocast, float32 master weights; None: on for CUDA."""
    fp16: bool = False
    """Learner under float16 autocast with dynamic loss scaling, float32 master weights
    (closer to a float16 engine); needs ``rl.bf16`` unset or false."""
    lm_head_fp32: bool = False
    """The learner's LM head in float32 under autocast (trainer side of
    ``engine.lm_head_fp32``); no effect on a float32 forward."""
    lr_floor: float = Field(0.1, ge=0, le=1)
    """Fraction of the peak (0-1) a cosine ``lr_schedule`` ends at."""
    schedule: Literal["wall_clock", "deterministic"] = "wall_clock"
    """wall_clock: threaded actors, updates land when published; deterministic: a fixed order on a
    logical clock (``core.lockstep``), bitwise reproducible."""
    lag: int = Field(1, ge=0)
    """Deterministic schedule: versions the actor lags, 0 to ``max_staleness``."""
    update_at_decode_step: int | None = Field(None, ge=1)
    """Deterministic schedule: decode steps before an in-flight update; None: none."""

    @field_validator("domain_weights")
    @classmethod
    def _some_domain_weighted(cls, v: dict[str, float]) -> dict[str, float]:
        if not any(w > 0 for w in v.values()):
            raise ValueError("at least one domain needs a weight above 0")
        return v

    @model_validator(mode="after")
    def _one_autocast_dtype(self) -> RLConfig:
        if self.fp16 and self.bf16:
            raise ValueError("rl.fp16 and rl.bf16 are both on; choose one autocast dtype")
        return self

    @model_validator(mode="after")
    def _deterministic_lag_trainable(self) -> RLConfig:
        if self.schedule != "deterministic":
            return self
        if self.lag > self.max_staleness:
            raise ValueError(
                f"rl.lag={self.lag} exceeds rl.max_staleness={self.max_staleness}: every "
                "group would be stale; raise rl.max_staleness to at least rl.lag"
            )
        if self.update_at_decode_step is not None and self.lag == 0:
            raise ValueError(
                "rl.update_at_decode_step needs rl.lag >= 1 (at lag 0 the next version "
                "does not exist while the batch is sampled)"
            )
        return self


class PromptFilterConfig(Strict):
    """Offline prompt filter (OLMo 3 sec. 9.6)."""

    enabled: bool = True
    """Run the filter (the prompt_filter stage is a no-op when off)."""
    rollouts: int = Field(8, ge=1)
    """k, rollouts per prompt that estimate its pass rate (8 in OLMo 3)."""
    temperature: float = Field(1.0, gt=0)
    """Sampling temperature of the filter's rollouts (1.0 in OLMo 3)."""
    max_pass_rate: float = Field(0.625, ge=0, le=1)
    """Prompts with a pass rate above this (0-1) are removed."""
    min_pass_rate: float = Field(0.0, ge=0, le=1)
    """Prompts with a pass rate below this (0-1) are removed (0 in OLMo 3)."""
    max_prompts: int | None = Field(640, ge=1)
    """Prompts filtered, split by ``rl.domain_weights``; None: all (OLMo 3)."""


if TYPE_CHECKING:
    Stage = str
else:
    Stage = Literal[tuple(STAGES)]
"""A stage's name: a key of ``stage_registry.STAGES``."""


class PipelineConfig(Strict):
    """The stages a recipe runs, chosen by the ``pipeline`` group's file."""

    stages: list[Stage] = Field(default=["base", "sft", "dpo", "prompt_filter", "rlvr", "eval"])
    """Stage names in order (``stage_registry``; each stage's module says what it does)."""
    reuse_prefix: bool = False
    """Copy the stages before RL from an earlier run with the same settings, seed and
    thread count instead of training them again (``prefix_cache``); studies set it."""
    prefix_seed: int | None = Field(None, ge=0, le=SEED_MAX)
    """Seed of the stages before RL (``prefix_cache.prefix_stages``), 0 or more; None:
    ``seed``. Set, the seeds of a comparison vary RL alone, from one starting model."""


class ClusterConfig(Strict):
    """Where the roles run; the GPU layout is what ``--dry-run`` places (``plan``)."""

    backend: Literal["local", "ray"] = "local"
    """'local': threads in this process; 'ray': actors as Ray tasks."""
    address: str | None = None
    """Ray cluster address; None starts a local cluster."""
    num_cpus: int | None = Field(None, ge=1)
    """CPUs of a local Ray cluster; None: Ray's default."""
    gpus_per_node: int = Field(8, ge=1)
    """GPUs per node, the unit roles are packed in (8 on OLMo 3's nodes)."""
    gpus_per_actor: float = Field(0, ge=0)
    """GPUs of one actor, whole or a fraction of one; 0: actors on CPU (1 in OLMo 3 7B)."""
    learner_gpus: float = Field(0, ge=0)
    """M, the learner's GPUs (whole, or a fraction of one); 0: CPU."""
    judge_gpus: int = Field(0, ge=0)
    """GPUs of the LM-judge service reached at ``rewards.judge_model``; 0: none placed."""

    @field_validator("gpus_per_actor", "learner_gpus")
    @classmethod
    def _whole_or_fraction(cls, v: float) -> float:
        if v > 1 and v != int(v):
            raise ValueError(f"{v:g}: give a fraction of one GPU (below 1) or whole GPUs")
        return v

    code_workers: int = Field(0, ge=0)
    """CPU processes of the code-execution service; 0: per-actor pools."""


class EvalConfig(Strict):
    """Held-out evaluation: pass@1 per domain, a prompt's score the mean over its completions."""

    max_prompts_per_domain: int = Field(50, ge=1)
    """The first this many held-out rows of each domain (the same rows for every recipe)."""
    domain_prompts: dict[Domain, PositiveInt] = Field(default={"math": 300, "chat": 100})
    """Per-domain counts that replace ``max_prompts_per_domain``."""
    temperature: float = Field(0.0, ge=0)
    """Sampling temperature, >= 0; 0: greedy, one completion a prompt."""
    samples: int = Field(4, ge=1)
    """Completions per prompt when ``temperature`` > 0, 1 or more."""
    max_new_tokens: int = Field(160, ge=1)
    """Response cap in tokens (micro references are up to ~150)."""
    dtype: Literal["float32", "bfloat16", "float16"] | None = None
    """Precision of the held-out evaluation's engine (weights, activations, KV cache);
    None: ``engine.dtype``, the sampler's own. An evaluation measures the trained policy,
    not the sampler's precision; and a half-precision engine is slow on a CPU without
    native bfloat16 (docs/results.md, the Table 9.2 study's throughput). Every arm of a
    comparison shares it (``compare.PAIRED_KEYS``)."""

    def prompts_for(self, domain: str) -> int:
        """How many held-out rows of ``domain`` are evaluated."""
        for name, n in self.domain_prompts.items():
            if name == domain:
                return n
        return self.max_prompts_per_domain


class SpuriousRewardConfig(Strict):
    """Spurious-reward control (Shao et al. 2025; OLMo 3's contamination check)."""

    enabled: bool = False
    """Replace every RL reward by a seeded random bit (contamination check)."""
    p: float = Field(0.5, ge=0, le=1)
    """Probability of a reward of 1 (0.5 in Shao et al.)."""


class WandbConfig(Strict):
    """Weights & Biases logging."""

    enabled: bool = False
    project: str = "recipe-arena"
    mode: Literal["offline", "online", "disabled"] = "offline"


class BudgetConfig(Strict):
    """The budget group's name (recipes/budget/)."""

    name: Literal["smoke", "default", "full"] = "default"


DEFAULT_RECIPE = "olmo3_think"
"""The recipe a run, a comparison, a study and ``run --help`` use when none is named."""


class RunConfig(Strict):
    """A run: the recipe's stages and every setting they read."""

    recipe: str = DEFAULT_RECIPE
    """The recipe file's name (``recipes/<recipe>.yaml``), set by compose."""
    device: str | None = None
    """torch device of the parts without their own; None: the engine's."""
    name: str | None = None
    """Run directory name under out_dir; default <recipe>-<budget>-s<seed>."""
    seed: int = Field(0, ge=0, le=SEED_MAX)
    """The run's seed, 0 to 2^32 - 1."""
    out_dir: str = "runs"
    """Folder of the run directories."""
    resume: bool = False
    """Continue the run in ``<out_dir>/<name>`` from its stages.json and checkpoints."""
    prompt_template: PromptTemplate = "chat"
    """chat (the tokenizer's template) or simple (plain text; data/templates.py)."""
    world: WorldConfig = MicroWorld()
    """Where the model and prompt rows come from (``config_world``)."""
    base: BaseTrainConfig = BaseTrainConfig()
    sft: SFTConfig = SFTConfig()
    dpo: DPOConfig = DPOConfig()
    engine: EngineConfig = EngineConfig()
    pipeline: PipelineConfig = PipelineConfig()
    rewards: RewardsConfig = RewardsConfig()
    advantage: AdvantageConfig = CenteredParams()
    """Advantage strategy (recipes/advantage/; registry in advantages/): OLMo 3's
    centred group-relative advantages by default."""
    staleness: StalenessConfig = TISParams()
    """Staleness strategy (recipes/staleness/; registry in staleness/): OLMo 3's TIS by
    default."""
    length_control: LengthControlConfig = NoLengthControlParams()
    """Length control (recipes/length_control/; registry in length_control/): none by
    default, as in OLMo 3."""
    policy_loss: PolicyLossConfig = OlmoParams()
    """Policy loss (recipes/policy_loss/; registry in policy_loss/): OlmoRL's clipped
    token-level loss by default; every loss reads the shared ``loss`` settings."""
    loss: LossConfig = LossConfig()
    """Settings every policy loss shares: normalisation, clip range, KL weight."""
    rl: RLConfig = RLConfig()
    prompt_filter: PromptFilterConfig = PromptFilterConfig()
    eval: EvalConfig = EvalConfig()
    spurious_reward: SpuriousRewardConfig = SpuriousRewardConfig()
    specialists: SpecialistsConfig = SpecialistsConfig()
    """The specialists stage (Kimi K3; ``distill.config``)."""
    distill: DistillConfig = DistillConfig()
    """The distillation stages mopd and opd (``config_distill``)."""
    cluster: ClusterConfig = ClusterConfig()
    wandb: WandbConfig = WandbConfig()
    budget: BudgetConfig = BudgetConfig()

    @field_validator("world", mode="before")
    @classmethod
    def _default_world(cls, v: Any) -> Any:
        """Settings of ``world`` that name no world are the default world's."""
        if isinstance(v, dict) and "name" not in v:
            return {"name": MicroWorld.model_fields["name"].default, **v}
        return v

    @field_validator("name", "recipe")
    @classmethod
    def _a_name_not_a_path(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(NAME_PATTERN, v):
            raise ValueError(
                "must be a name, not a path: up to 128 letters, digits and _.=+-, "
                "not starting with a dot"
            )
        return v

    @model_validator(mode="after")
    def _deterministic_schedule_runs_here(self) -> RunConfig:
        if self.rl.schedule != "deterministic":
            return self
        if self.engine.name != "torch":
            raise ValueError(
                f"rl.schedule=deterministic steps the torch engine; engine.name="
                f"{self.engine.name!r} cannot be stepped (use engine=torch)"
            )
        if self.cluster.backend != "local":
            raise ValueError("rl.schedule=deterministic runs its actor locally; use cluster=local")
        if self.rl.num_actors != 1:
            raise ValueError(
                f"rl.schedule=deterministic runs one actor; rl.num_actors={self.rl.num_actors}"
            )
        return self

    @model_validator(mode="after")
    def _device_sets_engine(self) -> RunConfig:
        if self.device is not None and "device" not in self.engine.model_fields_set:
            object.__setattr__(
                self, "engine", self.engine.model_copy(update={"device": self.device})
            )
        return self

    def device_for(self, part: Literal["engine", "learner", "sft", "dpo"]) -> str:
        """The torch device ``part`` runs on: its own setting, else the top-level
        ``device``, else the engine's."""
        own = {
            "engine": self.engine.device,
            "learner": self.rl.device,
            "sft": self.sft.device,
            "dpo": self.dpo.device,
        }[part]
        return own or self.device or self.engine.device

    @property
    def run_name(self) -> str:
        return self.name or f"{self.recipe}-{self.budget.name}-s{self.seed}"


def validate(raw: dict[str, Any]) -> RunConfig:
    return RunConfig.model_validate(raw)
