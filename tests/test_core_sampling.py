"""Zero-gradient filter, active sampling refill, the staleness rule (property test)."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from recipe_arena.advantages import CenteredParams
from recipe_arena.core.batch import build_learner_batch
from recipe_arena.core.sampling import BatchFiller, is_trainable
from recipe_arena.core.types import Rollout, RolloutGroup
from recipe_arena.data.schema import Message, PromptRow
from recipe_arena.wiring import advantage_hook


def _group(
    pid: str, rewards: list[float], versions: list[int] | None = None, n_tok: int = 3
) -> RolloutGroup:
    row = PromptRow(
        id=pid, messages=[Message(role="user", content="1+1?")], ground_truth="2", domain="math"
    )
    vs = versions or [0] * len(rewards)
    rollouts = tuple(
        Rollout(
            prompt_id=pid,
            prompt_tokens=(5, 6),
            completion_tokens=tuple(range(10, 10 + n_tok)),
            behavior_logprobs=(-1.0,) * n_tok,
            token_versions=(v,) * n_tok,
            finish_reason="stop",
            domain="math",
            reward=r,
        )
        for r, v in zip(rewards, vs, strict=True)
    )
    return RolloutGroup(row=row, rollouts=rollouts)


def test_zero_variance_group_is_dropped() -> None:
    """All-correct (1,1,1,1) and all-wrong (0,0,0,0) carry A = 0 and are dropped; (1,0,0,0) kept."""
    f = BatchFiller(n_prompts=2, max_staleness=0)
    assert f.offer(_group("a", [1, 1, 1, 1]), 0) == "zero_variance"
    assert f.offer(_group("b", [0, 0, 0, 0]), 0) == "zero_variance"
    assert f.offer(_group("c", [1, 0, 0, 0]), 0) == "kept"
    assert f.zero_variance == 2 and not f.done


def test_active_sampling_refills_until_n_prompts_with_variance() -> None:
    """N = 3, learner version 2, max_staleness 1; stream: var, zero, zero, var, stale, var. The batch closes after the 6th
    group with 3 kept: 2 zero-variance and 1 stale dropped, 3 groups drawn beyond N."""
    f = BatchFiller(n_prompts=3, max_staleness=1)
    fresh = [2, 1]  # lag 2 - min(2, 1) = 1 <= 1
    stream = [
        _group("p0", [1, 0], fresh),
        _group("p1", [1, 1], fresh),
        _group("p2", [0, 0], fresh),
        _group("p3", [0, 1], fresh),
        _group("p4", [0, 1], versions=[2, 0]),  # 2 - min(2, 0) = 2 > 1
        _group("p5", [1, 0], fresh),
    ]
    verdicts = [f.offer(g, learner_version=2) for g in stream]
    assert verdicts == ["kept", "zero_variance", "zero_variance", "kept", "stale", "kept"]
    assert f.done and [g.prompt_id for g in f.kept] == ["p0", "p3", "p5"]
    m = f.metrics()
    assert m["sampling/zero_variance_groups"] == 2 and m["sampling/stale_groups"] == 1
    assert m["sampling/resampled_groups"] == 3 and m["sampling/batch_short"] == 0
    assert f.offer(_group("p6", [1, 0]), 2) == "ignored"


def test_without_active_sampling_the_batch_shrinks() -> None:
    """N = 3, no active sampling: three groups drawn, one zero-variance: batch of 2."""
    f = BatchFiller(n_prompts=3, max_staleness=0, active_sampling=False)
    for g in (_group("a", [1, 0]), _group("b", [1, 1]), _group("c", [0, 1])):
        f.offer(g, 0)
    assert f.done and len(f.kept) == 2 and f.metrics()["sampling/batch_short"] == 1


def test_without_active_sampling_a_group_length_control_emptied_does_not_count() -> None:
    """N = 2, no active sampling: a, an empty group (discard_early_short dropped all its
    rollouts), then b: the batch is not done after the empty one (1 candidate of 2) and
    closes on b with both kept."""
    f = BatchFiller(n_prompts=2, max_staleness=0, active_sampling=False)
    f.offer(_group("a", [1, 0]), 0)
    assert f.offer(_group("e", []), 0) == "empty" and not f.done
    f.offer(_group("b", [0, 1]), 0)
    assert f.done and [g.prompt_id for g in f.kept] == ["a", "b"]


def test_staleness_rule_boundaries() -> None:
    """learner 5, max_staleness 2: min version 3 (lag 2) trainable, 2 (lag 3) not."""
    assert is_trainable(3, 5, 2)
    assert not is_trainable(2, 5, 2)
    assert is_trainable(5, 5, 0) and not is_trainable(4, 5, 0)


@settings(max_examples=60, deadline=None)
@given(
    max_staleness=st.integers(0, 3),
    schedule=st.lists(
        st.tuples(st.integers(0, 8), st.lists(st.integers(0, 8), min_size=1, max_size=4)),
        min_size=1,
        max_size=30,
    ),
)
def test_no_trained_token_older_than_max_staleness(
    max_staleness: int, schedule: list[tuple[int, list[int]]]
) -> None:
    """Random schedules: each event is (learner_version, token versions of the group's
    rollouts, possibly mixed by in-flight updates). Every token of every kept group, once
    built into a batch, satisfies learner_version - token_version <= max_staleness."""
    for i, (learner_version, versions) in enumerate(schedule):
        versions = [
            min(v, learner_version) for v in versions
        ]  # actors never run ahead of the learner
        rewards = [float(j % 2) for j in range(len(versions) + 1)]
        g = _group(f"p{i}", rewards, versions + [learner_version])
        f = BatchFiller(n_prompts=1, max_staleness=max_staleness)
        if f.offer(g, learner_version) != "kept":
            assert learner_version - min(versions) > max_staleness
            continue
        batch = build_learner_batch(f.kept, advantage_hook(CenteredParams()), pad_id=0)
        trained_versions = batch.versions_BL[batch.mask_BL.bool()]
        assert int((learner_version - trained_versions).max()) <= max_staleness


def test_learner_batch_layout_and_advantages() -> None:
    """Group r = (1, 0, 0, 1, 0, 0, 0, 1) of 3-token completions after a 2-token prompt:
    rows are [5, 6, 10, 11, 12], mask on positions 2..4, advantage +0.625 / -0.375 there."""
    g = _group("x", [1, 0, 0, 1, 0, 0, 0, 1])
    batch = build_learner_batch([g], advantage_hook(CenteredParams()), pad_id=0)
    assert batch.tokens_BL[0].tolist() == [5, 6, 10, 11, 12]
    assert batch.mask_BL[0].tolist() == [0, 0, 1, 1, 1]
    assert batch.advantages_BL[0, 2:].tolist() == [0.625] * 3
    assert batch.advantages_BL[1, 2:].tolist() == [-0.375] * 3
    assert batch.num_tokens == 24 and torch.equal(batch.versions_BL[0, :2], torch.tensor([-1, -1]))


def test_an_empty_completion_does_not_make_its_group_stale() -> None:
    """An aborted rollout with no tokens beside three rollouts sampled at version 5,
    learner version 5, max_staleness 0: the group's oldest token is at version 5 (lag 0),
    so it is trainable (an empty rollout used to count as version 0: lag 5, stale)."""
    g = _group("x", [1.0, 0.0, 0.0], versions=[5, 5, 5])
    empty = Rollout(
        prompt_id="x",
        prompt_tokens=(5, 6),
        completion_tokens=(),
        behavior_logprobs=(),
        token_versions=(),
        finish_reason="abort",
        domain="math",
    )
    g = RolloutGroup(row=g.row, rollouts=(*g.rollouts, empty))
    assert g.min_version == 5 and empty.min_version is None
    f = BatchFiller(n_prompts=1, max_staleness=0)
    assert f.offer(g, learner_version=5) == "kept"


def test_a_group_with_no_rollouts_is_dropped_and_counted() -> None:
    """Length control may drop every rollout of a group: the filler drops it as empty
    (no staleness check on a group without tokens), counts it, and keeps filling."""
    g = _group("x", [1.0, 0.0])
    f = BatchFiller(n_prompts=1, max_staleness=0)
    assert RolloutGroup(row=g.row, rollouts=()).min_version is None
    assert f.offer(RolloutGroup(row=g.row, rollouts=()), learner_version=3) == "empty"
    assert f.offer(_group("y", [1.0, 0.0], versions=[3, 3]), learner_version=3) == "kept"
    m = f.metrics()
    assert m["sampling/empty_groups"] == 1.0 and m["sampling/groups_kept"] == 1.0
