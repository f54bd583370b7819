"""Where actors run: ``local`` (threads in this process, the default) or ``ray``.

Both give the loop the same four things: a prompt channel, a result channel, a weight
broadcast, and a health check. The Actor class is the same plain class in both, built by
the caller's ``ActorFactory`` (``recipe_arena.wiring.ActorSpec``) in the process that
runs it; Ray hosts it in a ``ray.remote`` actor here.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Protocol

import torch

from recipe_arena.core.actor import Actor
from recipe_arena.core.channels import Channel, LocalChannel, RayChannel
from recipe_arena.core.placement import RoleGPUs


class ActorFactory(Protocol):
    """Builds one actor with its engine, scorer and hooks; picklable, so that a Ray
    actor process builds its own (``recipe_arena.wiring.ActorSpec``)."""

    def build(self, actor_id: int, scorer: Any = None) -> Actor:
        """Actor ``actor_id``; ``scorer``: one to share instead of building its own."""
        ...


class Backend(Protocol):
    prompts: Channel
    results: Channel

    def start(self) -> None: ...

    def broadcast(self, weights: Mapping[str, torch.Tensor], version: int) -> None:
        """Send new weights to every actor; they swap them in without draining."""

    def batch_closed(self, version: int) -> None:
        """Tell every actor the learner, holding ``version``, has closed its batch (what
        arrives from now on is offered to the next one); does not wait for them."""

    def check(self) -> None:
        """Raise if an actor has died."""

    def actor_stats(self) -> list[dict[str, float]]: ...

    def shutdown(self) -> None: ...


class RayActorHost:
    """A Ray actor process's Actor, built there by the factory; forwards the calls the
    backend makes."""

    def __init__(self, spec: ActorFactory, actor_id: int) -> None:
        self.actor = spec.build(actor_id)

    def run(self, prompts: Channel, results: Channel) -> dict[str, float]:
        return self.actor.run(prompts, results)

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        self.actor.update_weights(state_dict, version)

    def batch_closed(self, version: int) -> None:
        self.actor.batch_closed(version)

    def stats(self) -> dict[str, float]:
        return self.actor.stats()

    def stop(self) -> None:
        self.actor.stop()

    def close(self) -> None:
        self.actor.close()


def threads_per_op(cores: int, num_actors: int) -> int:
    """torch intra-op threads of each op while ``num_actors`` engines decode and the
    learner trains at once in one process: the ``cores`` torch would give one op,
    shared between them (at least 1). Each would otherwise start a team of ``cores``
    threads, twice as many threads as cores for one actor, and a tiny model's ops
    then wait on each other."""
    return max(1, cores // (num_actors + 1))


class LocalBackend:
    """Actors in threads of this process; the engines decode in their own threads.

    ``share_cores`` (generation and training overlap: ``rl.pipeline_depth`` above 1):
    from construction to ``shutdown`` every torch op of the process runs on
    ``threads_per_op`` threads (``engine.num_threads``, when set, still sets the
    engine's), and torch's setting is restored at shutdown. Without it torch's setting
    is left as it is, for loops that generate and train one after the other and callers
    that set the threads themselves."""

    def __init__(
        self, spec: ActorFactory, num_actors: int = 1, scorer: Any = None, share_cores: bool = True
    ) -> None:
        self.prompts: Channel = LocalChannel()
        self.results: Channel = LocalChannel()
        # before the engines exist: a thread takes torch's setting at its first op
        self._torch_threads = torch.get_num_threads()
        if share_cores:
            torch.set_num_threads(threads_per_op(self._torch_threads, num_actors))
        try:
            self.actors = [spec.build(i, scorer if i == 0 else None) for i in range(num_actors)]
        except BaseException:
            torch.set_num_threads(self._torch_threads)
            raise
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []

    def start(self) -> None:
        for a in self.actors:
            t = threading.Thread(
                target=self._run, args=(a,), name=f"actor-{a.actor_id}", daemon=True
            )
            t.start()
            self._threads.append(t)

    def _run(self, actor: Actor) -> None:
        try:
            actor.run(self.prompts, self.results)
        except BaseException as e:  # surfaced to the learner by check()
            self._errors.append(e)

    def broadcast(self, weights: Mapping[str, torch.Tensor], version: int) -> None:
        for a in self.actors:
            a.update_weights(weights, version)

    def batch_closed(self, version: int) -> None:
        for a in self.actors:
            a.batch_closed(version)

    def check(self) -> None:
        if self._errors:
            raise RuntimeError(f"an actor failed: {self._errors[0]!r}") from self._errors[0]

    def actor_stats(self) -> list[dict[str, float]]:
        return [a.stats() for a in self.actors]

    def shutdown(self) -> None:
        for a in self.actors:
            a.stop()
        for t in self._threads:
            t.join(timeout=30)
        for a in self.actors:
            a.close()
        torch.set_num_threads(self._torch_threads)


class RayBackend:
    """Actors as Ray actors. ``address=None`` starts a local cluster (``ray.init()``);
    an address joins an existing one. Weights travel through the object store.

    GPUs (``gpus``, from ``core.placement.role_gpus``): each actor is placed with
    ``gpus.actor`` GPUs (a fraction shares one), and the learner's ``gpus.learner``
    are reserved in a placement group, so that actors are never packed onto the share
    the learner (in this process) uses."""

    def __init__(
        self,
        spec: ActorFactory,
        num_actors: int = 1,
        address: str | None = None,
        num_cpus: int | None = None,
        gpus: RoleGPUs | None = None,
    ) -> None:
        import ray

        gpus = gpus or RoleGPUs(0.0, 0.0, num_actors)
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray and address:  # join an existing cluster; its resources are its own
            ray.init(address=address, log_to_driver=False)
        elif self._owns_ray:  # start a local cluster
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
        self.learner_reservation: Any = None
        if gpus.learner > 0:
            from ray.util.placement_group import placement_group

            self.learner_reservation = placement_group([{"GPU": gpus.learner}])
            if not ray.get(self.learner_reservation.ready(), timeout=60):
                raise RuntimeError(
                    f"ray: could not reserve {gpus.learner:g} GPU(s) for the learner"
                )
        self.prompts: Channel = RayChannel()
        self.results: Channel = RayChannel()
        # num_cpus=0: an actor's compute is bounded by its torch threads, and reserving a
        # whole CPU per actor would stop two actors from starting on a 2-core machine.
        # max_concurrency=4: update_weights and stop must run while run() is looping.
        remote_actor = ray.remote(RayActorHost)
        # Ray's handle types do not follow Actor's methods; the handles are used untyped.
        self.actors: list[Any] = [
            remote_actor.options(num_cpus=0, num_gpus=gpus.actor, max_concurrency=4).remote(spec, i)
            for i in range(num_actors)
        ]
        self._runs: list[Any] = []

    def start(self) -> None:
        self._runs = [a.run.remote(self.prompts, self.results) for a in self.actors]

    def broadcast(self, weights: Mapping[str, torch.Tensor], version: int) -> None:
        import ray

        ref = ray.put({k: v.cpu() for k, v in weights.items()})
        ray.get([a.update_weights.remote(ref, version) for a in self.actors])

    def batch_closed(self, version: int) -> None:
        for a in self.actors:  # fire and forget: calls from one caller run in order
            a.batch_closed.remote(version)

    def check(self) -> None:
        import ray

        done, _ = ray.wait(self._runs, timeout=0, num_returns=len(self._runs))
        for ref in done:
            ray.get(ref)  # re-raises the actor's error
            raise RuntimeError("an actor stopped before it was asked to")

    def actor_stats(self) -> list[dict[str, float]]:
        import ray

        return list(ray.get([a.stats.remote() for a in self.actors]))

    def shutdown(self) -> None:
        import ray

        ray.get([a.stop.remote() for a in self.actors])
        ray.get(self._runs, timeout=60)
        ray.get([a.close.remote() for a in self.actors])
        for a in self.actors:
            ray.kill(a)
        if self.learner_reservation is not None:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(self.learner_reservation)
        if self._owns_ray:
            ray.shutdown()


def make_backend(
    name: str,
    spec: ActorFactory,
    num_actors: int,
    address: str | None = None,
    num_cpus: int | None = None,
    overlap: bool = True,
    gpus: RoleGPUs | None = None,
) -> Backend:
    """``overlap``: actors generate while the learner trains (``LocalBackend``'s
    ``share_cores``; Ray actors are processes with threads of their own)."""
    if name == "local":
        return LocalBackend(spec, num_actors, share_cores=overlap)
    if name == "ray":
        return RayBackend(spec, num_actors, address, num_cpus, gpus)
    raise ValueError(f"unknown backend {name!r}; allowed: local, ray")
