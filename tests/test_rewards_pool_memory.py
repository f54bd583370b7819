"""A verifier worker that a hostile answer leaves large is replaced, through the real
scorer and math verifier: the memory a call leaves behind must not count against the
next row's address-space limit."""

from __future__ import annotations

from pathlib import Path

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import PromptRow
from recipe_arena.rewards import build_scorer
from recipe_arena.rewards.zygote import RETIRE_GROWTH_MB
from tests.hostile_tally import record


def _row(gt: str) -> PromptRow:
    return PromptRow(
        id="m", messages=[{"role": "user", "content": "q"}], ground_truth=gt, domain="math"
    )


def _address_space_mb(pid: int) -> int:
    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[0])
    return pages * 4096 >> 20


def test_a_worker_left_large_by_an_answer_is_replaced() -> None:
    """Issue example: ``\\boxed{2^{2^{29}}}`` (a 64 MB integer) is scored wrong in a few
    seconds, but SymPy's and math-verify's caches keep it and its parse: the worker
    stayed about 280 MB larger, and the math check's 1 GiB address-space limit counts
    that against every later call of the worker. After a dozen such answers of
    shrinking size a correct ``\\boxed{1+x}`` came back ``worker_died``. Now a worker
    that grew by more than RETIRE_GROWTH_MB (256) answers its call and is replaced:
    with one worker, the hostile answer scores 0, one worker was replaced, the worker
    that serves next is no larger than the first one plus 64 MB, and correct answers
    score 1."""
    cfg = RewardsConfig(timeout_s=60.0, workers=1)
    with build_scorer(cfg) as sc:
        assert sc.score([_row("2")], [r"\boxed{2}"])[0].score == 1.0
        first = sc.pool._workers[0].pid
        assert first is not None
        start = _address_space_mb(first)
        hostile = sc.score([_row("3")], [r"\boxed{2^{2^{29}}}"])[0]
        good = sc.score([_row("x+1"), _row("1/2")], [r"\boxed{1+x}", r"\boxed{0.5}"])
        now = sc.pool._workers[0].pid
        assert now is not None
        size = _address_space_mb(now)
        replaced = sc.pool.replaced
    ok = hostile.score == 0.0 and replaced == 1 and now != first and size < start + 64
    record("verifier pool: memory a hostile answer leaves behind", 1, int(ok))
    assert hostile.score == 0.0 and hostile.reason.startswith("wrong"), hostile
    assert replaced == 1 and now != first, (replaced, first, now)
    assert size < start + 64 < start + RETIRE_GROWTH_MB, (start, size)
    assert [r.score for r in good] == [1.0, 1.0], good
