"""Dry run: validate a whole run configuration and lay out where each role runs.

``recipe-arena run ... --dry-run`` composes and validates the configuration as a run
would, then checks what a cluster launch needs beyond single-field ranges
(``launch_problems``) and prints the RL settings that define the recipe and a
placement plan (``placement_plan``): which node holds the learner's GPUs, each vLLM
actor, the LM-judge service and the code-execution workers. Nothing is started and no
GPU is needed.

Placement, node by node in units of ``cluster.gpus_per_node``: the learner's
``learner_gpus`` first, then ``rl.num_actors`` actors of ``gpus_per_actor`` GPUs packed
onto the next nodes (never across two), then the judge's ``judge_gpus``; the
``code_workers`` processes are spread over the actor nodes' CPUs, next to the actors
whose rollouts they score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from recipe_arena.config import RunConfig
from recipe_arena.core.placement import role_gpus
from recipe_arena.strategy import StrategyParams


@dataclass(frozen=True)
class Placement:
    role: str
    """learner, actor-<i>, judge or code."""
    node: int
    gpus: tuple[int, ...] = ()
    """GPU indices on ``node``."""
    cpus: int = 0
    """CPU processes (code-execution workers)."""


@dataclass(frozen=True)
class Plan:
    nodes: int
    placements: tuple[Placement, ...]

    def roles_on(self, node: int) -> list[Placement]:
        return [p for p in self.placements if p.node == node]

    def count(self, prefix: str) -> int:
        """GPUs held by roles whose name starts with ``prefix``."""
        return sum(len(p.gpus) for p in self.placements if p.role.startswith(prefix))


def rl_settings(cfg: RunConfig) -> dict[str, Any]:
    """The settings that define the RL recipe, under the names OLMo 3's report uses."""
    rl, loss = cfg.rl, cfg.loss
    return {
        "prompts x samples per step": f"{rl.prompts_per_step} x {rl.group_size}",
        "response length (tokens)": rl.max_new_tokens,
        "pipeline depth": rl.pipeline_depth,
        "max staleness (versions)": rl.max_staleness,
        "staleness": _strategy(cfg.staleness),
        "length control": _strategy(cfg.length_control),
        "ratio clip": f"[{1 - loss.clip_low:g}, {1 + loss.clip_high:g}]",
        "clip-higher": loss.clip_high,
        "learning rate": f"{rl.lr:g} {rl.lr_schedule}",
        "temperature": rl.temperature,
        "KL beta": loss.kl_beta,
        "advantage": _strategy(cfg.advantage),
        "loss normalisation": loss.normalisation,
        "zero-gradient filter / active sampling": f"{rl.zero_gradient_filter} / {rl.active_sampling}",
        "steps": rl.steps,
        "engine": f"{cfg.engine.name} (keep KV on update: {cfg.engine.keep_kv_on_update})",
        "domains": ", ".join(f"{d} {w:g}" for d, w in rl.domain_weights.items() if w > 0),
        "judge": cfg.rewards.judge_model,
        "code reward": cfg.rewards.code_reward,
    }


def _strategy(params: StrategyParams) -> str:
    """'tis (cap 2.0)': a strategy axis's option and its parameters."""
    rest = {k: v for k, v in params.model_dump().items() if k != "name"}
    if not rest:
        return params.name
    return f"{params.name} (" + ", ".join(f"{k} {v}" for k, v in rest.items()) + ")"


def launch_problems(cfg: RunConfig) -> list[str]:
    """What stops this configuration from launching as laid out, one line each."""
    c, out = cfg.cluster, []
    gpus = c.gpus_per_actor or c.learner_gpus or c.judge_gpus
    if gpus and c.backend != "ray":
        out.append(f"cluster.backend={c.backend!r}: a GPU layout needs the 'ray' backend")
    if c.gpus_per_actor and cfg.engine.name not in ("vllm", "torch"):
        out.append(f"engine.name={cfg.engine.name!r}: GPU actors serve with 'vllm' or 'torch'")
    if c.gpus_per_actor > c.gpus_per_node or (
        c.gpus_per_actor >= 1 and c.gpus_per_node % c.gpus_per_actor
    ):
        out.append(
            f"cluster.gpus_per_actor={c.gpus_per_actor}: must divide cluster.gpus_per_node="
            f"{c.gpus_per_node} (an actor never spans two nodes)"
        )
    if c.gpus_per_actor and not c.learner_gpus:
        out.append("cluster.learner_gpus=0: GPU actors need a GPU learner (set M >= 1)")
    for key in cfg.world.cluster_paths:
        if not getattr(cfg.world, key):
            out.append(
                f"world.{key} is not set: the {cfg.world.name} world reads it from the cluster"
            )
    weights = cfg.rl.domain_weights
    if (
        weights.get("chat", 0) > 0
        and c.judge_gpus
        and not cfg.rewards.judge_model.startswith("http")
    ):
        out.append(
            f"rewards.judge_model={cfg.rewards.judge_model!r}: with cluster.judge_gpus the "
            "judge is a service; give its URL (http://HOST:PORT/v1)"
        )
    if weights.get("code", 0) > 0 and c.gpus_per_actor and not c.code_workers:
        out.append("cluster.code_workers=0: GPU actors score code through the service; set >= 1")
    if cfg.rl.max_staleness + 1 < cfg.rl.pipeline_depth:
        out.append(
            f"rl.max_staleness={cfg.rl.max_staleness} < rl.pipeline_depth - 1="
            f"{cfg.rl.pipeline_depth - 1}: groups sampled that far ahead would be dropped as stale"
        )
    return out


def _gpu_block(role: str, n: float, per_node: int, node: int) -> tuple[list[Placement], int]:
    """``n`` GPUs of ``role`` from ``node`` on, filling whole nodes; (placements, next node).
    A fraction of one GPU is placed on GPU 0 of ``node``."""
    if 0 < n < 1:
        return [Placement(role, node, (0,))], node + 1
    n = int(n)
    out = []
    for k in range(math.ceil(n / per_node)):
        take = min(per_node, n - k * per_node)
        out.append(Placement(role, node + k, tuple(range(take))))
    return out, node + math.ceil(n / per_node)


def placement_plan(cfg: RunConfig) -> Plan:
    """Nodes and what runs on each (module docstring); needs ``launch_problems`` empty."""
    c = cfg.cluster
    req = role_gpus(c, cfg.rl.num_actors)  # the requests the Ray backend places
    out, node = _gpu_block("learner", req.learner, c.gpus_per_node, 0)
    if 0 < req.learner < 1 and 0 < req.actor < 1:
        node = 0  # fractional actors share the learner's node (one GPU holds both)
    first_actor_node = node
    if req.actor:
        per_node = int(c.gpus_per_node // req.actor)
        for i in range(cfg.rl.num_actors):
            n, slot = divmod(i, per_node)
            lo = int(slot * req.actor)
            gpus = tuple(range(lo, lo + max(1, int(req.actor))))
            out.append(Placement(f"actor-{i}", node + n, gpus))
        node += math.ceil(cfg.rl.num_actors / per_node)
    else:  # CPU actors: one node (this machine when nothing else is placed)
        out += [Placement(f"actor-{i}", node) for i in range(cfg.rl.num_actors)]
        node += 1
    actor_nodes = list(range(first_actor_node, node))
    judge, node = _gpu_block("judge", c.judge_gpus, c.gpus_per_node, node)
    out += judge
    for k, n in enumerate(actor_nodes):
        share = c.code_workers // len(actor_nodes) + (k < c.code_workers % len(actor_nodes))
        if share:
            out.append(Placement("code", n, cpus=share))
    return Plan(nodes=max(node, 1), placements=tuple(out))


_ENGINE_NAMES = {"vllm": "vLLM"}


def format_plan(cfg: RunConfig, plan: Plan) -> str:
    """The settings and the plan as the dry run prints them."""
    lines = [f"recipe {cfg.recipe}, world {cfg.world.name}, budget {cfg.budget.name}", ""]
    settings = rl_settings(cfg)
    width = max(len(k) for k in settings)
    lines += [f"  {k:<{width}}  {v}" for k, v in settings.items()]
    lines += [
        "",
        f"placement: {plan.nodes} node(s) x {cfg.cluster.gpus_per_node} GPUs; learner "
        f"{cfg.cluster.learner_gpus:g} GPUs, {cfg.rl.num_actors} {_ENGINE_NAMES.get(cfg.engine.name, cfg.engine.name)} actor(s) x "
        f"{cfg.cluster.gpus_per_actor:g} GPU, judge {plan.count('judge')} GPUs, "
        f"{cfg.cluster.code_workers} code worker(s)",
    ]
    for node in range(plan.nodes):
        roles = plan.roles_on(node)
        actors = [p for p in roles if p.role.startswith("actor-")]
        parts = [
            f"{p.role} GPUs {','.join(map(str, p.gpus))}"
            for p in roles
            if p.gpus and not p.role.startswith("actor-")
        ]
        if actors:
            ids = [int(p.role.split("-")[1]) for p in actors]
            parts.append(f"actors {min(ids)}-{max(ids)} ({len(actors)})")
        parts += [f"code workers {p.cpus}" for p in roles if p.role == "code"]
        lines.append(f"  node {node}: " + "; ".join(parts or ["(idle)"]))
    return "\n".join(lines)
