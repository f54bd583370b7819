"""The rewards group's settings (``rewards``): which verifier scores each domain, the
micro world's judge, and the noisy-verifier arm's label flips. Kept apart from
``config`` so that each module of settings stays readable on its own."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from recipe_arena.config_train import Strict
from recipe_arena.data.schema import Domain, VerdictKind
from recipe_arena.models.spec import TinyModelSpec


class MicroJudgeConfig(Strict):
    """The micro world's chat judge (``rewards.micro_judge``), trained once per machine."""

    model: TinyModelSpec = TinyModelSpec(
        hidden_size=64,
        num_layers=3,
        num_heads=4,
        intermediate_size=192,
        max_position_embeddings=1024,
    )
    """Shape of the judge (it only finds and compares two words)."""
    steps: int = Field(3200, ge=0)
    """Optimiser steps, 0 or more (about 5 minutes of one core, once per machine)."""
    batch_size: int = Field(32, ge=1)
    """Verdict conversations per step, 1 or more, even when ``paired``."""
    lr: float = Field(2e-3, gt=0, le=1)
    """Peak AdamW learning rate in (0, 1]; linear warm-up, cosine to 10%."""
    warmup_steps: int = Field(50, ge=0)
    """Linear warm-up steps, 0 or more (capped at ``steps``)."""
    examples: int = Field(16000, ge=2)
    """Distinct train-split verdicts, 2 or more, drawn with replacement."""
    games_per_verdict: float = Field(0.375, ge=0)
    """Rubric-tournament games drawn per verdict, >= 0."""
    open_fraction: float = Field(0.1, ge=0, le=1)
    """Share (0-1) of verdicts shown through the open template."""
    swap_fraction: float = Field(0.5, ge=0, le=1)
    """Share (0-1) of verdicts with a swapped reference, so the judge reads it."""
    paired: bool = True
    """Train on right/wrong answer pairs to one problem, each pair in one batch."""
    kind_repeats: dict[VerdictKind, Annotated[int, Field(ge=1)]] = Field(default={"number": 2})
    """Times (>= 1) each question kind's verdicts appear; others once."""
    loss_on_prompt: bool = False
    """Loss on the whole verdict conversation, not only the reply."""
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


class LabelFlipConfig(Strict):
    """Noisy verifiers: each training reward flipped, r -> 1 - r (``rewards.label_flip``)."""

    p: float = Field(0.0, ge=0, le=1)
    """Flip probability per rollout, 0 to 1; 0: the exact verifiers."""
    domains: list[Domain] = Field(default=["math", "code", "ifeval"])
    """Domains whose verifier is noisy; the others keep their scores."""


class RewardsConfig(Strict):
    """One verifier per domain."""

    chat: Literal["judge", "rubric_tournament"] = "judge"
    """'judge' (each response alone) or 'rubric_tournament' (Kimi K3, whole groups)."""
    code_reward: Literal["pass_fraction", "all_pass"] = "all_pass"
    """Code score: the fraction of tests passed, or 1 only when all pass."""
    ifeval_partial_credit: bool = False
    """IFEval score: the fraction of instructions held, instead of 1 only when all hold."""
    judge_model: str = "micro"
    """'micro', 'smol', a checkpoint path, or an OpenAI-compatible base URL."""
    micro_judge: MicroJudgeConfig = MicroJudgeConfig()
    """Training settings of the 'micro' judge."""
    timeout_s: float = Field(5.0, gt=0)
    """Hard limit per math/ifeval check, seconds (the worker is replaced)."""
    workers: int = Field(2, ge=1)
    """Verifier worker processes, started once and reused."""
    audit_quarantine: bool = False
    """Drop tasks whose verifier accepted a known hack in the audit stage."""
    math_extractors: list[Literal["boxed", "final_answer_is", "short_answer", "last_number"]] = (
        Field(default=["boxed", "final_answer_is", "short_answer"])
    )
    """Answer extractors, in order (``rewards.math_answer``)."""
    code_wall_s: float = Field(10.0, gt=0)
    """Wall-clock limit of one sandboxed program run, seconds."""
    code_cpu_s: int = Field(10, ge=1)
    """RLIMIT_CPU of a sandboxed program, seconds."""
    code_memory_mb: int = Field(1024, ge=64)
    """RLIMIT_AS of a sandboxed program, MiB."""
    allow_weak_sandbox: bool = False
    """Run code in a sandbox weaker than its full mode (rewards/sandbox.py)."""
    judge_mode: Literal["auto", "reference", "open"] = "auto"
    """'reference', 'open', or 'auto' (reference when the row has one)."""
    judge_markers: Literal["text", "special"] = "text"
    """How an engine judge reads chat markers (``<|im_end|>``, ``<|im_start|>``) that the
    judged answer writes: 'text', as their characters; 'special', as its own special
    tokens, which lets an answer close the judge's turn and write its reply (the studies
    made before 'text' existed pin 'special' so that their runs reproduce)."""
    judge_max_new_tokens: int = Field(40, ge=1)
    """Tokens the judge may write per verdict, a line ending in "Score: N"."""
    rubric_max_new_tokens: int = Field(96, ge=1)
    """Tokens the judge may write for a rubric (rubric tournament)."""
    judge_timeout_s: float = Field(60.0, gt=0)
    """Per-request timeout of an HTTP judge, seconds."""
    judge_retries: int = Field(2, ge=0)
    """Retries of a failed HTTP judge request (exponential back-off)."""
    tournament_schedule: Literal["all_pairs", "round_robin"] = "all_pairs"
    """Rubric tournament pairing: 'all_pairs' or 'round_robin'."""
    tournament_opponents: int = Field(2, ge=1)
    """Opponents per response under 'round_robin'."""
    label_flip: LabelFlipConfig = LabelFlipConfig()
    """Training rewards flipped at a rate p, a noisy verifier (held-out eval stays exact)."""
