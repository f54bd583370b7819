"""Scorer end to end on the micro world, `verify_jsonl`, and the verifier audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.micro import generate_examples, generate_split
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import audit, build_scorer
from recipe_arena.rewards.audit import HACKS, apply_quarantine, cached_audit, run_audit
from recipe_arena.rewards.verify import verify_jsonl


@pytest.fixture(scope="module")
def scorer():
    with build_scorer(RewardsConfig(code_wall_s=4.0, workers=2)) as s:
        yield s


def test_micro_reference_responses_score_one(scorer) -> None:
    """The micro world's own reference responses are correct by construction: every
    math, code and ifeval one scores 1; with the answer swapped to another row's
    (math: a different number) they score 0."""
    for domain in ("math", "code", "ifeval"):
        ex = generate_examples(domain, "train", 6, seed=3)
        res = scorer.score([e.row for e in ex], [e.response for e in ex])
        assert [r.score for r in res] == [1.0] * 6, (domain, [r.reason for r in res])
    math = generate_examples("math", "train", 6, seed=3)
    wrong = [e for e in math if e.row.ground_truth != math[0].row.ground_truth][:2]
    res = scorer.score([e.row for e in wrong], [math[0].response] * len(wrong))
    assert [r.score for r in res] == [0.0] * len(wrong)


def test_score_group_equals_score_outside_the_tournament(scorer) -> None:
    """For a math row, score_group(row, G responses) is score([row]*G, responses)."""
    row = generate_split("math", "train", 1, seed=0)[0]
    resp = [f"\\boxed{{{row.ground_truth}}}", "\\boxed{-999}"]
    assert scorer.score_group(row, resp) == scorer.score([row, row], resp)


def test_mismatched_lengths_fail_loudly(scorer) -> None:
    row = generate_split("math", "train", 1, seed=0)[0]
    with pytest.raises(ValueError, match="1 rows but 2 responses"):
        scorer.score([row], ["a", "b"])


def test_verify_jsonl_scores_rows_and_reports_bad_ones(tmp_path: Path) -> None:
    """Five lines: a right math answer (1), a wrong one (0), a passing code row (1), a row
    with an unknown domain and a line that is not JSON (both score null with a reason).
    Summary: 5 rows, 2 errors, score/math = (1 + 0) / 2 = 0.5, score/code = 1."""
    lines = [
        json.dumps(
            {"id": "a", "domain": "math", "response": "\\boxed{3/4}", "ground_truth": "0.75"}
        ),
        json.dumps({"id": "b", "domain": "math", "response": "\\boxed{1}", "ground_truth": "2"}),
        json.dumps(
            {
                "domain": "code",
                "response": "```python\ndef f(x):\n    return x + 1\n```",
                "ground_truth": ["assert f(1) == 2"],
            }
        ),
        json.dumps({"domain": "poetry", "response": "x"}),
        "{not json",
    ]
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("\n".join(lines) + "\n")
    summary = verify_jsonl(src, dst, RewardsConfig(workers=1))
    assert summary["rows"] == 5 and summary["errors"] == 2
    assert summary["score/math"] == 0.5 and summary["score/code"] == 1.0
    out = [json.loads(x) for x in dst.read_text().splitlines()]
    assert [o["score"] for o in out] == [1.0, 0.0, 1.0, None, None]
    assert out[0]["id"] == "a" and "reason" in out[0]
    assert "domain 'poetry' not one of" in out[3]["reason"] and "not valid JSON" in out[4]["reason"]


def test_audit_reports_per_task_and_hack_and_quarantines(scorer) -> None:
    """Two ifeval tasks with the same instruction (no commas): one prompt has no comma,
    so echoing it satisfies the verifier (accepted); the other contains a comma, so the
    echo fails. The over-long "a a a ..." has no comma either: accepted by both, so
    both are quarantined. With only the echo and empty hacks, t1 alone is. Math hacks
    are all rejected."""
    gt = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    echo_ok = PromptRow(
        id="t1",
        messages=[{"role": "user", "content": "Write about snow without commas."}],
        ground_truth=gt,
        domain="ifeval",
    )
    echo_bad = PromptRow(
        id="t2",
        messages=[{"role": "user", "content": "Write about snow, rain and wind."}],
        ground_truth=gt,
        domain="ifeval",
    )
    math = generate_split("math", "train", 2, seed=1)
    report = run_audit({"if": [echo_ok, echo_bad], "m": math}, scorer=scorer)
    summ = report.summary()
    assert summ["if"]["prompt_echo"] == (1, 2)
    assert all(acc == 0 for acc, _ in summ["m"].values())
    math_hacks = [h for h in HACKS.values() if "math" in h.domains]
    assert sum(n for _, n in summ["m"].values()) == 2 * len(math_hacks)
    assert summ["if"]["overlong"] == (2, 2)
    assert report.quarantined() == {"t1", "t2"}
    report = run_audit({"if": [echo_ok, echo_bad]}, hacks=["empty", "prompt_echo"], scorer=scorer)
    assert report.quarantined() == {"t1"}
    assert "prompt_echo" in report.table() and json.loads(report.to_json())["quarantined"] == ["t1"]
    rows = [echo_ok, echo_bad]
    assert apply_quarantine(rows, report, RewardsConfig(audit_quarantine=True)) == [echo_bad]
    assert apply_quarantine(rows, report, RewardsConfig()) == rows


def test_the_audit_catches_the_last_number_hack_it_is_meant_to_find() -> None:
    """With the hackable extractor list (a last-number fallback after the exact ones),
    a response that lists guesses one per line, the gold one last, earns reward: the
    ``numbers_listed`` probe must be accepted on every math task and quarantine it, while
    every other math probe stays rejected (they end in an answer the exact extractors
    read first, or hold none). The exact verifier rejects the probe."""
    math = generate_split("math", "train", 3, seed=2)
    hackable = RewardsConfig(
        math_extractors=["boxed", "final_answer_is", "short_answer", "last_number"], workers=1
    )
    report = run_audit({"m": math}, hackable)
    accepted = {h: acc for h, (acc, _) in report.summary()["m"].items() if acc}
    assert accepted == {"numbers_listed": 3}
    assert report.quarantined() == {r.id for r in math}
    kept = apply_quarantine(math, report, hackable.model_copy(update={"audit_quarantine": True}))
    assert kept == []
    exact = run_audit({"m": math}, RewardsConfig(workers=1), hacks=["numbers_listed"])
    assert exact.summary()["m"]["numbers_listed"] == (0, 3)


def test_arms_that_differ_only_in_quarantine_share_one_audit(tmp_path, monkeypatch) -> None:
    """The pipeline's audit stage caches its report by what the probes read. A run with
    the hackable math verifier (a last-number fallback) probes and trains on every task;
    a second run, the same but with ``audit_quarantine`` on, writes the same audit.json
    byte for byte and drops the tasks it names, every math one among them (the
    ``numbers_listed`` probe is accepted on each), without probing: ``run_audit`` is by then replaced by a function that fails (a
    fault injected, as no real one shows whether probing happened). A verifier that reads
    other answers, other tasks or another thread count is probed again."""
    from recipe_arena.compose import load_config
    from recipe_arena.data.schema import read_rows
    from recipe_arena.pipeline import PipelineState, World, _audit
    from recipe_arena.rundir import RunDir

    math = generate_split("math", "train", 3, seed=2)
    ifeval = generate_split("ifeval", "train", 2, seed=2)
    hack = "rewards.math_extractors=[boxed,final_answer_is,short_answer,last_number]"
    common = [hack, "rewards.workers=1", f"world.cache_dir={tmp_path / 'cache'}"]

    def audited(name: str, *overrides: str) -> tuple[Path, list[PromptRow]]:
        cfg = load_config([*common, *overrides])
        state = PipelineState()
        _audit(cfg, RunDir(cfg, tmp_path / name), World(math + ifeval, []), state)
        return tmp_path / name / "audit.json", read_rows(state.train_rows or "")

    left_in, kept = audited("left_in")
    assert kept == math + ifeval
    monkeypatch.setattr(audit, "run_audit", _no_probing)
    quarantined, kept = audited("quarantined", "rewards.audit_quarantine=true")
    assert quarantined.read_bytes() == left_in.read_bytes()
    bad = set(json.loads(left_in.read_text())["quarantined"])
    assert {r.id for r in math} <= bad and kept == [r for r in math + ifeval if r.id not in bad]
    hackable = load_config(common).rewards
    for rows, cfg, threads in (
        ({"micro/math/train": math}, hackable.model_copy(update={"math_extractors": ["boxed"]}), 1),
        ({"micro/math/train": math[:2]}, hackable, 1),
        ({"micro/math/train": math}, hackable, 2),
    ):
        with pytest.raises(AssertionError, match="probed again"):
            cached_audit(rows, cfg, str(tmp_path / "cache"), threads)


def _no_probing(*args: object, **kwargs: object) -> None:
    raise AssertionError("the audit probed again")


def test_shared_scorers_share_the_pool_but_not_the_counters() -> None:
    """Two shared scorers of one setting use the same worker pool object, the one
    ``shared_pool`` started for that setting (another worker count gets another); each counts
    only its own checks (2 math checks, then 1); closing one leaves the pool working
    for the other; a non-shared scorer gets a pool of its own."""
    from recipe_arena.rewards.scorer import close_shared, shared_pool

    cfg = RewardsConfig(workers=1)
    rows = generate_split("math", "heldout", 2, 1234)
    try:
        started = shared_pool(cfg)  # as `recipe-arena run` starts it, before any stage
        a = build_scorer(cfg, shared=True)
        b = build_scorer(cfg, shared=True)
        assert a.pool is b.pool is started
        assert shared_pool(RewardsConfig(workers=2)) is not started
        a.score(rows, ["\\boxed{1}", "\\boxed{2}"])
        a.close()
        assert b.score(rows[:1], [f"\\boxed{{{rows[0].ground_truth}}}"])[0].score == 1.0
        assert a.counts["math/checks"] == 2 and b.counts["math/checks"] == 1
        with build_scorer(cfg) as own:
            assert own.pool is not a.pool
    finally:
        close_shared()
