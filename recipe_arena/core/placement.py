"""How many GPUs each role of an RL run asks for: one rule for the Ray backend, which
places the actors and reserves the learner's share with these requests, and for the
dry run's placement plan (``plan.placement_plan``), which lays the same requests out
node by node.

A request below 1 is a fraction of one GPU (Ray's fractional resources): on one GPU,
``cluster.learner_gpus=0.5 cluster.gpus_per_actor=0.5`` holds the learner and one
actor. Requests of 1 or more are whole GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the core reads the section it is given
    from recipe_arena.config import ClusterConfig


@dataclass(frozen=True)
class RoleGPUs:
    learner: float
    """GPUs of the learner (``cluster.learner_gpus``); 0: on the CPU."""
    actor: float
    """GPUs of each actor (``cluster.gpus_per_actor``); 0: on the CPU."""
    num_actors: int

    @property
    def total(self) -> float:
        return self.learner + self.actor * self.num_actors

    def roles(self) -> dict[str, float]:
        """Role name (learner, actor-<i>) -> its GPU request."""
        out = {"learner": self.learner}
        out.update({f"actor-{i}": self.actor for i in range(self.num_actors)})
        return out


def role_gpus(cluster: ClusterConfig, num_actors: int) -> RoleGPUs:
    return RoleGPUs(float(cluster.learner_gpus), float(cluster.gpus_per_actor), num_actors)
