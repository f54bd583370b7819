"""An audit probe that gets no verdict from a verifier worker (its deadline passed) is
counted as not accepted; a report holding one is not cached, so a hackable task is not
left unquarantined in every later run with the same key. Through the real audit, scorer
and verifier pool, and the real model cache in a temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipe_arena.cache import entry_ready
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import Message, PromptRow
from recipe_arena.rewards.audit import audit_entry, cached_audit


def _rows(gold: str) -> dict[str, list[PromptRow]]:
    q = [Message(role="user", content="What is the value?")]
    return {"files/math/train": [PromptRow(id="7", messages=q, ground_truth=gold, domain="math")]}


def test_a_probe_without_a_verdict_leaves_no_cached_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack: a loaded machine (here a 1 s verifier deadline and a reference, the tower
    ``2^{2^{34}}``, whose parse outlasts it) gives the ``answer_only_in_think`` probe no
    verdict: reason ``timeout after 1s``, not accepted. By hand: the first run reports it
    (not from the cache) and warns naming the probe; the entry is not written, so the
    second run audits again (``reused`` False) rather than keep the report. Before, the
    second run read the first's report from the cache (``reused`` True) in every later
    run with the same key."""
    rows, cfg = _rows("2^{2^{34}}"), RewardsConfig(workers=1, timeout_s=1)
    first, reused = cached_audit(rows, cfg, str(tmp_path), 1)
    late = [(p.task_id, p.hack, p.accepted) for p in first.probes if p.reason.startswith("timeout")]
    assert ("7", "answer_only_in_think", False) in late
    assert not any(accepted for _, _, accepted in late)
    assert not reused
    err = capsys.readouterr().err
    assert "probes got no verdict" in err and "math 7 answer_only_in_think" in err, err
    assert not entry_ready(audit_entry(rows, cfg, str(tmp_path), 1))
    second, reused = cached_audit(rows, cfg, str(tmp_path), 1)
    assert not reused
    late = [(p.hack, p.reason) for p in second.probes if p.reason.startswith("timeout")]
    assert ("answer_only_in_think", "timeout after 1s") in late


def test_a_report_whose_probes_all_got_verdicts_is_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reference the verifier reads at once (``7``) and a deadline no probe outlasts
    (60 s; a fresh worker's first math parse can outlast 5 s on a loaded machine): every
    probe gets a verdict, the
    first run writes the entry without a warning and the second reads the same report
    from it (``reused`` True), as before."""
    rows, cfg = _rows("7"), RewardsConfig(workers=1, timeout_s=60)
    first, reused = cached_audit(rows, cfg, str(tmp_path), 1)
    assert not reused and "no verdict" not in capsys.readouterr().err
    second, reused = cached_audit(rows, cfg, str(tmp_path), 1)
    assert reused and second.to_json() == first.to_json()
