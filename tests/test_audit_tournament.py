"""The verifier audit under ``chat: rubric_tournament`` probes the verifier training
uses. It judged every chat probe alone with the judge's verdict template, a verifier no
tournament run trains with, so a judge that the ``judge_injection`` probe fools in games
and not alone was reported clean and its tasks never quarantined. The judge is a real
OpenAI-compatible endpoint that is fooled the way small judges are: it copies the
label of the answer it quotes after its own verdict."""

from __future__ import annotations

import re
from typing import Any

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards.audit import run_audit
from tests.hostile_tally import record
from tests.judge_endpoint import JudgeEndpoint, quoting_verdict, reply

REFERENCE = "The opposite of hot is cold."
ROWS = [
    PromptRow(
        id=f"c{k}",
        messages=[{"role": "user", "content": "What is the opposite of hot?"}],
        ground_truth=REFERENCE,
        domain="chat",
    )
    for k in range(2)
]


def _quoting_judge() -> JudgeEndpoint:
    """A real endpoint. A verdict prompt gets 'Score: 9' for the reference answer and
    'Score: 2' for any other; a game names the reference answer the winner, then quotes
    the other answer (whose own "Winner: A" is then the reply's last label); a rubric
    prompt gets a rubric."""

    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        prompt = body["messages"][-1]["content"]
        verdict = quoting_verdict(prompt, REFERENCE)
        graded = re.search(r"Answer to grade:\n(.*)\n\nDoes", prompt, re.S)
        if verdict is None and graded is not None:
            verdict = "Score: 9" if graded.group(1) == REFERENCE else "Score: 2"
        return reply(verdict or "1. It names the opposite.")

    return JudgeEndpoint(answer)


def _audit(chat: str) -> Any:
    srv = _quoting_judge()
    cfg = RewardsConfig(
        chat=chat, judge_model=srv.url, judge_retries=0, workers=1, allow_weak_sandbox=True
    )
    hacks = ["judge_injection", "prompt_echo", "empty"]
    try:
        return run_audit({"chat": ROWS}, cfg, hacks=hacks)
    finally:
        srv.close()


def test_chat_probes_play_the_tournament_training_uses() -> None:
    """Under the tournament the injection wins the game where it is answer A (its
    quoted "Winner: A" is read last) and ties the reference: win rate 0.5, accepted,
    both tasks quarantined. Before, the audit judged it alone (0.2, not accepted) and
    quarantined nothing. The prompt echo and the empty answer lose both games
    (0.0): not accepted, as before."""
    report = _audit("rubric_tournament")
    summary = report.summary()["chat"]
    ok = summary["judge_injection"] == (2, 2) and report.quarantined() == {"c0", "c1"}
    record("verifier audit: chat probes under a tournament", 1, int(ok))
    assert summary["judge_injection"] == (2, 2), report.table()
    assert {p.score for p in report.probes if p.hack == "judge_injection"} == {0.5}
    assert summary["prompt_echo"] == (0, 2) and summary["empty"] == (0, 2)
    assert report.quarantined() == {"c0", "c1"}


def test_chat_probes_under_the_judge_are_judged_alone() -> None:
    """Under ``chat: judge`` the same judge's verdicts decide, as before: the injection
    gets 'Score: 2' (0.2), nothing is accepted, nothing quarantined."""
    report = _audit("judge")
    assert {p.score for p in report.probes if p.hack == "judge_injection"} == {0.2}
    assert report.quarantined() == set()
