"""evaluate(): chat template, greedy generation through the real torch engine, decoding,
real verifiers, and the per-domain pass@1 arithmetic.

The model is a real micro model overfitted (masked SFT, a few seconds) on four
prompt/response pairs, so its greedy answers are known; the rows then pair those
prompts with ground truths that the known answers do or do not satisfy."""

from __future__ import annotations

import json

import pytest

from recipe_arena.cache import write_json_atomic
from recipe_arena.config import EvalConfig, RunConfig
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import Message, PromptRow
from recipe_arena.engines import build_engine
from recipe_arena.eval.evaluate import (
    churn,
    evaluate,
    evaluate_rows,
    generate_responses,
    generate_samples,
)
from recipe_arena.eval.final import eval_rows, evaluate_checkpoint
from recipe_arena.models.factory import TinyModelSpec, build_micro, save_checkpoint
from recipe_arena.rewards import build_scorer
from recipe_arena.supervised import assistant_mask, sft_batches, train_steps

PAIRS = {
    "What is 2+3?": "<think>2+3 = 5</think>\\boxed{5}",
    "What is 7*6?": "<think>7*6 = 42</think>\\boxed{42}",
    "Write `inc(x)`.": "<think>x+1</think>```python\ndef inc(x):\n    return x + 1\n```",
    "Say hi quietly.": "<think>lowercase</think>the sea is big and blue. fish live in it.",
}
COIN = ("Flip a coin.", ["<think>flip</think>\\boxed{5}", "<think>flip</think>\\boxed{6}"])
"""A prompt trained on two answers equally often: sampled at temperature 1, about half
its completions end in 5 and half in 6."""
GREEDY = EvalConfig(max_new_tokens=64, temperature=0.0)


def _row(i: int, prompt: str, domain: str, truth: object) -> PromptRow:
    return PromptRow(
        id=f"r{i}",
        messages=[Message(role="user", content=prompt)],
        ground_truth=truth,
        domain=domain,
    )  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def memorised(tmp_path_factory):  # type: ignore[no-untyped-def]
    """The overfitted model, its tokenizer and a saved checkpoint of it. 200 steps at 3e-3
    leave every target token of the four pairs above probability 0.99 (seeds 0-2
    measured); at 1e-2 the loss kept jumping and the end of the code block's closing
    fence fell to 0.2 on some CPUs, so greedy decoding ran past it."""
    model, tok = build_micro(TinyModelSpec(num_layers=2), seed=0)
    convs = [
        [{"role": "user", "content": p}, {"role": "assistant", "content": r}]
        for p, r in [*PAIRS.items(), *((COIN[0], r) for r in COIN[1])]
    ]
    examples = [assistant_mask(tok, c) for c in convs]
    train_steps(
        model,
        sft_batches(examples, 4, tok.pad_token_id, 0, group=1),
        steps=200,
        lr=3e-3,
        warmup=10,
        stage="t",
        run=None,
    )
    return model, tok, save_checkpoint(model, tok, tmp_path_factory.mktemp("ck") / "memorised")


@pytest.fixture(scope="module")
def engine_and_tok(memorised):  # type: ignore[no-untyped-def]
    model, tok, _ = memorised
    engine = build_engine("torch", model, tok)
    yield engine, tok
    engine.close()


def test_greedy_responses_are_the_memorised_ones(engine_and_tok) -> None:  # type: ignore[no-untyped-def]
    engine, tok = engine_and_tok
    rows = [_row(i, p, "math", None) for i, p in enumerate(PAIRS)]
    responses, lengths = generate_responses(engine, tok, rows, GREEDY)
    assert responses == list(PAIRS.values())
    # characters = tokens, except <think> and </think> are one token each, plus <|im_end|>
    assert lengths == [len(r) - len("<think></think>") + 2 + 1 for r in PAIRS.values()]


def test_pass_at_1_per_domain_and_mean(engine_and_tok) -> None:  # type: ignore[no-untyped-def]
    """math: answers 5 and 42 against truths "5" (right) and "43" (wrong) -> 1/2.
    code: inc(x) = x + 1 against ``inc(1) == 2`` (pass) and ``inc(1) == 3`` (fail) -> 1/2.
    ifeval: the answer is lowercase English -> 1/1.  mean over domains = (0.5 + 0.5 + 1) / 3."""
    engine, tok = engine_and_tok
    p = list(PAIRS)
    rows = [
        _row(0, p[0], "math", "5"),
        _row(1, p[1], "math", "43"),
        _row(2, p[2], "code", ["assert inc(1) == 2", "assert inc(-1) == 0"]),
        _row(3, p[2], "code", ["assert inc(1) == 3"]),
        _row(
            4,
            p[3],
            "ifeval",
            {"instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]},
        ),
    ]
    with build_scorer(RewardsConfig(workers=1)) as scorer:
        out = evaluate(engine, tok, rows, scorer, GREEDY)
    assert out["eval/math/pass@1"] == 0.5
    assert out["eval/code/pass@1"] == 0.5
    assert out["eval/ifeval/pass@1"] == 1.0
    assert out["eval/mean/pass@1"] == pytest.approx(2 / 3)
    assert "eval/chat/pass@1" not in out


def test_sampled_pass_at_1_is_the_mean_over_each_rows_samples(engine_and_tok) -> None:  # type: ignore[no-untyped-def]
    """At temperature 1 with 32 samples a row, the coin prompt (truth 5) scores the share
    of its 32 completions that the math verifier accepts: the row's score is that count /
    32, near 0.5 (both answers were trained equally: outside [0.2, 0.8] with probability
    below 0.001; a few stray samples may be neither). A memorised prompt scores exactly 1 (each
    completion right) or 0 (each wrong). Seeded per row, a second evaluation draws the same
    completions and scores; greedy decoding draws one completion a row however many
    samples are asked for."""
    engine, tok = engine_and_tok
    p = list(PAIRS)
    rows = [_row(0, COIN[0], "math", "5"), _row(1, p[0], "math", "5"), _row(2, p[1], "math", "43")]
    sampled = EvalConfig(max_new_tokens=64, temperature=1.0, samples=32)
    texts, lengths = generate_samples(engine, tok, rows, sampled)
    assert [len(t) for t in texts] == [32, 32, 32] and [len(n) for n in lengths] == [32, 32, 32]
    fives = sum(t == COIN[1][0] for t in texts[0])
    assert fives + sum(t == COIN[1][1] for t in texts[0]) >= 24  # a few stray samples
    with build_scorer(RewardsConfig(workers=1)) as scorer:
        right = sum(r.score for r in scorer.score([rows[0]] * 32, texts[0]))
        ev = evaluate_rows(engine, tok, rows, scorer, sampled)
        again = evaluate_rows(engine, tok, rows, scorer, sampled)
    assert right >= fives and 0.2 <= right / 32 <= 0.8
    assert ev.scores == [right / 32, 1.0, 0.0]
    assert ev.metrics["eval/math/pass@1"] == pytest.approx((right / 32 + 1.0) / 3)
    assert again.scores == ev.scores
    greedy = EvalConfig(max_new_tokens=64, temperature=0.0, samples=32)
    texts, _ = generate_samples(engine, tok, rows, greedy)
    assert [len(t) for t in texts] == [1, 1, 1]


def test_churn_by_hand() -> None:
    """Math rows before (1, 0, 1, 0) and after (1, 1, 0, 1): rows 2 and 4 rose by 1, row
    3 fell by 1, so fixed = 2/4 and broken = 1/4, and fixed - broken = 0.25 is the change
    of pass@1 (0.5 -> 0.75). Code with partial credit, (0.5, 1.0) -> (1.0, 0.5): fixed
    0.5/2 and broken 0.5/2, pass@1 unchanged at 0.75. Misaligned inputs fail."""
    domains = ["math"] * 4 + ["code"] * 2
    out = churn(domains, [1, 0, 1, 0, 0.5, 1.0], [1, 1, 0, 1, 1.0, 0.5])
    assert out == {
        "eval/code/fixed": 0.25,
        "eval/code/broken": 0.25,
        "eval/math/fixed": 0.5,
        "eval/math/broken": 0.25,
    }
    with pytest.raises(ValueError, match="churn"):
        churn(["math"], [1.0], [1.0, 0.0])


def test_empty_rows_fail_clearly(engine_and_tok) -> None:  # type: ignore[no-untyped-def]
    engine, tok = engine_and_tok
    with pytest.raises(ValueError, match="no rows"):
        evaluate(engine, tok, [], None, EvalConfig())


def test_checkpoint_eval_takes_per_domain_counts_and_is_cached(memorised) -> None:  # type: ignore[no-untyped-def]
    """eval.max_prompts_per_domain = 1 with domain_prompts {math: 2}: of math r0 (truth 5,
    right), r1 (43, wrong), r5 (beyond the cap of 2) and code r2 (inc, passes), r3 (beyond
    the cap of 1), the evaluated rows are r0, r1, r2: math 1/2, code 1/1, mean 0.75.
    The result is stored next to the checkpoint with its checksum: a second call reads
    that file (other values written through ``write_json_atomic`` show up), the same
    values edited in by hand (no matching checksum) are computed again, and another row
    set is another key, computed afresh."""
    _, _, path = memorised
    p = list(PAIRS)
    rows = [
        _row(0, p[0], "math", "5"),
        _row(1, p[1], "math", "43"),
        _row(2, p[2], "code", ["assert inc(1) == 2"]),
        _row(3, p[2], "code", ["assert inc(1) == 3"]),
        _row(5, p[0], "math", "5"),
    ]
    cfg = RunConfig.model_validate(
        {
            "rewards": {"workers": 1},
            "eval": {
                "max_prompts_per_domain": 1,
                "domain_prompts": {"math": 2},
                "max_new_tokens": 64,
                "temperature": 0.0,
            },
        }
    )
    assert [r.id for r in eval_rows(cfg, rows)] == ["r0", "r1", "r2"]
    first = evaluate_checkpoint(cfg, path, rows)
    assert first.metrics["eval/math/pass@1"] == 0.5
    assert first.metrics["eval/code/pass@1"] == 1.0
    assert first.metrics["eval/mean/pass@1"] == pytest.approx(0.75)
    assert first.scores == [1.0, 0.0, 1.0]
    (cached,) = list(path.glob("eval-*.json"))
    edited = {"metrics": {**first.metrics, "eval/math/pass@1": 0.25}, "scores": [0.0, 0.0, 1.0]}
    write_json_atomic(cached, edited)
    again = evaluate_checkpoint(cfg, path, rows)
    assert again.metrics["eval/math/pass@1"] == 0.25 and again.scores == [0.0, 0.0, 1.0]
    cached.write_text(json.dumps(edited))
    assert evaluate_checkpoint(cfg, path, rows).scores == [1.0, 0.0, 1.0]
    assert evaluate_checkpoint(cfg, path, rows[:2]).metrics["eval/math/pass@1"] == 0.5
    assert len(list(path.glob("eval-*.json"))) == 2
