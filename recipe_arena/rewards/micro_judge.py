"""The micro judge: a micro model trained to grade chat answers, cached per machine.

The chat generator labels any answer exactly (``data.micro_chat.is_right``), so the
judge learns from verdicts whose truth is known (``data.micro_verdicts``): each is the
judge's own prompt (the reference or open-ended template, as ``Judge`` renders it) and
the reply (``cold / cold =. Score: 10``), with the loss on the reply only (the SFT mask)
or, with ``loss_on_prompt``, on the whole conversation.
It is then an ordinary judge model behind ``rewards.judge``: a checkpoint that the
torch engine runs greedily, whose replies ``parse_score`` reads.

Its tokenizer is the micro world's character tokenizer plus one token for each literal
piece of the judge templates and one for each whole word of the chat world
(``judge_tokenizer``), the way a BPE vocabulary learned on this text would merge what it
sees all the time: the prompt text is unchanged, but the ~300 characters of fixed
instructions become six tokens and ``cities`` one token, so a judge prompt is ~60
tokens instead of ~370. Copying the answer's last word and the reference into the
reply is then a copy of one token each, and its mark compares two tokens, where a
judge reading characters has to find, copy and compare words of varying length. A word
the vocabulary lacks (a misspelt plural) is read as characters, so it never equals a
reference, as ``micro_chat.is_right`` wants. Numbers are the exception: they are read
digit by digit, and the reply compares them one digit at a time (``Verdict.reply``), since
a thousand tokens of their own would each be rarely seen.

It trains on verdict pairs (``MicroJudgeConfig.paired``: a right and a wrong answer to
one problem shown the same way, in one batch), so that only the answer tells the two
apart, and sees number questions twice as often as the draw has them
(``MicroJudgeConfig.kind_repeats``).

The checkpoint is cached under a hash of its settings, ``_FORMAT`` and CODE_VERSION in
$RECIPE_ARENA_CACHE (default ~/.cache/recipe_arena), like the SmolLM2 conversion; its
training and this lookup live in the rewards package, so ``rewards.judge_model`` loads it
by a plain import. ``rewards.judge_agreement`` measures it on held-out verdicts and games.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import string
import sys
import time
from collections.abc import Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, TypeVar

import torch
from tokenizers import AddedToken
from transformers import PreTrainedTokenizerFast

from recipe_arena.cache import build_cached, cache_key, cache_root, entry_ready
from recipe_arena.config_rewards import MicroJudgeConfig
from recipe_arena.data.micro_chat import vocabulary
from recipe_arena.data.micro_verdicts import (
    RUBRIC_STEM,
    Game,
    Verdict,
    generate_verdicts,
    paired_games,
    question_kind,
)
from recipe_arena.models.factory import build_tiny_model
from recipe_arena.models.tokenizer import build_char_tokenizer
from recipe_arena.supervised import assistant_masks, sft_batches, train_steps

T = TypeVar("T")

_JUDGE_DATA_SEED = 4_000_037
"""Seed of the judge's verdict draw (train split only, so held-out chat rows stay unseen)."""


_FORMAT = 8
"""Part of the cache key: bump it when the verdict data, reply, tokenizer or batching changes."""


def judge_cache_entry(cfg: MicroJudgeConfig, cache_dir: str | None = None) -> Path:
    key = cache_key(
        {"stage": "micro_judge", "format": _FORMAT, "judge": cfg.model_dump(mode="json")}
    )
    return cache_root(cache_dir) / "judge" / key


JUDGE_TEMPLATES = (
    "judge_reference",
    "judge_open",
    "rubric_write_reference",
    "rubric_write",
    "rubric_compare",
)
"""The templates the micro judge reads: verdicts (``rewards.judge``) and the rubric
tournament's rubric and games (``rewards.rubric``)."""


def template_pieces() -> list[str]:
    """The literal text of ``JUDGE_TEMPLATES`` between their ``{fields}`` (less single
    characters, tokens already), and the rubric's fixed start
    (``micro_verdicts.RUBRIC_STEM``), longest first."""
    from recipe_arena.rewards.judge import template

    pieces = {
        literal
        for name in JUDGE_TEMPLATES
        for literal, _, _, _ in string.Formatter().parse(template(name))
        if literal and len(literal) > 1
    }
    return sorted(pieces | {RUBRIC_STEM}, key=lambda p: (-len(p), p))


_JUDGE_WORDS = ("It", "or", "none", "Score", "Winner", "tie", "assistant", "user")
"""Words of the verdicts and the chat markup that the chat vocabulary lacks."""


def judge_words() -> list[str]:
    """The whole words the judge tokenizer reads as one token each: the chat world's
    vocabulary and ``_JUDGE_WORDS``, less single characters (tokens already) and
    numbers (read digit by digit, see the module docstring)."""
    return sorted({w for w in (*vocabulary(), *_JUDGE_WORDS) if len(w) > 1 and not w.isdigit()})


def judge_tokenizer() -> PreTrainedTokenizerFast:
    """The character tokenizer plus one (non-special) token per template piece and one
    per whole word of ``judge_words`` (see the module docstring)."""
    tok = build_char_tokenizer()
    tok.add_tokens([AddedToken(p, normalized=False, special=False) for p in template_pieces()])
    tok.add_tokens(
        [AddedToken(w, normalized=False, special=False, single_word=True) for w in judge_words()]
    )
    return tok


def verdict_chat(v: Verdict) -> list[dict[str, str]]:
    """The verdict as a conversation: the judge prompt, then the judge's reply."""
    from recipe_arena.rewards.judge import judge_prompt

    return [*judge_prompt(v.row, v.answer, v.mode), {"role": "assistant", "content": v.reply}]


def rubric_chat(g: Game) -> list[dict[str, str]]:
    """Writing the rubric of ``g``'s problem as a conversation: the tournament's rubric
    prompt with the reference shown, then the rubric (``micro_verdicts.rubric_reply``)."""
    from recipe_arena.rewards.rubric import rubric_prompt

    return [*rubric_prompt(g.row, "reference"), {"role": "assistant", "content": g.rubric}]


def game_chat(g: Game) -> list[dict[str, str]]:
    """The game as a conversation: the tournament's game prompt under the rubric the
    judge writes, then the judge's reply (``Game.reply``)."""
    from recipe_arena.rewards.rubric import game_prompt
    from recipe_arena.rewards.text import answer_text

    prompt = game_prompt(g.row, g.rubric, answer_text(g.first), answer_text(g.second))
    return [*prompt, {"role": "assistant", "content": g.reply}]


def judge_examples(
    cfg: MicroJudgeConfig, tok: PreTrainedTokenizerFast
) -> list[tuple[list[int], list[int]]]:
    """(input_ids, loss mask) of the training conversations (``judge_conversations``):
    the mask covers the reply only, or the whole conversation when
    ``cfg.loss_on_prompt``; verdicts longer than the model's context are dropped (with
    ``cfg.paired``, their pair too, so pairs stay consecutive)."""
    examples = assistant_masks(tok, judge_conversations(cfg))
    if cfg.loss_on_prompt:
        examples = [(ids, [1] * len(ids)) for ids, _ in examples]
    limit = cfg.model.max_position_embeddings
    return [
        e
        for members in _units(examples, _unit(cfg))
        if all(len(ids) <= limit for ids, _ in members)
        for e in members
    ]


def judge_conversations(cfg: MicroJudgeConfig) -> list[list[dict[str, str]]]:
    """The judge's training conversations: the verdicts (``training_verdicts``), the
    games (``training_games``), then one rubric for each two problems' games."""
    chats = [verdict_chat(v) for v in training_verdicts(cfg)]
    games = training_games(cfg)
    chats += [game_chat(g) for g in games]
    chats += [rubric_chat(g) for g in games[::4]]  # one per two problems (pairs of games)
    return chats


def training_verdicts(cfg: MicroJudgeConfig) -> list[Verdict]:
    """The judge's training draw: ``cfg.examples`` train-split verdicts, then, for each
    ``r`` from 2 to the largest of ``cfg.kind_repeats``, once more every unit (a pair with
    ``cfg.paired``, else one verdict) whose kind repeats at least ``r`` times, in draw
    order; so a kind that repeats twice appears twice in all."""
    verdicts = generate_verdicts(
        "train",
        cfg.examples,
        _JUDGE_DATA_SEED + cfg.seed,
        cfg.open_fraction,
        cfg.swap_fraction,
        paired=cfg.paired,
    )
    return verdicts + _kind_repeats(verdicts, _unit(cfg), cfg)


def training_games(cfg: MicroJudgeConfig) -> list[Game]:
    """The judge's tournament draw: ``round(cfg.examples * cfg.games_per_verdict)``
    train-split games
    (``micro_verdicts.paired_games``: each problem's two answers in both orders), with
    the references swapped as for verdicts, then each problem's pair of games again
    for each further repeat of its kind (``cfg.kind_repeats``), as ``training_verdicts``."""
    n = round(cfg.examples * cfg.games_per_verdict)
    games = paired_games("train", n, _JUDGE_DATA_SEED + 1 + cfg.seed, cfg.swap_fraction)
    return games + _kind_repeats(games, 2, cfg)


_Drawn = TypeVar("_Drawn", Verdict, Game)


def _kind_repeats(items: list[_Drawn], unit: int, cfg: MicroJudgeConfig) -> list[_Drawn]:
    """The further copies of ``items`` (verdicts or games), taken ``unit`` at a time
    (the units drawn together): for r = 2, 3, ... each unit whose question kind repeats
    at least r times (``cfg.kind_repeats``), in draw order."""
    units = _units(items, unit)
    repeats = [cfg.kind_repeats.get(question_kind(u[0].row), 1) for u in units]
    return [
        item
        for r in range(2, max(repeats, default=1) + 1)
        for u, times in zip(units, repeats, strict=True)
        if times >= r
        for item in u
    ]


def _unit(cfg: MicroJudgeConfig) -> int:
    """Verdicts that are drawn and batched together: 2 when paired, else 1."""
    return 2 if cfg.paired else 1


def _units(items: list[T], unit: int) -> list[list[T]]:
    """``items`` cut into consecutive runs of ``unit`` (a short last run left out)."""
    return [items[i : i + unit] for i in range(0, len(items) - unit + 1, unit)]


def _train(cfg: MicroJudgeConfig, out: Path) -> None:
    t0, cpu0 = time.time(), time.process_time()
    tok = judge_tokenizer()
    model = build_tiny_model(cfg.model, tok, seed=cfg.seed)
    examples = judge_examples(cfg, tok)
    torch.manual_seed(cfg.seed)
    losses = train_steps(
        LengthSplit(model, int(tok.pad_token_id)),
        # group=1: batches not sorted by length, so each mixes the kinds of verdict
        sft_batches(
            examples, cfg.batch_size, int(tok.pad_token_id), cfg.seed, group=1, unit=_unit(cfg)
        ),
        steps=cfg.steps,
        lr=cfg.lr,
        warmup=min(cfg.warmup_steps, cfg.steps),
        stage="micro_judge",
        run=None,
    )
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    meta = {
        "steps": cfg.steps,
        "examples": len(examples),
        "final_loss": sum(losses[-20:]) / len(losses[-20:]) if losses else None,
        "seconds": time.time() - t0,
        "cpu_seconds": time.process_time() - cpu0,
    }
    (out / "judge_meta.json").write_text(json.dumps(meta, indent=2))


LENGTH_PARTS = 2
"""Micro-batches a judge training batch is cut into by ``LengthSplit``, 1 or more; 2 leaves
out most of the padding, and each part costs a forward pass."""


class LengthSplit(torch.nn.Module):
    """The judge model as ``train_steps`` trains it: each right-padded batch is sorted
    by length and cut into ``parts`` micro-batches (``length_cuts``: where the fewest
    positions are computed), each cut to its own longest member, and the output layer
    runs only where a token is trained; the loss is the sum of their token losses over
    the batch's count of trained tokens. That is the loss of the padded batch, and so its
    gradient (up to the order of float sums): a token attends only to those before it,
    so the padding after a sequence changes nothing of it, and neither padding nor an
    untrained position carries loss. Why: the batch is padded to its longest member, a
    game (~100 tokens) beside verdicts of ~60, and only the reply (~22 of ~64 tokens) is
    trained; the micro-batches leave out most of that padding. The batch itself stays as
    drawn, its kinds mixed (``sft_batches`` with ``group=1``)."""

    def __init__(self, model: torch.nn.Module, pad_id: int, parts: int = LENGTH_PARTS) -> None:
        super().__init__()
        self.model, self.pad_id, self.parts = model, pad_id, parts

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> Any:
        real = input_ids != self.pad_id
        positions = torch.arange(1, input_ids.shape[1] + 1)
        lengths = (real * positions).amax(dim=1)  # last real token's position, 1-based
        order = torch.argsort(lengths, stable=True)
        cuts = length_cuts([int(n) for n in lengths[order]], self.parts)
        model: Any = self.model
        decoder, head = model.get_decoder(), model.get_output_embeddings()
        total = torch.zeros(())
        count = (labels[:, 1:] != -100).sum()
        for lo, hi in zip((0, *cuts), (*cuts, len(order)), strict=True):
            chunk = order[lo:hi]
            width = int(lengths[chunk].max())
            hidden = decoder(input_ids=input_ids[chunk, :width]).last_hidden_state[:, :-1]
            target = labels[chunk, 1:width]
            trained = target != -100
            logits = head(hidden[trained])
            total = total + torch.nn.functional.cross_entropy(
                logits.float(), target[trained], reduction="sum"
            )
        return _Loss(total / count.clamp(min=1))


def length_cuts(lengths: Sequence[int], parts: int) -> tuple[int, ...]:
    """Where to cut ``lengths`` (ascending, one per sequence) into at most ``parts``
    non-empty runs so that the positions computed, each run's size times its last
    (longest) length, are fewest: the run ends, less the last, in ascending order.
    Exhaustive over the cut positions by dynamic programming (a batch is tens long)."""
    n = len(lengths)
    if n == 0:
        return ()
    # best[k][i]: (fewest positions, cuts) for the first i lengths in k runs
    none: tuple[int, ...] = ()
    best = [[(0.0, none)] + [(float("inf"), none)] * n]
    for _ in range(min(parts, n)):
        prev = best[-1]
        row = [(float("inf"), none)] * (n + 1)
        for i in range(1, n + 1):
            row[i] = min(
                (prev[j][0] + (i - j) * lengths[i - 1], (*prev[j][1], j)) for j in range(i)
            )
        best.append(row)
    cost, cuts = min(row[n] for row in best[1:])
    return tuple(c for c in cuts if c > 0)


class _Loss:
    """What ``train_steps`` reads of a model's output: the loss."""

    def __init__(self, loss: torch.Tensor) -> None:
        self.loss = loss


def micro_judge_checkpoint(cfg: MicroJudgeConfig, cache_dir: str | None = None) -> Path:
    """The cached judge checkpoint for ``cfg``, trained on first use (with a note on
    stderr, since it takes a while). When this process started its training in the
    background (``train_in_background``), waits for that instead; another process
    training it meanwhile is waited for by ``build_cached``'s lock."""
    entry = judge_cache_entry(cfg, cache_dir)
    proc = _BACKGROUND.pop(entry, None)
    if proc is not None:
        _wait(proc)
    if not entry_ready(entry):
        print(f"micro judge: training {cfg.steps} steps into {entry}", file=sys.stderr, flush=True)
    return build_cached(entry, lambda tmp: _train(cfg, tmp))


BACKGROUND_MIN_STEPS = 200
"""Judges of fewer optimiser steps than this are trained where first needed rather than
in a background process: a second process spends seconds of CPU importing torch and the
project, more than such a judge takes (``budget=smoke``'s has 20 steps)."""

BACKGROUND_NICE = 19
"""Niceness (0-19, added to the parent's) of the background judge training where Linux's
SCHED_IDLE policy is missing (``_run_in_idle_time``)."""


_BACKGROUND: dict[Path, BaseProcess] = {}
"""Judge trainings this process started in a child process, by cache entry."""


def train_in_background(cfg: MicroJudgeConfig, cache_dir: str | None = None) -> bool:
    """Start training the judge for ``cfg`` in a child process, on one thread and in the
    cores' idle time (``_run_in_idle_time``), unless it is cached, already started here,
    or small (``BACKGROUND_MIN_STEPS``). ``hurry_background`` gives it a normal share of
    the cores once the base model is built; ``micro_judge_checkpoint`` waits for it when
    the judge is first needed, ``finish_background`` at the end of a run. Returns
    whether it started.

    Why: a fresh machine trains the base model and the judge, minutes each, and the
    judge is first needed only to score chat, after SFT; the judge trains while the run
    goes on instead of before it or beside the base model at the base model's expense."""
    entry = judge_cache_entry(cfg, cache_dir)
    if entry_ready(entry) or entry in _BACKGROUND or cfg.steps < BACKGROUND_MIN_STEPS:
        return False
    proc = multiprocessing.get_context("spawn").Process(
        target=_background_child,
        args=(cfg.model_dump_json(), cache_dir),
        daemon=True,
        name="micro-judge",
    )
    proc.start()
    _run_in_idle_time(proc)
    _BACKGROUND[entry] = proc
    return True


def training_in_background(cfg: MicroJudgeConfig, cache_dir: str | None = None) -> bool:
    """Whether this process's background training of the judge for ``cfg`` still runs."""
    proc = _BACKGROUND.get(judge_cache_entry(cfg, cache_dir))
    return proc is not None and proc.is_alive()


def hurry_background() -> None:
    """From now on the background judge trainings take a normal share of the cores
    (SCHED_OTHER, niceness 0) rather than the idle time: called once the base model is
    built (a judge that is waited for gets the same, ``_wait``). Where the system refuses
    (no SCHED_IDLE, or an unprivileged user whose RLIMIT_NICE forbids it), they keep their
    low priority. They keep their one thread."""
    for proc in _BACKGROUND.values():
        _hurry(proc)


def _hurry(proc: BaseProcess) -> None:
    if proc.is_alive() and proc.pid is not None and hasattr(os, "SCHED_IDLE"):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(proc.pid, os.SCHED_OTHER, os.sched_param(0))


def finish_background(ok: bool) -> None:
    """End of a run: wait for the judges still training in the background (their work is
    kept in the cache), or, when the run failed or was interrupted (``ok`` False), stop
    them."""
    while _BACKGROUND:
        _, proc = _BACKGROUND.popitem()
        if ok:
            _wait(proc)
        else:
            proc.terminate()
            proc.join()


def _wait(proc: BaseProcess) -> None:
    """Wait for a background judge training at a normal priority (``_hurry``); a failed
    one is noted, and the judge is then trained where it is needed."""
    _hurry(proc)
    if proc.is_alive():
        print("micro judge: waiting for its training in the background", file=sys.stderr)
    proc.join()
    if proc.exitcode != 0:
        print(
            f"micro judge: its training in the background exited with {proc.exitcode}; "
            "it is trained again when first used",
            file=sys.stderr,
        )


def _background_child(judge_json: str, cache_dir: str | None) -> None:
    """The child process of ``train_in_background``: one thread, the cores' idle time
    until hurried, progress as lines on stderr (never a redrawn bar, which would fight
    the run's own)."""
    if not hasattr(os, "SCHED_IDLE"):
        os.nice(BACKGROUND_NICE)  # else the parent has set its policy (_run_in_idle_time)
    torch.set_num_threads(1)
    sys.stderr = _LineStream(sys.stderr)
    micro_judge_checkpoint(MicroJudgeConfig.model_validate_json(judge_json), cache_dir)


def _run_in_idle_time(proc: BaseProcess) -> None:
    """Lower the just-started child ``proc`` to Linux's SCHED_IDLE policy: it runs only
    on a core that no other thread wants, and a waking thread of the run takes the core
    back at once; the threads it starts later inherit the policy. Set here rather than
    by the child so that it holds before any ``hurry_background``. Where SCHED_IDLE is
    missing the child lowers its niceness to ``BACKGROUND_NICE``. Why not niceness alone:
    the base model's OpenMP threads wait for one another at every parallel region, and a
    niced judge still delays each waking one."""
    if hasattr(os, "SCHED_IDLE") and proc.pid is not None:
        os.sched_setscheduler(proc.pid, os.SCHED_IDLE, os.sched_param(0))


class _LineStream:
    """A text stream that says it is not a terminal, so progress bars print lines."""

    def __init__(self, stream: object) -> None:
        self._stream = stream

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)
