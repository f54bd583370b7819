"""Settings of the supervised training stages: base-model training (micro world), SFT and
DPO with delta learning. ``config.RunConfig`` holds them as ``base``, ``sft`` and ``dpo``;
import them from ``recipe_arena.config``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, PositiveInt

from recipe_arena.data.schema import Domain, Effort
from recipe_arena.domains import DOMAINS
from recipe_arena.strategy import STRICT_CONFIG

SEED_MAX = 2**32 - 1
"""Largest seed every generator accepts (NumPy's limit)."""

Beta = Annotated[float, Field(ge=0, lt=1)]
"""An AdamW moment decay, in [0, 1)."""
ADAM_BETAS: tuple[float, float] = (0.9, 0.95)
"""AdamW (beta1, beta2) of the supervised stages (base, SFT, DPO, the micro judge), as in
most open pretraining recipes (OLMo, nanoGPT)."""
WEIGHT_DECAY = 0.01
"""AdamW decoupled weight decay of the supervised stages (per step, times lr)."""


class Strict(BaseModel):
    """Every config model (settings: ``strategy.STRICT_CONFIG``)."""

    model_config = STRICT_CONFIG


class BaseTrainConfig(Strict):
    """Micro world only: turns the random model into a base model that knows the single-step facts
    of the careful procedures (cached per machine; about 3 minutes on 2 CPU cores)."""

    steps: int = Field(400, ge=0)
    """Optimiser steps of next-token prediction on packed windows, 0 or more."""
    batch_size: int = Field(32, ge=1)
    """Windows per step (400 x 32 x 160 = 2.0M tokens, about 0.6 of the full corpus)."""
    lr: float = Field(3e-3, gt=0, le=1)
    """Peak AdamW learning rate (linear warm-up, cosine to 10%)."""
    warmup_steps: int = Field(50, ge=0)
    seq_len: int = Field(160, ge=16)
    """Tokens per training window (characters, with the character-level tokenizer)."""
    corpus: dict[Domain, int] = Field(
        default={"math": 24000, "code": 3000, "ifeval": 3000, "chat": 3000}
    )
    """Generated train-split problems (with reference responses) per domain in the base
    corpus; math weighted up (about 60% of its tokens) so that the single-step facts of
    the careful procedure become reliable within the step budget."""
    seed: int = Field(0, ge=0, le=SEED_MAX)
    """Initialisation and batch-order seed; fixed across run seeds, like one shared
    pretrained checkpoint."""
    plain_fraction: float = Field(0.0, ge=0, le=1)
    """Share (0-1) of each domain's base documents written as plain question-answer text
    in the simple prompt template (``User: ...``, ``Assistant:``, the response, end of
    text) instead of ChatML. Source: pretraining corpora hold plain Q&A text, which lets
    RL-Zero (OLMo 3 sec. 6) prompt a base model without chat markers. Why: RL-Zero's smoke
    base model (recipes/rl_zero_base/smoke.yaml) is too small to carry a format over from
    ChatML. 0 (the default) leaves the corpus and the base model's cache key as they were."""
    plain_careful_fraction: float = Field(0.2, ge=0, le=1)
    """Share (0-1) of the plain documents that keep the careful think block; the others
    give the quick form (an empty think block, then the answer), the micro world's two
    reply forms as in SFT's ``careful_fraction``. Why: only the quick reply fits
    budget=smoke's 32-token RL responses. Ignored (and left out of the cache key) when
    ``plain_fraction`` is 0."""
    evaluate: bool = True
    """Log held-out pass@1 per domain of the base model (cached with it)."""


class SFTConfig(Strict):
    """Think SFT: thinking-trace targets, loss on assistant tokens only."""

    steps: int = Field(300, ge=0)
    """Optimiser steps, 0 or more; 300 lets the effort level shape the reply form the RL start
    chooses."""
    batch_size: int = Field(16, ge=1)
    """Conversations per step (padded to the longest, ~100-400 tokens each)."""
    lr: float = Field(3e-4, gt=0, le=1)
    """Peak AdamW learning rate in (0, 1] (linear warm-up, cosine to 10%); low enough to keep the
    base model's facts."""
    warmup_steps: int = Field(20, ge=0)
    examples_per_domain: int = Field(2000, ge=1)
    """Generated train-split conversations per domain (a draw apart from the RL rows)."""
    two_turn_fraction: float = Field(0.2, ge=0, le=1)
    """Share of conversations with an earlier user/assistant exchange (both trained)."""
    careful_fraction: dict[Domain, dict[Effort, float]] = Field(
        default={"math": {"low": 0.5, "medium": 0.1, "high": 0.02}}
    )
    """Per domain and effort level, the share (0-1) of SFT targets that keep the reference's
    step-by-step think block; the rest get the quick form (an empty think block, then the answer);
    domains and levels not listed keep every think block. Why: the RL start then prefers the quick
    form (low pass@1) but samples the careful one often enough to learn from (high pass@8), harder
    levels later."""
    system_prompt_fraction: float = Field(0.3, ge=0, le=1)
    """Share of conversations that open with a system prompt (never trained on)."""
    adam_betas: tuple[Beta, Beta] = ADAM_BETAS
    """AdamW (beta1, beta2), each in [0, 1)."""
    weight_decay: float = Field(WEIGHT_DECAY, ge=0)
    """AdamW decoupled weight decay (per step, times lr; >= 0)."""
    evaluate: bool = True
    """Log held-out pass@1 per domain after SFT."""
    device: str | None = None
    """torch device of the SFT trainer (cpu, cuda, cuda:N); None: the run's
    (``RunConfig.device_for``). Training is float32 on every device."""


DPOSubset = Literal[(*DOMAINS, "multiturn")]  # type: ignore[valid-type]
"""A preference pair's subset: its domain, or multiturn when the final turn follows an
earlier exchange (OLMo 3 capped the length difference of its chat and multi-turn subsets)."""


class DPOConfig(Strict):
    """Think DPO with delta learning (OLMo 3 sec. 4.3; Geng et al. 2025, "Delta Learning").

    Pairs: the chosen response from a strong model, the rejected one from a deliberately
    weak model, on the same prompt; the contrast is the signal. Trains the sigmoid DPO
    loss of Rafailov et al. 2023 against the stage's starting checkpoint as reference."""

    beta: float = Field(0.1, gt=0)
    """Temperature of the implicit reward, beta * (log pi/pi_ref); 0.1 is Rafailov et al.'s
    default. Larger beta keeps the policy closer to the reference."""
    lr: float = Field(1e-4, gt=0, le=1)
    """Peak AdamW learning rate (linear warm-up, cosine to 10%)."""
    warmup_steps: int = Field(2, ge=0)
    adam_betas: tuple[Beta, Beta] = ADAM_BETAS
    """AdamW (beta1, beta2), each in [0, 1)."""
    weight_decay: float = Field(WEIGHT_DECAY, ge=0)
    """AdamW decoupled weight decay (per step, times lr; >= 0)."""
    batch_size: int = Field(16, ge=1)
    """Preference pairs per optimiser step."""
    epochs: float = Field(2.0, gt=0)
    """Passes over the kept pairs of one dataset size (steps = ceil(size * epochs /
    batch_size)); early stopping can end a size sooner."""
    sizes: list[PositiveInt] = Field(default=[128], min_length=1)
    """Dataset sizes to train, each from the stage's starting checkpoint on the first
    ``size`` kept pairs; the size and step with the best validation score win (OLMo 3 swept
    its DPO set size: more pairs were not monotonically better). One size: no sweep."""
    chosen: Literal["reference", "policy"] = "reference"
    """Strong model. reference: the world's reference solutions, the traces the SFT data
    imitated (OLMo 3 took the chosen from Qwen3-32B, whose traces made its SFT set);
    policy: the stage's starting checkpoint, sampled at ``temperature``."""
    rejected_checkpoint: str | None = None
    """Weak model's checkpoint directory; None: the checkpoint the SFT stage started from
    (the base model), as Qwen3-0.6B against Qwen3-32B in OLMo 3."""
    temperature: float = Field(1.0, gt=0)
    """Sampling temperature of model-written responses (the weak model's, and the
    policy's when ``chosen=policy``)."""
    max_new_tokens: int = Field(160, ge=1)
    """Cap of a sampled response, tokens (the longest micro references are ~150)."""
    domain_weights: dict[Domain, float] = Field(
        default={"math": 0.0, "code": 0.0, "ifeval": 0.7, "chat": 0.3}
    )
    """Share of the pair prompts per domain (train split, a draw of its own). Math is
    left out on the micro world: its references are the careful procedure, which the
    SFT stage deliberately mixes with a quick form so that RL has a choice to learn
    (``sft.careful_fraction``); pairs that prefer the careful form would make that
    choice before RL."""
    multiturn_fraction: float = Field(0.2, ge=0, le=1)
    """Share of pairs whose final user turn follows an earlier exchange; chosen and
    rejected then share that context and differ only in the final turn."""
    max_length_delta: int | None = Field(100, ge=0)
    """Length-bias control: drop a pair whose chosen response is more than this many
    tokens longer than its rejected one (OLMo 3: 100). None keeps every pair."""
    subset_length_delta: dict[DPOSubset, int | None] = Field(default={})
    """Per-subset caps that replace ``max_length_delta`` for the subsets listed."""
    validation_prompts: dict[Domain, PositiveInt] = Field(default={"ifeval": 100})
    """Validation slice for early stopping and the size sweep: a draw of its own from the
    train split (the held-out evaluation rows are never used to select), per domain;
    the score is the mean of the domains' greedy pass@1."""
    eval_every: int = Field(4, ge=1)
    """Validation every this many optimiser steps (and at the last)."""
    patience: int = Field(2, ge=1)
    """Stop a size after this many validations without a new best."""
    select: Literal["validation", "last"] = "validation"
    """Which weights the stage hands on. validation: the size and step with the best
    validation score, the starting checkpoint among them (OLMo 3's selection; early
    stopping with ``patience``); last: the largest size trained for all its steps, its
    final weights, whatever they validate at (no early stopping). ``last`` is how a
    study asks what RL does from a model DPO changed, where validation would keep SFT's."""
    evaluate: bool = True
    """Log held-out pass@1 per domain of the chosen checkpoint."""
    device: str | None = None
    """torch device of the DPO trainer and its reference forwards (cpu, cuda, cuda:N);
    None: the run's (``RunConfig.device_for``). Training is float32 on every device."""

    def length_cap(self, subset: str) -> int | None:
        """The length-difference cap of ``subset``."""
        for name, cap in self.subset_length_delta.items():
            if name == subset:
                return cap
        return self.max_length_delta


# ----------------------------------------------------------------------------- engine
