"""Think SFT: the assistant-only loss mask, hand-checked on a two-turn conversation, the
batches built from it, and a short real SFT run that lowers the loss."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from recipe_arena.config import RunConfig
from recipe_arena.models.factory import TinyModelSpec, build_micro, save_checkpoint
from recipe_arena.models.tokenizer import build_char_tokenizer
from recipe_arena.rundir import RunDir, read_metrics
from recipe_arena.stages.sft import run_sft, sft_conversations, sft_examples_per_domain
from recipe_arena.supervised import assistant_mask, sft_batches

TWO_TURNS = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "<think>a</think>b"},
    {"role": "user", "content": "1+1?"},
    {"role": "assistant", "content": "2"},
]


def test_mask_of_a_two_turn_conversation_by_hand() -> None:
    """Character tokens, ChatML. Written out token by token:

    <|im_start|> u s e r \\n h i <|im_end|> \\n                 10 tokens -> 0
    <|im_start|> a s s i s t a n t \\n                          11 tokens -> 0 (header)
    <think> a </think> b <|im_end|>                             5 tokens -> 1
    \\n                                                          1 token  -> 0
    <|im_start|> u s e r \\n 1 + 1 ? <|im_end|> \\n              12 tokens -> 0
    <|im_start|> a s s i s t a n t \\n                          11 tokens -> 0
    2 <|im_end|>                                                2 tokens -> 1
    \\n                                                          1 token  -> 0
    53 tokens, 7 of them trained.
    """
    tok = build_char_tokenizer()
    ids, mask = assistant_mask(tok, TWO_TURNS)
    expected = "0" * 10 + "0" * 11 + "1" * 5 + "0" + "0" * 12 + "0" * 11 + "1" * 2 + "0"
    assert "".join(map(str, mask)) == expected
    assert len(ids) == 53
    trained = tok.decode(
        [t for t, m in zip(ids, mask, strict=True) if m], skip_special_tokens=False
    )
    assert trained == "<think>a</think>b<|im_end|>2<|im_end|>"


def test_system_prompt_is_never_trained() -> None:
    """<|im_start|> s y s t e m \\n S <|im_end|> \\n is 11 tokens of zeros in front of the
    one-turn mask: 10 user zeros, 11 header zeros, 'ok' + <|im_end|> = 3 ones, one zero."""
    tok = build_char_tokenizer()
    msgs = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok"},
    ]
    _, mask = assistant_mask(tok, msgs)
    assert "".join(map(str, mask)) == "0" * 11 + "0" * 10 + "0" * 11 + "111" + "0"


def test_batches_pad_and_set_labels_to_ignore_outside_the_mask() -> None:
    """Two examples of lengths 3 and 2, pad id 0: labels keep the token where mask is 1,
    -100 elsewhere and on the padded tail; a batch is as wide as its longest member."""
    examples = [([5, 6, 7], [0, 1, 1]), ([8, 9], [1, 0])]
    expected = {3: {(5, 6, 7): [-100, 6, 7], (8, 9, 0): [8, -100, -100]}, 2: {(8, 9): [8, -100]}}
    seen: set[tuple[int, ...]] = set()
    batches = sft_batches(examples, batch_size=2, pad_id=0, seed=0, group=1)
    for _ in range(20):
        input_ids_BT, labels_BT = next(batches)
        width = input_ids_BT.shape[1]
        for ids, labels in zip(input_ids_BT.tolist(), labels_BT.tolist(), strict=True):
            seen.add(tuple(ids))
            assert expected[width][tuple(ids)] == labels
    assert seen >= {(5, 6, 7), (8, 9, 0)}


def test_grouped_batches_split_each_draw_by_length() -> None:
    """Eight examples of lengths 1-8 (all mask 1), batches of 2 drawn in groups of 4: the
    4 batches of a group are 8 draws sorted by length and cut in order, so sorted by
    their shortest member no batch of a group is longer than the next one's shortest
    (real lengths: the token count where labels are not -100). group=0 is refused."""
    examples = [(list(range(1, n + 1)), [1] * n) for n in range(1, 9)]
    batches = sft_batches(examples, batch_size=2, pad_id=0, seed=3, group=4)
    for _ in range(5):
        group = [next(batches) for _ in range(4)]
        lengths = sorted(sorted(int(n) for n in (labels != -100).sum(1)) for _, labels in group)
        for a, b in zip(lengths, lengths[1:], strict=False):
            assert a[-1] <= b[0], lengths
    with pytest.raises(ValueError, match="group"):
        next(sft_batches(examples, batch_size=2, pad_id=0, seed=0, group=0))


def test_units_of_examples_stay_together_in_a_batch() -> None:
    """``unit=2`` (the micro judge's verdict pairs): six one-token examples 10..15 form
    the units (10, 11), (12, 13), (14, 15); in batches of 4, grouped by 2, rows 0-1 and
    2-3 of every batch are one unit each, in order. A batch size or example count that
    is not a multiple of the unit is refused."""
    examples = [([t], [1]) for t in range(10, 16)]
    batches = sft_batches(examples, batch_size=4, pad_id=0, seed=1, group=2, unit=2)
    seen = set()
    for _ in range(20):
        ids = [row[0] for row in next(batches)[0].tolist()]
        for first, second in (ids[:2], ids[2:]):
            assert first in (10, 12, 14) and second == first + 1, ids
            seen.add(first)
    assert seen == {10, 12, 14}
    with pytest.raises(ValueError, match="unit"):
        next(sft_batches(examples, batch_size=3, pad_id=0, seed=0, unit=2))
    with pytest.raises(ValueError, match="unit"):
        next(sft_batches(examples[:5], batch_size=4, pad_id=0, seed=0, unit=2))


def test_conversations_end_with_an_assistant_think_turn_and_stay_off_heldout() -> None:
    cfg = RunConfig.model_validate({"sft": {"examples_per_domain": 50, "two_turn_fraction": 0.5}})
    convs = sft_conversations(cfg)
    assert len(convs) == 200
    # a 5-step run of 8 draws 40 conversations: 10 per domain, raised to the floor of 20
    short = RunConfig.model_validate({"sft": {"steps": 5, "batch_size": 8}})
    assert sft_examples_per_domain(short) == 20
    assert sft_examples_per_domain(RunConfig()) == 1200  # 300 * 16 / 4
    assert all(
        c[-1]["role"] == "assistant" and c[-1]["content"].startswith("<think>") for c in convs
    )
    roles = [tuple(m["role"] for m in c) for c in convs]
    assert any(r.count("assistant") == 2 for r in roles)
    assert any(r[0] == "system" for r in roles)
    from recipe_arena.data.micro import generate_split

    heldout = {
        r.prompt_text
        for d in ("math", "code", "ifeval", "chat")
        for r in generate_split(d, "heldout", 100, cfg.world.data_seed)
    }  # type: ignore[arg-type]
    assert not heldout & {m["content"] for c in convs for m in c if m["role"] == "user"}


def test_run_sft_lowers_loss_and_writes_a_checkpoint(tmp_path: Path) -> None:
    """From a random model, 40 steps at lr 3e-3 on masked targets: the mean loss of the
    last 5 steps is below the first step's (ln(104) = 4.64 at random init)."""
    cfg = RunConfig.model_validate(
        {
            "sft": {
                "steps": 40,
                "batch_size": 8,
                "lr": 3e-3,
                "warmup_steps": 2,
                "examples_per_domain": 40,
                "evaluate": False,
            },
            "out_dir": str(tmp_path),
        }
    )
    model, tok = build_micro(cfg.world.model)
    init = save_checkpoint(model, tok, tmp_path / "init")
    run = RunDir(cfg, tmp_path / "run")
    out = run_sft(cfg, run, init)
    assert (out / "model.safetensors").exists() and (out / "config.json").exists()
    losses = [m["loss/train"] for m in read_metrics(run.path) if m["stage"] == "sft"]
    assert losses[0] > 4.0
    assert losses[-1] < losses[0] - 1.0


def test_masks_of_many_conversations_are_each_ones_mask() -> None:
    """``assistant_masks`` tokenizes the renderings of many conversations at once, each
    distinct one once: the two-turn conversation above (twice), a conversation with no
    assistant turn (``<|im_start|> u s e r \\n h i <|im_end|> \\n``: 10 tokens, none
    trained) and the system-prompt one get the masks written out by hand above."""
    from recipe_arena.supervised import assistant_masks

    tok = build_char_tokenizer()
    system = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok"},
    ]
    two = "0" * 10 + "0" * 11 + "1" * 5 + "0" + "0" * 12 + "0" * 11 + "1" * 2 + "0"
    got = assistant_masks(tok, [TWO_TURNS, [{"role": "user", "content": "hi"}], system, TWO_TURNS])
    assert ["".join(map(str, mask)) for _, mask in got] == [
        two,
        "0" * 10,
        "0" * 11 + "0" * 10 + "0" * 11 + "111" + "0",
        two,
    ]
    assert got[0] == got[3] and len(got[0][0]) == 53
    assert tok.decode(got[1][0], skip_special_tokens=False) == "<|im_start|>user\nhi<|im_end|>\n"
    assert assistant_masks(tok, []) == []


def test_assistant_first_conversation_is_refused() -> None:
    with pytest.raises(ValueError, match="starts with an assistant turn"):
        assistant_mask(build_char_tokenizer(), [{"role": "assistant", "content": "x"}])


def test_careful_fraction_sets_the_share_of_step_by_step_math_targets() -> None:
    """Per effort level, the share of math targets that keep their think block follows
    ``sft.careful_fraction``: with low 1.0, medium 0.5 and high 0.0, every low-effort
    target is careful, no high-effort one is, and medium is 0.5 within four binomial
    standard errors (sqrt(0.25 / n)); other domains keep every think block."""
    cfg = RunConfig.model_validate(
        {
            "sft": {
                "examples_per_domain": 400,
                "two_turn_fraction": 0.0,
                "careful_fraction": {"math": {"low": 1.0, "medium": 0.5, "high": 0.0}},
            }
        }
    )
    from recipe_arena.data.micro_math import EFFORT_BY_REPEATS

    careful: dict[str, list[bool]] = {"low": [], "medium": [], "high": []}
    for conv in sft_conversations(cfg):
        user, answer = conv[-2]["content"], conv[-1]["content"]
        if user.startswith("What is the last digit of"):
            k = int(user.rstrip("?").split("*")[-1])
            careful[EFFORT_BY_REPEATS[k]].append(not answer.startswith("<think></think>"))
        else:
            assert not answer.startswith("<think></think>"), conv
    assert careful["low"] and all(careful["low"])
    assert careful["high"] and not any(careful["high"])
    medium = careful["medium"]
    assert abs(sum(medium) / len(medium) - 0.5) < 4 * (0.25 / len(medium)) ** 0.5


def test_optimiser_settings_reach_the_sft_step(tmp_path: Path) -> None:
    """sft.adam_betas and sft.weight_decay are the AdamW settings of the SFT stage: the
    defaults, (0.9, 0.95) and 0.01, train bitwise the same checkpoint as the same values
    given explicitly; betas (0.5, 0.6) (other moments from the second step on) or a weight
    decay of 0.5 (every weight times 1 - lr * 0.5 per step) give another after 3 steps."""
    from safetensors.torch import load_file

    model, tok = build_micro(TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1))
    init = save_checkpoint(model, tok, tmp_path / "init")

    def trained(name: str, **sft: object) -> dict[str, torch.Tensor]:
        settings = {"steps": 3, "batch_size": 4, "examples_per_domain": 20, "evaluate": False}
        cfg = RunConfig.model_validate({"sft": {**settings, **sft}, "out_dir": str(tmp_path)})
        out = run_sft(cfg, RunDir(cfg, tmp_path / name), init)
        return load_file(str(out / "model.safetensors"))

    default = trained("default")
    explicit = trained("explicit", adam_betas=(0.9, 0.95), weight_decay=0.01)
    assert all(torch.equal(default[k], explicit[k]) for k in default)
    for name, changed in (("betas", {"adam_betas": (0.5, 0.6)}), ("wd", {"weight_decay": 0.5})):
        weights = trained(name, **changed)
        assert any(not torch.equal(default[k], weights[k]) for k in default)
