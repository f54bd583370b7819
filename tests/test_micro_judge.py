"""The micro judge: verdict data labelled exactly, its prompts are the judge's own, a
short real training run that is cached, and (slow) the default judge's agreement with
the exact labels on held-out rows."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from recipe_arena.config_rewards import MicroJudgeConfig, RewardsConfig
from recipe_arena.data.micro_chat import final_word, is_right
from recipe_arena.data.micro_verdicts import (
    RIGHT_REPLY,
    WRONG_REPLY,
    Verdict,
    generate_verdicts,
    paired_games,
)
from recipe_arena.rewards.judge import judge_prompt, template
from recipe_arena.rewards.judge_agreement import game_agreement, judge_agreement
from recipe_arena.rewards.micro_judge import (
    _JUDGE_DATA_SEED,
    game_chat,
    judge_cache_entry,
    judge_examples,
    judge_tokenizer,
    judge_words,
    micro_judge_checkpoint,
    rubric_chat,
    template_pieces,
    verdict_chat,
)


def test_verdicts_are_labelled_exactly_and_balanced() -> None:
    """Every label is ``is_right`` of its answer; about half are right (1,000 draws of a
    fair coin: 0.5 +- 4 standard errors, 4 * sqrt(0.25 / 1000) = 0.063); the open share
    is 0.3 +- 4 * sqrt(0.21 / 1000) = 0.058; held-out verdicts use held-out rows."""
    verdicts = generate_verdicts("train", 1000, seed=3, open_fraction=0.3)
    assert all(v.right == is_right(str(v.row.ground_truth), v.answer) for v in verdicts)
    assert abs(sum(v.right for v in verdicts) / 1000 - 0.5) < 0.063
    assert abs(sum(v.mode == "open" for v in verdicts) / 1000 - 0.3) < 0.058
    for v in verdicts:
        word, reference = final_word(v.answer) or "none", str(v.row.ground_truth).lower()
        assert v.reply.endswith(". " + (RIGHT_REPLY if v.right else WRONG_REPLY))
        if not (word.isdigit() and reference.isdigit()):
            assert v.reply.startswith(f"{word} / {reference} {'=' if v.right else 'x'}. ")
    held = generate_verdicts("heldout", 50, seed=3)
    assert all("-heldout-" in v.row.id and v.mode == "reference" for v in held)


def test_number_replies_compare_digit_by_digit() -> None:
    """Two whole numbers are written zero-padded to four digits (or to the longer one),
    then a mark per digit: 941 against 939 is ``0941 / 0939`` with marks ``==xx`` (0=0,
    9=9, 4 against 3, 1 against 9); 7 against 1005: ``x==x``; 10012 against 12, padded
    to five: ``x====``, wrong although its last four digits agree; 60 against 60:
    ``====``, right. A number with a leading zero (``007`` for 7, wrong by
    ``is_right``) is not padded, so equal marks never stand beside a wrong label. On
    500 drawn verdicts, a number reply's marks are all ``=`` exactly when it is right."""
    row = generate_verdicts("train", 2, seed=1)[0].row

    def reply(answer: str, reference: str) -> str:
        shown = row.model_copy(update={"ground_truth": reference})
        return Verdict(shown, answer, is_right(reference, answer), "reference").reply

    assert reply("The number after 938 is 941.", "939") == "0941 / 0939 ==xx. Score: 0"
    assert reply("It is 7.", "1005") == "0007 / 1005 x==x. Score: 0"
    assert reply("10012", "12") == "10012 / 00012 x====. Score: 0"
    assert reply("It is 60.", "60") == "0060 / 0060 ====. Score: 10"
    assert reply("007", "7") == "007 / 7 x. Score: 0"
    assert reply("The plural of box is boxes.", "boxes") == "boxes / boxes =. Score: 10"
    assert reply("The plural of box is boxies.", "boxes") == "boxies / boxes x. Score: 0"
    numbers = 0
    for v in generate_verdicts("train", 500, seed=6, swap_fraction=0.5):
        a, slash, b, marks = v.reply.split(". Score")[0].split(" ")
        assert slash == "/" and (set(marks) == {"="}) == v.right, v.reply
        if a.isdigit() and len(a) == len(b) == len(marks) >= 4:
            numbers += 1
    assert numbers > 50


def test_paired_verdicts_differ_only_in_the_answer() -> None:
    """``paired=True``: 400 verdicts are 200 pairs; both members show the same row (id and
    reference) through the same template, and labels are ``is_right`` against the
    reference shown. With ``swap_fraction=1`` every reference pair shows another
    reference than its question's and its first answer is right, its second wrong (as
    drawn: a wrong draw can happen to end in the reference, so at least 95% of them);
    an open pair shows the true reference, against which both answers, drawn around
    the swapped one, are wrong unless they happen to end in the true word."""
    true = {v.row.id: v.row.ground_truth for v in generate_verdicts("train", 800, seed=8)}
    verdicts = generate_verdicts(
        "train", 400, seed=8, open_fraction=0.2, swap_fraction=1.0, paired=True
    )
    assert len(verdicts) == 400
    reference_pairs = ordered = open_pairs = 0
    for first, second in zip(verdicts[::2], verdicts[1::2], strict=True):
        assert first.row == second.row and first.mode == second.mode
        for v in (first, second):
            assert v.right == is_right(str(v.row.ground_truth), v.answer)
        swapped = first.row.ground_truth != true[first.row.id]
        assert swapped == (first.mode == "reference")
        if first.mode == "reference":
            reference_pairs += 1
            ordered += first.right and not second.right
        else:
            open_pairs += 1
    assert open_pairs > 20 and ordered >= 0.95 * reference_pairs


def test_swapped_references_are_other_words_of_the_kind_and_labelled_against_them() -> None:
    """``swap_fraction=1``: every reference verdict shows a reference other than its
    question's true answer (same row id, another ground truth), the label is still
    ``is_right`` against the reference shown, and right answers still make about half
    (0.5 +- 4 * sqrt(0.25 / 400) = 0.1); ``swap_fraction=0``: every reference is true."""
    true = {v.row.id: v.row.ground_truth for v in generate_verdicts("train", 400, seed=4)}
    swapped = generate_verdicts("train", 400, seed=4, swap_fraction=1.0)
    assert all(v.row.ground_truth != true[v.row.id] for v in swapped)
    assert all(v.right == is_right(str(v.row.ground_truth), v.answer) for v in swapped)
    assert abs(sum(v.right for v in swapped) / 400 - 0.5) < 0.1
    kept = generate_verdicts("train", 400, seed=4, swap_fraction=0.0)
    assert all(v.row.ground_truth == true[v.row.id] for v in kept)


def test_verdict_conversation_is_the_judge_prompt_then_the_reply() -> None:
    """The training prompt is exactly what ``Judge`` sends for that answer (same
    template), and the assistant turn is the verdict."""
    v = generate_verdicts("train", 4, seed=1)[0]
    chat = verdict_chat(v)
    assert chat[:-1] == judge_prompt(v.row, v.answer, "reference")
    assert chat[-1] == {"role": "assistant", "content": v.reply}
    assert chat[0]["content"].startswith(template("judge_reference").split("{")[0])


def test_judge_tokenizer_keeps_the_text_and_folds_pieces_and_words() -> None:
    """The reference and open templates have 4 + 3 literal pieces between their fields,
    one of them shared (``Answer to grade:``): 6 distinct pieces, each one token. The
    rubric tournament's templates add 1 (writing a rubric from the reference: its
    opening, ``Reference answer:`` being shared and its last ``\n`` a character) + 1
    (without a reference) + 5 (a game: opening, ``Rubric:``, ``Answer A:``, ``Answer B:``,
    the question), and the rubric's start ``1. The answer ends with ``: 14. Each
    word of ``judge_words`` standing alone is one token; a word the vocabulary lacks
    (``boxies``) or a vocabulary word inside a longer one (``cat`` in ``cats2``) stays
    characters. Numbers are no words of it: ``655`` is three digit tokens. A rendered
    verdict decodes back to the same text as with the character tokenizer."""
    from recipe_arena.models.tokenizer import build_char_tokenizer

    pieces = template_pieces()
    assert len(pieces) == 14 and "\n\nAnswer to grade:\n" in pieces
    assert {"\n\nAnswer B:\n", "1. The answer ends with "} <= set(pieces)
    tok, chars = judge_tokenizer(), build_char_tokenizer()
    words = judge_words()
    assert {"cold", "boxes", "Score", "Winner", "tie"} <= set(words)
    assert not {"boxies", "655"} & set(words)
    assert len(tok) == len(chars) + 14 + len(words)

    def pieces_of(text: str) -> list[str]:
        return [tok.decode([i]) for i in tok(text)["input_ids"]]

    assert pieces_of("It is cold.") == ["It", " ", "is", " ", "cold", "."]
    assert pieces_of("boxies 655") == ["b", "o", "x", "i", "e", "s", " ", "6", "5", "5"]
    assert pieces_of("cats2") == ["c", "a", "t", "s", "2"]
    for v in generate_verdicts("heldout", 20, seed=5, open_fraction=0.5):
        chat = verdict_chat(v)
        ids = tok.apply_chat_template(chat, tokenize=True)
        ids = ids if isinstance(ids, list) else ids["input_ids"]
        char_ids = chars.apply_chat_template(chat, tokenize=True)
        char_ids = char_ids if isinstance(char_ids, list) else char_ids["input_ids"]
        assert tok.decode(ids) == chars.decode(char_ids)
        held = [p for p in pieces if p in chat[0]["content"]]
        assert len(held) == (4 if v.mode == "reference" else 3)
        assert sum(tok.decode([i]) in held for i in ids) == len(held)


def test_every_reference_word_is_one_judge_token() -> None:
    """The verdict compares the answer's last word with the reference as two tokens, so
    every reference answer word of both splits must be a word of ``judge_words`` (or a
    single character, a token already); a number is one token per digit (the reply
    compares numbers digit by digit): checked on 2,000 rows of each split."""
    from recipe_arena.data.micro import generate_split

    tok, words = judge_tokenizer(), set(judge_words())
    for split in ("train", "heldout"):
        for row in generate_split("chat", split, 2000, seed=7):
            gt = str(row.ground_truth)
            if gt.isdigit():
                assert len(tok(gt)["input_ids"]) == len(gt), gt
            else:
                assert gt in words or len(gt) == 1, gt
                assert len(tok(gt)["input_ids"]) == 1


def test_loss_on_prompt_widens_the_loss_mask_to_the_whole_conversation() -> None:
    """Reply only: the mask covers the reply's tokens (the reply tokenized alone: no
    template piece in a reply, and its words stand alone) and its end-of-turn token;
    with
    ``loss_on_prompt`` the same ids carry a mask of all ones."""
    cfg = MicroJudgeConfig(examples=8, loss_on_prompt=False, kind_repeats={}, games_per_verdict=0)
    tok = judge_tokenizer()
    verdicts = generate_verdicts(
        "train", 8, _JUDGE_DATA_SEED + cfg.seed, cfg.open_fraction, cfg.swap_fraction, cfg.paired
    )
    reply_only = judge_examples(cfg, tok)
    whole = judge_examples(cfg.model_copy(update={"loss_on_prompt": True}), tok)
    assert len(reply_only) == len(whole) == 8
    for v, (ids, mask), (ids_all, mask_all) in zip(verdicts, reply_only, whole, strict=True):
        assert ids == ids_all and sum(mask) == len(tok(v.reply)["input_ids"]) + 1
        assert mask_all == [1] * len(ids)


def test_paired_setting_decides_the_training_examples() -> None:
    """``MicroJudgeConfig.paired`` reaches the data: with it the examples are the
    ``paired_verdicts`` conversations, in order, so members 2k and 2k+1 share their
    prompt up to the answer (the template's ``Answer to grade:`` piece) and differ after
    it; without it they are the unpaired draw. An odd batch size is refused when paired
    (a pair would be split across batches) and accepted otherwise."""
    from recipe_arena.data.micro_verdicts import paired_verdicts
    from recipe_arena.supervised import assistant_mask

    tok = judge_tokenizer()
    cfg = MicroJudgeConfig(examples=20, paired=True, kind_repeats={}, games_per_verdict=0)
    seed = _JUDGE_DATA_SEED + cfg.seed
    paired = judge_examples(cfg, tok)
    expected = paired_verdicts("train", 20, seed, cfg.open_fraction, cfg.swap_fraction)
    assert paired == [assistant_mask(tok, verdict_chat(v)) for v in expected]
    answer_piece = tok.convert_tokens_to_ids("\n\nAnswer to grade:\n")
    for (a, _), (b, _) in zip(paired[::2], paired[1::2], strict=True):
        cut = a.index(answer_piece) + 1
        assert a[:cut] == b[:cut] and a != b
    unpaired = judge_examples(cfg.model_copy(update={"paired": False}), tok)
    drawn = generate_verdicts("train", 20, seed, cfg.open_fraction, cfg.swap_fraction)
    assert unpaired == [assistant_mask(tok, verdict_chat(v)) for v in drawn] != paired
    with pytest.raises(ValueError, match="even batch_size"):
        MicroJudgeConfig(batch_size=3)
    assert MicroJudgeConfig(batch_size=3, paired=False).batch_size == 3


def test_kind_repeats_add_each_kinds_units_again_in_draw_order() -> None:
    """``MicroJudgeConfig.kind_repeats``: the training draw is the verdicts drawn, then
    for r = 2, 3, ... every unit (a pair when paired, else one verdict) whose kind
    repeats at least r times, in draw order. Without repeats it is the draw itself;
    with numbers at 2 each number pair appears twice, other pairs once; with numbers at
    3 and colours at 2, the draw, then the number and colour pairs, then the number
    pairs. Unpaired, single verdicts repeat. ``judge_examples`` encodes this draw, and
    an unknown kind or a count below 1 is refused."""
    from recipe_arena.data.micro_verdicts import question_kind
    from recipe_arena.rewards.micro_judge import training_verdicts

    base_cfg = MicroJudgeConfig(examples=60, kind_repeats={}, games_per_verdict=0)
    drawn = training_verdicts(base_cfg)
    assert len(drawn) == 60
    pairs = [drawn[i : i + 2] for i in range(0, 60, 2)]
    kinds = [question_kind(p[0].row) for p in pairs]
    assert all(question_kind(p[1].row) == k for p, k in zip(pairs, kinds, strict=True))

    def again(wanted: set[str]) -> list:  # type: ignore[type-arg]
        return [v for p, k in zip(pairs, kinds, strict=True) if k in wanted for v in p]

    numbers = base_cfg.model_copy(update={"kind_repeats": {"number": 2}})
    assert 0 < len(again({"number"})) < 60
    assert training_verdicts(numbers) == drawn + again({"number"})
    more = base_cfg.model_copy(update={"kind_repeats": {"number": 3, "colour": 2}})
    assert training_verdicts(more) == drawn + again({"number", "colour"}) + again({"number"})
    single = MicroJudgeConfig(examples=30, paired=False, kind_repeats={"number": 2})
    alone = training_verdicts(single.model_copy(update={"kind_repeats": {}}))
    assert training_verdicts(single) == alone + [
        v for v in alone if question_kind(v.row) == "number"
    ]
    tok = judge_tokenizer()
    assert len(judge_examples(numbers, tok)) == 60 + len(again({"number"}))
    for bad in ({"weather": 2}, {"number": 0}):
        with pytest.raises(ValueError):
            MicroJudgeConfig(kind_repeats=bad)


def test_training_examples_hold_games_and_rubrics() -> None:
    """``games_per_verdict`` 0.5 of 40 verdicts: 20 games (10 problems in both orders),
    and a rubric to write for every other problem (5); the examples are the verdicts,
    then the games, then the rubrics, an odd last one left out of the pairs (64). A
    rubric example's prompt is the tournament's for that row (``rubric_prompt``,
    'auto' choosing the reference), its reply the rubric the games show."""
    from recipe_arena.rewards.micro_judge import training_games, training_verdicts
    from recipe_arena.rewards.rubric import rubric_prompt
    from recipe_arena.supervised import assistant_mask

    cfg = MicroJudgeConfig(examples=40, games_per_verdict=0.5, kind_repeats={})
    tok = judge_tokenizer()
    games = training_games(cfg)
    assert len(games) == 20
    chats = [verdict_chat(v) for v in training_verdicts(cfg)] + [game_chat(g) for g in games]
    chats += [rubric_chat(g) for g in games[::4]]
    assert len(chats) == 65
    assert judge_examples(cfg, tok) == [assistant_mask(tok, c) for c in chats[:64]]
    for g in games[::4]:
        assert rubric_chat(g)[:-1] == rubric_prompt(g.row, "auto")
        assert rubric_chat(g)[-1]["content"] == g.rubric


def test_length_split_keeps_the_padded_batchs_loss_and_gradient() -> None:
    """``LengthSplit`` cuts a right-padded batch into micro-batches of similar length,
    each cut to its longest member; the loss must be the padded batch's (the model's
    own mean token loss over the trained tokens) and so must every parameter's
    gradient: padding after a sequence is never attended to by it (causal attention)
    and carries no loss. Checked on a batch of 16 drawn training examples, verdicts and
    games (lengths from about 40 to 110 tokens), split into 1, 3 and 4 parts."""
    import torch

    from recipe_arena.models.factory import build_tiny_model
    from recipe_arena.rewards.micro_judge import LengthSplit
    from recipe_arena.supervised import sft_batches

    cfg = MicroJudgeConfig(examples=64, games_per_verdict=1.0)
    tok = judge_tokenizer()
    pad = int(tok.pad_token_id)
    ids, labels = next(sft_batches(judge_examples(cfg, tok), 16, pad, seed=0, group=1, unit=2))
    lengths = (ids != pad).sum(dim=1)
    assert int(lengths.max()) - int(lengths.min()) > 20
    model = build_tiny_model(cfg.model, tok, seed=0)

    def loss_and_grads(module: torch.nn.Module) -> tuple[float, list[torch.Tensor]]:
        model.zero_grad(set_to_none=True)
        loss = module(input_ids=ids, labels=labels).loss
        loss.backward()
        return float(loss.detach()), [p.grad.clone() for p in model.parameters()]

    want, want_grads = loss_and_grads(model)
    for parts in (1, 3, 4):
        got, grads = loss_and_grads(LengthSplit(model, pad, parts))
        assert got == pytest.approx(want, rel=1e-5)
        for g, w in zip(grads, want_grads, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-6)


def test_length_cuts_compute_the_fewest_positions() -> None:
    """``length_cuts`` cuts ascending lengths into runs, each computed at its longest.
    [50, 60, 61, 100, 110] whole: 5 x 110 = 550 positions; in two runs, cut after 1, 2, 3
    or 4: 50 + 4 x 110 = 490, 2 x 60 + 3 x 110 = 450, 3 x 61 + 2 x 110 = 403,
    4 x 100 + 110 = 510, so after 3. In three: (1, 3) gives 50 + 2 x 61 + 2 x 110 = 392,
    below (3, 4) 183 + 100 + 110 = 393 and every other pair (2, 3: 401; 2, 4: 430; 1, 2:
    440; 1, 4: 460). Equal lengths gain nothing by a cut, so none is made (a forward pass
    each); one part or one sequence has none."""
    from recipe_arena.rewards.micro_judge import length_cuts

    assert length_cuts([50, 60, 61, 100, 110], 2) == (3,)
    assert length_cuts([50, 60, 61, 100, 110], 3) == (1, 3)
    assert length_cuts([5, 5, 5], 2) == ()
    assert length_cuts([1, 2, 3, 100], 1) == ()
    assert length_cuts([7], 3) == ()
    assert length_cuts([], 2) == ()


def test_short_judge_training_is_cached(tmp_path: Path) -> None:
    """Ten steps train a judge checkpoint into the cache; a second call returns the same
    entry without training again; another setting is another entry."""
    cfg = MicroJudgeConfig(steps=10, batch_size=4, examples=40, warmup_steps=2)
    path = micro_judge_checkpoint(cfg, str(tmp_path))
    assert path == judge_cache_entry(cfg, str(tmp_path)) and (path / "model.safetensors").exists()
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    assert micro_judge_checkpoint(cfg, str(tmp_path)) == path
    assert (path / "model.safetensors").stat().st_mtime_ns == stamp
    assert judge_cache_entry(cfg.model_copy(update={"steps": 11}), str(tmp_path)) != path


@pytest.mark.slow
def test_default_micro_judge_agrees_with_the_labels(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The default judge on 600 held-out verdicts (reference template): at least 90% of
    right-vs-wrong pairs ordered correctly, at least 90% of verdicts right, under 5%
    unparsable (the targets of the micro judge); and on 600 held-out tournament games
    (``paired_games``, each problem's answers in both orders, its own rubrics): at least
    85% of the games between a right and a wrong answer won by the right one, under 5%
    unparsable. Three trainings of the default settings at seed 0 won 0.940, 0.874 and
    0.899 of them (docs/results.md, "The micro chat judge"): the trajectory alone moves
    the figure by several points, so 90% sat inside that spread; a judge that ignores
    the answers wins about half."""
    from recipe_arena.rewards.judge_model import build_judge

    monkeypatch.setenv("RECIPE_ARENA_CACHE", str(tmp_path))
    judge = build_judge(RewardsConfig())
    t0 = time.perf_counter()
    result = judge_agreement(judge, generate_verdicts("heldout", 600, seed=99))
    print(f"micro judge agreement: {result}, {600 / (time.perf_counter() - t0):.0f} verdicts/s")
    games = game_agreement(judge, paired_games("heldout", 600, seed=99), RewardsConfig())
    print(f"micro judge tournament games: {games}")
    judge.close()
    assert result["pairs"] >= 0.9 and result["accuracy"] >= 0.9, result
    assert result["unparsable"] < 0.05, result
    assert games["pairwise"] >= 0.85 and games["unparsable"] < 0.05, games
