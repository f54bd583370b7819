"""The same RL step, synchronously: generate a batch, score it, then train.

No queues, no threads of our own, no staleness (every token is from the current
policy). It calls the same stage functions as ``loop.py`` (BatchFiller, advantage_batch,
Learner.train_step), so the two give the same loss on the same groups.
"""

from __future__ import annotations

from recipe_arena.core.actor import Actor, ActorTask
from recipe_arena.core.learner import Learner
from recipe_arena.core.loop import LoopSettings, StepRecord, advantage_batch, draw_seed
from recipe_arena.core.metrics import group_metrics, length_metrics
from recipe_arena.core.prompts import PromptSource


def minimal_train(
    learner: Learner, actor: Actor, source: PromptSource, s: LoopSettings
) -> list[StepRecord]:
    records = []
    n = s.rl.prompts_per_step
    for step in range(1, s.rl.steps + 1):
        filler = s.batch_filler()
        received, dropped = [], []
        while not filler.done:  # sample + score, then filter (active sampling refills)
            need = n - len(filler.kept) if s.rl.active_sampling else n
            tasks = []
            for _ in range(need):
                row = source.next()
                tasks.append(
                    ActorTask(row, draw_seed(s.seed, source.draws), f"{row.id}@{source.draws}")
                )
            for g in actor.rollouts(tasks):
                received.append(g)
                if filler.offer(g, learner.version) in ("zero_variance", "empty"):
                    dropped.append(g.prompt_id)
        metrics = {**filler.metrics(), **group_metrics(received)}
        metrics.update(length_metrics(received, filler.kept))
        if filler.kept:
            metrics.update(
                learner.train_step(advantage_batch(filler.kept, s))
            )  # advantage, loss, step
        actor.update_weights(learner.weights(), learner.version)  # sync
        records.append(
            StepRecord(
                step,
                learner.version,
                [g.prompt_id for g in filler.kept],
                dropped,
                [],
                metrics,
                filler.kept,
            )
        )
    return records
