"""A verifier worker that a hostile answer leaves large is replaced, through the real
scorer and math verifier: the memory a call leaves behind must not count against the
next row's address-space limit; an IFEval check is bounded in memory as a math check
is."""

from __future__ import annotations

import threading
import time
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


def _peak_rss_mb(pid: int, stop: threading.Event, peak: list[int]) -> None:
    """Samples ``pid``'s resident set every 20 ms into ``peak[0]`` until ``stop``."""
    while not stop.is_set():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        rss = [x for x in status.splitlines() if x.startswith("VmRSS")]
        if rss:
            peak[0] = max(peak[0], int(rss[0].split()[1]) >> 10)
        time.sleep(0.02)


def test_an_ifeval_keyword_that_builds_a_huge_match_list_is_bounded() -> None:
    """Issue example: lm-eval's ``keywords:frequency`` checker counts
    ``re.findall(keyword, response)``, so a ground truth whose keyword is ``"()" * 1000``
    (a thousand empty groups) finds an empty match at every character of the response,
    each a tuple of 1,000 strings (8 KB). IFEval checks ran without an address-space
    limit: on a response of 200,000 ``a`` the worker grew by about 130 MB a second, to a
    resident 1.6 GB, and after 12.7 s scored the row 1 (200,001 matches, "at least 2").
    Now an IFEval check runs under the math check's limit (1 GiB of address space,
    ``domains.VERIFIERS["ifeval"].memory_mb``): the list stops at the limit, the row is
    ``exception: MemoryError`` (score 0) and the worker stays under 1.1 GB resident; the
    same worker then scores a plain keyword row 1 (``sea`` twice in ``the sea, the
    sea``). Deadline 60 s, so only the limit can stop the check."""
    gt = {"instruction_id_list": ["keywords:frequency"]}
    hostile = PromptRow(
        id="h",
        messages=[{"role": "user", "content": "p"}],
        ground_truth=gt
        | {"kwargs": [{"keyword": "()" * 1000, "frequency": 2, "relation": "at least"}]},
        domain="ifeval",
    )
    plain = PromptRow(
        id="p",
        messages=[{"role": "user", "content": "p"}],
        ground_truth=gt | {"kwargs": [{"keyword": "sea", "frequency": 2, "relation": "at least"}]},
        domain="ifeval",
    )
    with build_scorer(RewardsConfig(timeout_s=60.0, workers=1)) as sc:
        assert sc.score([plain], ["the sea, the sea"])[0].score == 1.0
        pid = sc.pool._workers[0].pid
        assert pid is not None
        stop, peak = threading.Event(), [0]
        watcher = threading.Thread(target=_peak_rss_mb, args=(pid, stop, peak))
        watcher.start()
        try:
            bad = sc.score([hostile], ["a" * 200_000])[0]
        finally:
            stop.set()
            watcher.join()
        after = sc.score([plain], ["the sea, the sea"])[0]
    ok = bad.score == 0.0 and "MemoryError" in bad.reason and peak[0] < 1100
    record("verifier pool: memory of an IFEval check", 1, int(ok))
    assert bad.score == 0.0 and bad.reason.startswith("exception: MemoryError"), bad
    assert 0 < peak[0] < 1100, peak
    assert after.score == 1.0, after
