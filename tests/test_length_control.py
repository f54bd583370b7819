"""Length-control strategies with hand-derived values: Kimi's token budget, the
discard-early-short rule, the no-op; and the actor applying them to a real group."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from recipe_arena.length_control import (
    LENGTH_CONTROL,
    DiscardEarlyShortParams,
    NoLengthControlParams,
    TokenBudgetParams,
    apply_length_control,
)
from recipe_arena.length_control.discard_early_short import WindowedInput


def _inp(
    lengths: list[int],
    row_budget: int | None = 60,
    effort: str | None = "medium",
    phase: int = 0,
    window: float | None = 100.0,
    cap: int = 96,
    k: int = 1,
    collect: float | None = None,
    phases: list[int] | None = None,
    in_quota: bool | None = None,
) -> WindowedInput:
    """A group of len(lengths) rollouts placed in its generation window (the input of
    discard-early-short; the other strategies read its ``LengthInput`` fields)."""
    g = len(lengths)
    return WindowedInput(
        rewards_G=torch.tensor([1.0, 0.0, 1.0, 0.0][:g]),
        lengths_G=torch.tensor(lengths),
        row_budget=row_budget,
        effort=effort,
        finish_seconds_G=torch.zeros(g),
        start_versions_G=torch.zeros(g, dtype=torch.long),
        end_versions_G=torch.zeros(g, dtype=torch.long),
        engine_version=0,
        phase_steps_G=torch.tensor(phases) if phases else torch.full((g,), phase),
        window_steps=window,
        collect_steps=collect,
        response_cap=cap,
        max_staleness=k,
        in_quota=in_quota,
    )


def test_token_budget_uses_the_row_budget() -> None:
    """Budget 60 from the row: lengths (10, 50, 70, 150) -> the last two exceed it and get
    -1 whatever their reward; rewards (1, 0, 1, 0) become (1, 0, -1, -1); 2 violations."""
    out = apply_length_control(TokenBudgetParams(), _inp([10, 50, 70, 150]))
    assert out.rewards_G.tolist() == [1.0, 0.0, -1.0, -1.0]
    assert out.keep_G.all() and out.metrics["length/budget_violations"] == 2.0


def test_token_budget_falls_back_to_the_effort_level() -> None:
    """No row budget, effort medium -> 96 tokens: only 150 exceeds it. With source effort
    the level's budget wins over the row's 60: the same single violation."""
    out = apply_length_control(TokenBudgetParams(), _inp([10, 50, 70, 150], row_budget=None))
    assert out.rewards_G.tolist() == [1.0, 0.0, 1.0, -1.0]
    by_level = apply_length_control(TokenBudgetParams(source="effort"), _inp([10, 50, 70, 150]))
    assert by_level.rewards_G.tolist() == [1.0, 0.0, 1.0, -1.0]


def test_token_budget_without_any_budget_changes_nothing() -> None:
    out = apply_length_control(TokenBudgetParams(), _inp([500, 10], row_budget=None, effort=None))
    assert out.rewards_G.tolist() == [1.0, 0.0] and out.metrics["length/budget_missing"] == 1.0


def test_discard_early_short_by_hand() -> None:
    """k = 1, W = 100 decode steps, D = 96 (the cap): kept iff phi + 96 <= 200, so a group
    starting 104 steps into its window is kept and one at 105 is discarded whole (its
    4 rollouts counted), whatever its own lengths (5 tokens each here)."""
    kept = apply_length_control(DiscardEarlyShortParams(), _inp([5] * 4, phase=104))
    assert kept.keep_G.all() and kept.metrics["length/discarded_short"] == 0.0
    late = apply_length_control(DiscardEarlyShortParams(), _inp([5] * 4, phase=105))
    assert not late.keep_G.any()
    assert late.metrics["length/discarded_short"] == 4.0
    assert late.metrics["length/discarded_groups"] == 1.0


def test_discard_early_short_full_length_and_staleness_bound() -> None:
    """phi = 150, W = 100: with D = 96 and k = 1, 246 > 200 -> discarded; with D = 50,
    200 <= 200 -> kept; with k = 2 (bound 300) -> kept; with k = 0 even phi = 5 is
    discarded (101 > 100)."""
    rule = DiscardEarlyShortParams()
    assert not apply_length_control(rule, _inp([5, 5], phase=150)).keep_G.any()
    short = DiscardEarlyShortParams(full_length=50)
    assert apply_length_control(short, _inp([5, 5], phase=150)).keep_G.all()
    assert apply_length_control(rule, _inp([5, 5], phase=150, k=2)).keep_G.all()
    assert not apply_length_control(rule, _inp([5, 5], phase=5, k=0)).keep_G.any()


def test_discard_early_short_horizon_ends_when_the_learner_closes_its_batch() -> None:
    """k = 1, W = 100, the learner closes its batch C = 40 steps into each window: the
    deadline is k W + C = 140 steps after the group's window opened, not (k + 1) W =
    200. D = 96: phi = 44 is kept (140 <= 140), phi = 45 discarded (141 > 140); the
    horizon used is logged (140, one group)."""
    rule = DiscardEarlyShortParams()
    kept = apply_length_control(rule, _inp([5] * 4, phase=44, collect=40.0))
    assert kept.keep_G.all()
    assert kept.metrics["length/horizon_steps"] == 140.0
    assert kept.metrics["length/horizon_groups"] == 1.0
    assert not apply_length_control(rule, _inp([5] * 4, phase=45, collect=40.0)).keep_G.any()


def test_discard_early_short_waits_for_the_latest_start() -> None:
    """A group's rollouts may start at different steps when the engine's batch is full:
    phases (0, 50) with D = 96 and horizon 140 -> the second may end at 146 > 140, so
    the group is discarded (the earliest start alone, 0 + 96, would have kept it)."""
    rule = DiscardEarlyShortParams()
    late = apply_length_control(rule, _inp([5, 5], phases=[0, 50], collect=40.0))
    assert not late.keep_G.any()
    assert apply_length_control(rule, _inp([5, 5], phases=[0, 44], collect=40.0)).keep_G.all()


def test_discard_early_short_keeps_what_it_cannot_place() -> None:
    """No window closed yet, or an engine that does not count decode steps (phase -1):
    nothing is discarded."""
    rule = DiscardEarlyShortParams()
    assert apply_length_control(rule, _inp([5, 5], phase=500, window=None)).keep_G.all()
    assert apply_length_control(rule, _inp([5, 5], phase=-1)).keep_G.all()


def test_discard_early_short_at_k0_follows_the_window_quota() -> None:
    """At k = 0 the start count decides, whatever the phases say: phase 0 with a
    horizon of 140 would keep the group, but out of quota it is discarded (4 rollouts);
    phase 500 would discard it, but in quota it is kept. No quota (None) falls back to
    the deadline rule."""
    rule = DiscardEarlyShortParams()
    out = apply_length_control(rule, _inp([5] * 4, phase=0, collect=40.0, k=0, in_quota=False))
    assert not out.keep_G.any() and out.metrics["length/discarded_short"] == 4.0
    kept = apply_length_control(rule, _inp([5] * 4, phase=500, k=0, in_quota=True))
    assert kept.keep_G.all() and kept.metrics["length/discarded_short"] == 0.0
    assert not apply_length_control(rule, _inp([5] * 4, phase=500, k=0)).keep_G.any()


def test_window_quota_by_hand() -> None:
    """need = 2. Window 0: A and B start in quota (admitted - untrainable: 0, 1 < 2); C
    does not (2 - 0); A finishes untrainable, which frees its place, so D is in (2 - 1
    < 2); B finishing trainable frees nothing, so E is out (3 - 1). The batch closes: F
    is out. A weight update opens window 1: G is in; a window-0 group that finishes
    untrainable now does not count toward window 1 (H in, I out: 2 - 0)."""
    from recipe_arena.length_control.discard_early_short import WindowQuota

    q = WindowQuota(need=2)
    a, b, c = q.start(), q.start(), q.start()
    assert (a, b, c) == ((0, True), (0, True), (0, False))
    q.finished(*a, trainable=False)
    assert q.start() == (0, True)  # D
    q.finished(*b, trainable=True)
    assert q.start() == (0, False)  # E
    q.close()
    assert q.start() == (0, False)  # F
    q.open()
    assert q.start() == (1, True)  # G
    q.finished(0, True, trainable=False)
    q.finished(*c, trainable=False)  # out of quota: never frees a place
    assert (q.start(), q.start()) == ((1, True), (1, False))  # H, I


def test_none_and_the_registry() -> None:
    out = apply_length_control(NoLengthControlParams(), _inp([500, 10]))
    assert out.rewards_G.tolist() == [1.0, 0.0] and out.keep_G.all()
    assert {"none", "token_budget", "discard_early_short"} <= set(LENGTH_CONTROL)


@pytest.mark.parametrize("k", [1])
def test_actor_discards_groups_that_start_too_late(k: int) -> None:
    """Through the real actor and torch engine: two weight updates with no decoding
    between them make the last window 0 steps long (W = 0; no batch closed, so C = W),
    so any group starts too late (phi + D > k x 0 + 0): it reaches the learner empty,
    its sampled lengths and the discard count kept. Before any update (no window
    closed) the same task is kept."""
    from recipe_arena.config import EngineConfig
    from recipe_arena.config_rewards import RewardsConfig
    from recipe_arena.core.actor import ActorTask
    from recipe_arena.data.micro import generate_split
    from recipe_arena.models.factory import TinyModelSpec, build_micro
    from recipe_arena.wiring import ActorSettings, make_actor

    model, tok = build_micro(TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1), seed=0)
    settings = ActorSettings(
        group_size=3,
        temperature=1.0,
        max_new_tokens=8,
        length_control=DiscardEarlyShortParams(),
        max_staleness=k,
    )
    actor = make_actor(
        0, model, tok, "torch", EngineConfig(max_batch_size=4), RewardsConfig(workers=1), settings
    )
    row = generate_split("math", "train", 1, seed=0)[0]
    try:
        first = actor.rollouts([ActorTask(row, seed=1, tag="a")])[0]
        assert len(first.rollouts) == 3 and first.metrics["length/discarded_short"] == 0.0
        actor.update_weights(model.state_dict(), 1)
        actor.update_weights(model.state_dict(), 2)
        late = actor.rollouts([ActorTask(row, seed=1, tag="b")])[0]
    finally:
        actor.close()
    assert late.rollouts == () and len(late.sampled_lengths) == 3
    assert late.metrics["length/discarded_short"] == 3.0


def test_actor_measures_the_collect_phase_from_closed_batches() -> None:
    """Through the real actor and torch engine, with the engine's own decode-step count
    S read after each phase. Window 0 opens at step 0; weights 1 arrive at S1 (window 1
    opens); the learner holding 1 closes its batch at S2 (C = S2 - S1); weights 2 arrive
    at S3. A close reported for a version the actor no longer holds (0) is ignored.
    Then W = (S1 + (S3 - S1)) / 2 (the median of two windows) and the next group's
    logged horizon is k W + C with k = 1."""
    from recipe_arena.config import EngineConfig
    from recipe_arena.config_rewards import RewardsConfig
    from recipe_arena.core.actor import ActorTask
    from recipe_arena.data.micro import generate_split
    from recipe_arena.models.factory import TinyModelSpec, build_micro
    from recipe_arena.wiring import ActorSettings, make_actor

    model, tok = build_micro(TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1), seed=0)
    settings = ActorSettings(
        group_size=2,
        temperature=1.0,
        max_new_tokens=6,
        length_control=DiscardEarlyShortParams(full_length=1),
        max_staleness=1,
    )
    actor = make_actor(
        0, model, tok, "torch", EngineConfig(max_batch_size=4), RewardsConfig(workers=1), settings
    )
    rows = generate_split("math", "train", 3, seed=0)

    def steps() -> int:
        return int(actor.engine.stats().extra["steps"])

    try:
        actor.rollouts([ActorTask(rows[0], seed=1, tag="a")])
        s1 = steps()
        actor.update_weights(model.state_dict(), 1)
        actor.rollouts([ActorTask(rows[1], seed=2, tag="b")])
        s2 = steps()
        actor.batch_closed(0)  # a stale report: ignored
        actor.batch_closed(1)
        actor.rollouts([ActorTask(rows[2], seed=3, tag="c")])
        s3 = steps()
        actor.update_weights(model.state_dict(), 2)
        group = actor.rollouts([ActorTask(rows[0], seed=4, tag="d")])[0]
    finally:
        actor.close()
    assert 0 < s1 < s2 < s3
    assert group.metrics["length/horizon_groups"] == 1.0
    assert group.metrics["length/horizon_steps"] == pytest.approx(s3 / 2 + (s2 - s1))


def test_actor_keeps_a_windows_quota_at_k0() -> None:
    """Through the real actor and torch engine at max_staleness 0 with a quota of one
    group per window and the zero-gradient filter off (so any group with a rollout
    counts): of two groups submitted together the first is in quota and trained, the
    second is discarded whole (3 rollouts) with its sampled lengths kept. After the
    learner closes its batch nothing is in quota; a weight update opens a new window and
    the next group is in quota again. Under ``length_control=none`` the same quota is
    kept but nothing is discarded.

    Where equal rewards are refilled, a group in quota that finishes with them frees its
    place: the untrained 1-layer model scores 0 on every rollout of a math row (its six
    random tokens hold no right answer), so after one such group a second one, started
    after it finished, is in quota too; without refilling it is not."""
    from recipe_arena.config import EngineConfig
    from recipe_arena.config_rewards import RewardsConfig
    from recipe_arena.core.actor import ActorTask
    from recipe_arena.data.micro import generate_split
    from recipe_arena.models.factory import TinyModelSpec, build_micro
    from recipe_arena.wiring import ActorSettings, make_actor

    model, tok = build_micro(TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1), seed=0)
    rows = generate_split("math", "train", 2, seed=0)

    def actor(rule: object, refill: bool = False) -> Any:
        settings = ActorSettings(
            group_size=3,
            temperature=1.0,
            max_new_tokens=6,
            length_control=rule,
            max_staleness=0,
            window_quota=1,
            refill_equal_rewards=refill,
        )
        cfg = EngineConfig(max_batch_size=8)
        return make_actor(0, model, tok, "torch", cfg, RewardsConfig(workers=1), settings)

    a = actor(DiscardEarlyShortParams())
    try:
        first, second = a.rollouts([ActorTask(rows[0], 1, "a"), ActorTask(rows[1], 2, "b")])
        a.batch_closed(0)
        closed = a.rollouts([ActorTask(rows[0], 3, "c")])[0]
        a.update_weights(model.state_dict(), 1)
        reopened = a.rollouts([ActorTask(rows[1], 4, "d")])[0]
    finally:
        a.close()
    assert len(first.rollouts) == 3 and first.metrics["length/discarded_short"] == 0.0
    assert second.rollouts == () and len(second.sampled_lengths) == 3
    assert second.metrics["length/discarded_short"] == 3.0
    assert closed.rollouts == () and len(reopened.rollouts) == 3
    b = actor(NoLengthControlParams())
    try:
        groups = b.rollouts([ActorTask(rows[0], 1, "a"), ActorTask(rows[1], 2, "b")])
    finally:
        b.close()
    assert [len(g.rollouts) for g in groups] == [3, 3]
    for refill in (True, False):
        c = actor(DiscardEarlyShortParams(), refill)
        try:
            zero = c.rollouts([ActorTask(rows[0], 1, "a")])[0]
            after = c.rollouts([ActorTask(rows[1], 2, "b")])[0]
        finally:
            c.close()
        assert [r.reward for r in zero.rollouts] == [0.0] * 3
        assert len(after.rollouts) == (3 if refill else 0)


def test_the_window_is_read_as_of_the_groups_first_start() -> None:
    """Windows opened at steps 0, 100, 200, 300; batches closed at 130 (30 steps into its
    window), 250 (50) and 330 (30). A group whose rollouts started at 150 and 160: phases
    50 and 60 from the window that opened at 100; the windows that had ended by step 150
    are one of 100 steps (0 -> 100), median 100; the batches closed by then, one of 30.
    The windows and batches that came later (a long rollout would still be running) do
    not enter. A rollout with an unknown start makes the whole group unknown."""
    from recipe_arena.length_control.discard_early_short import window_as_of_start

    opens, closes = [0, 100, 200, 300], [(130, 30), (250, 50), (330, 30)]
    phases, window, collect = window_as_of_start([150, 160], opens, closes)
    assert phases.tolist() == [50, 60] and window == 100 and collect == 30
    late, w_late, c_late = window_as_of_start([340], opens, closes)
    assert late.tolist() == [40] and w_late == 100 and c_late == 30  # medians of 3 each
    unknown, w, c = window_as_of_start([150, None], opens, closes)
    assert unknown.tolist() == [-1, -1] and w is None and c is None


def test_length_metrics_compare_sampled_and_trained_by_hand() -> None:
    """Two received groups: one trained with rollouts of 4 and 8 tokens, one dropped
    whose 9 sampled completions had 1, 2, 3, 5, 6, 7, 9, 10, 11 tokens. Sampled: 1..11
    (11 values, mean 6); the percentiles interpolate between order statistics at
    position p (n - 1) = 10 p: p25 at 2.5 -> 3.5, p50 at 5 -> 6, p75 at 7.5 -> 8.5, p90
    at 9 -> 10. Trained: 4 and 8, mean 6; position p: p25 5, p50 6, p75 7, p90 7.6.
    The discarded-short count of the dropped group (9) is summed in. A single trained
    completion of 7 tokens has 7 at every percentile."""
    from recipe_arena.core.metrics import length_metrics
    from recipe_arena.core.types import Rollout, RolloutGroup
    from recipe_arena.data.micro import generate_split

    row = generate_split("math", "train", 1, seed=0)[0]

    def rollout(n: int) -> Rollout:
        return Rollout(row.id, (1,), (2,) * n, (0.0,) * n, (0,) * n, "stop", "math")

    trained = RolloutGroup(row, (rollout(4), rollout(8)), sampled_lengths=(4, 8))
    dropped = RolloutGroup(row, (), (1, 2, 3, 5, 6, 7, 9, 10, 11), {"length/discarded_short": 9.0})
    out = length_metrics([trained, dropped], [trained])
    assert out["length/sampled_n"] == 11.0 and out["length/sampled_mean"] == 6.0
    assert [out[f"length/sampled_p{p}"] for p in (25, 50, 75, 90)] == [3.5, 6.0, 8.5, 10.0]
    assert out["length/trained_n"] == 2.0 and out["length/trained_mean"] == 6.0
    got = [out[f"length/trained_p{p}"] for p in (25, 50, 75, 90)]
    assert got == pytest.approx([5.0, 6.0, 7.0, 7.6])
    assert out["length/discarded_short"] == 9.0
    # one completion: every percentile is its length (quantiles need two points)
    single = length_metrics([trained], [RolloutGroup(row, (rollout(7),))])
    assert [single[f"length/trained_p{p}"] for p in (25, 50, 75, 90)] == [7.0] * 4


def test_window_keeper_state_moves_to_a_resumed_engine_count() -> None:
    """The keeper's state is saved in decode steps before the engine's count and read
    back from a resumed engine's count. Windows opened at 0, 10 and 30, batches closed
    at 25 (15 into the window of 10) and 40 (10 into that of 30), saved at engine step 40: opens
    -40, -30, -10, closes (-15, 15), (0, 10). Read back at step 0 the keeper holds the
    same windows shifted by -40, and a group starting at step 5 of the resumed engine
    is judged as one starting at 45 in the run that did not stop: phase 15 from the
    window opened at 30 (-10), W = median(10, 20) = 15, C = median(15, 10) = 12.5. The
    quota (k = 0: window 3, one admitted, none untrainable, closed) comes back as it
    was."""
    from recipe_arena.core.hooks import RunFacts
    from recipe_arena.length_control.discard_early_short import WindowKeeper, window_as_of_start

    def keeper(k: int) -> WindowKeeper:
        return WindowKeeper(DiscardEarlyShortParams(), RunFacts(16, k, batch_share=2))

    before = keeper(1)
    before.on_update(1, 10)
    before.on_batch_closed(25)
    before.on_update(2, 30)
    before.on_batch_closed(40)
    saved = before.state(40)
    assert saved == {"opens": [-40, -30, -10], "closes": [[-15, 15], [0, 10]], "quota": None}
    after = keeper(1)
    after.load_state(saved, 0)
    phases, window, collect = window_as_of_start([5], after.opens, after.closes)
    assert (phases.tolist(), window, collect) == ([15], 15, 12.5)
    assert window_as_of_start([45], before.opens, before.closes)[1:] == (15, 12.5)

    quota = keeper(0)
    for _ in range(3):
        quota.on_update(0, None)
    assert quota.before_sampling() == (3, True)
    quota.on_batch_closed(None)
    restored = keeper(0)
    restored.load_state(quota.state(None), None)
    assert restored.quota is not None and quota.quota is not None
    assert (restored.quota.window, restored.quota.admitted, restored.quota.closed) == (3, 1, True)
    assert restored.before_sampling() == (3, False)  # closed: nothing more admitted
