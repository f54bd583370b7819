"""The shape of the seed's Table 9.1 on this machine: throughput as each OlmoRL
infrastructure change is added, in one run.

    OLMo 2 baseline           synchronous (generate a batch, then train on it), static batching
    + continuous batching     finished sequences' slots are backfilled at once
    + better threading        actors keep generating while the learner trains
                              (pipeline_depth 2, max_staleness 1); a weight update waits
                              until the actor has finished what it is generating
    + in-flight updates       the update lands between two decode steps, nothing drains
                              (OLMo 3, this project's default)

Every row runs the same RL loop (``core.loop.train``) with the OLMo 3 recipe's settings
(``stages.rlvr`` builds them from the config, as a run does) for the same steps of N
prompts x G rollouts on the same model, prompts and verifiers, with zero-gradient
filtering off so that every row trains the same number of groups. Response lengths are fixed per sample
(``ignore_eos``) from a long-tailed distribution shaped like OLMo 3's (log-normal,
capped at ``--tokens``, capped mean 45% of the cap as 14.6K is of 32K): the same
workload in every row, and a random-weight model needs no training to produce it. The
G samples of a prompt are decoded as G requests so that their lengths differ.

Reported per row: generated tokens per second over the wall time (the table's
"tokens per second"), and memory-bandwidth utilisation (MBU): the bytes decoding must
read (weights once per decode step + keys/values of every attended position) per
second of wall time, over this machine's read bandwidth measured in the same run.

Run: python benchmarks/table_9_1.py [--steps 6 --prompts 8 --group 4 --tokens 128]
Last line: ``table_9_1: <r1> -> <r2> -> <r3> -> <r4> tok/s (x<r4/r1>)``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

# run as a script, benchmarks/ is on the path: the length distribution is batching_waste's
from batching_waste import lognormal_mu  # type: ignore[import-not-found]
from scipy import stats

from recipe_arena.compose import load_config
from recipe_arena.config import RunConfig
from recipe_arena.core.backends import LocalBackend, threads_per_op
from recipe_arena.core.loop import train
from recipe_arena.core.prompts import PromptSource
from recipe_arena.data.micro import generate_split
from recipe_arena.engines.base import Completion, GenerationRequest
from recipe_arena.models.factory import TinyModelSpec, build_micro, load_checkpoint, save_checkpoint
from recipe_arena.wiring import actor_spec, learner_settings, loop_settings, make_learner

MODELS = {
    "micro": TinyModelSpec(),
    "medium": TinyModelSpec(hidden_size=512, num_layers=8, num_heads=8, intermediate_size=1536),
}
LENGTH_SIGMA = 0.75
MEAN_FRACTION = 14628 / 32768


@dataclasses.dataclass(frozen=True)
class Row:
    label: str
    mode: str
    depth: int
    staleness: int
    in_flight: bool


ROWS = [
    Row("OLMo 2 baseline (sync, static)", "static", 1, 0, False),
    Row("+ continuous batching", "continuous", 1, 0, False),
    Row("+ better threading (async)", "continuous", 2, 1, False),
    Row("+ in-flight updates (OLMo 3)", "continuous", 2, 1, True),
]


@functools.cache
def _mu(cap: int) -> float:
    return lognormal_mu(LENGTH_SIGMA, cap, MEAN_FRACTION * cap)


def forced_length(seed: int, index: int, cap: int) -> int:
    """A deterministic draw from the capped log-normal whose capped mean is
    MEAN_FRACTION x cap (the distribution of batching_waste.py)."""
    mu = _mu(cap)
    u = (np.random.default_rng([seed, index]).random() * 0.999998) + 1e-6
    return int(min(cap, max(1, round(math.exp(mu + LENGTH_SIGMA * stats.norm.ppf(u))))))


class ShapedEngine:
    """Wraps the actor's engine: each request's G samples become G requests of forced
    lengths (ids ``<id>#<i>``, mapped back on the way out). With ``in_flight=False`` a
    weight update drains the engine first: requests submitted meanwhile are held back
    (the actor keeps collecting completions), the update waits until nothing is
    decoding, then the held requests go in. The decode counters are kept when the
    engine closes, for MBU."""

    def __init__(self, inner: Any, cap: int, in_flight: bool) -> None:
        self.inner = inner
        self.cap = cap
        self.in_flight = in_flight
        self.final_stats: Any = None
        self._lock = threading.Lock()
        self._busy = 0
        self._draining = False
        self._held: list[GenerationRequest] = []

    def submit(self, request: GenerationRequest) -> None:
        s = request.sampling
        for i in range(s.n):
            length = forced_length(s.seed or 0, i, self.cap)
            sub = dataclasses.replace(
                s, n=1, max_new_tokens=length, ignore_eos=True, seed=(s.seed or 0) * 1009 + i
            )
            req = GenerationRequest(f"{request.request_id}#{i}", request.prompt_tokens, sub)
            with self._lock:
                self._busy += 1
                if self._draining:
                    self._held.append(req)
                    continue
            self.inner.submit(req)

    def get(self, timeout: float | None = None) -> Completion | None:
        c = self.inner.get(timeout=timeout)
        if c is None:
            return None
        with self._lock:
            self._busy -= 1
        rid, i = c.request_id.rsplit("#", 1)
        return dataclasses.replace(c, request_id=rid, sample_index=int(i))

    def update_weights(self, state_dict: Any, version: int) -> None:
        if self.in_flight:
            self.inner.update_weights(state_dict, version)
            return
        with self._lock:
            self._draining = True
        while True:  # wait until every request admitted before the update is done
            with self._lock:
                if self._busy == len(self._held):
                    break
            time.sleep(0.002)
        self.inner.update_weights(state_dict, version)
        with self._lock:
            held, self._held, self._draining = self._held, [], False
        for req in held:
            self.inner.submit(req)

    def close(self) -> None:
        self.final_stats = self.inner.stats()
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def row_config(row: Row, a: argparse.Namespace) -> RunConfig:
    """The recipe's config with the row's batching and pipelining and the benchmark's
    workload; every group trained (zero-gradient filtering and active sampling off)."""
    return load_config(
        [
            f"rl.steps={a.steps}",
            f"rl.prompts_per_step={a.prompts}",
            f"rl.group_size={a.group}",
            f"rl.max_new_tokens={a.tokens}",
            f"rl.pipeline_depth={row.depth}",
            f"rl.max_staleness={row.staleness}",
            "rl.zero_gradient_filter=false",
            "rl.active_sampling=false",
            f"engine.mode={row.mode}",
            f"engine.max_batch_size={a.prompts * a.group}",
            "rewards.workers=1",
        ]
    )


def run_row(row: Row, init: Path, threads: int, a: argparse.Namespace) -> dict[str, float]:
    torch.set_num_threads(threads)
    cfg = row_config(row, a)
    rows = generate_split("math", "train", 400, seed=0)
    model, tok = load_checkpoint(init)
    learner = make_learner(model, learner_settings(cfg))
    backend = LocalBackend(actor_spec(cfg, init, 0), share_cores=False)  # threads set above
    actor = backend.actors[0]
    shaped = ShapedEngine(actor.engine, a.tokens, row.in_flight)
    actor.engine = shaped
    source = PromptSource(rows, {"math": 1.0}, seed=0)
    t0 = time.perf_counter()
    records = train(learner, backend, source, loop_settings(cfg, int(tok.pad_token_id)))
    wall = time.perf_counter() - t0
    st = shaped.final_stats
    weight_bytes = sum(p.numel() * p.element_size() for p in shaped.inner.model.parameters())
    kv_bytes = st.extra["kv_positions_read"] * shaped.inner.runner.kv_bytes_per_position()
    read = st.extra["steps"] * weight_bytes + kv_bytes
    return {
        "wall": wall,
        "tokens": float(records[-1].metrics["throughput/actor_tokens"]),
        "read_gbs": read / wall / 1e9,
        "idle": sum(
            r.metrics["throughput/learner_idle_frac"] * r.metrics["throughput/step_time_s"]
            for r in records
        )
        / wall,
    }


def read_bandwidth_gbs() -> float:
    """Best of 7 sums over a 256 MiB fp32 tensor: bytes read per second."""
    x = torch.ones(64 * 1024 * 1024)
    x.sum()
    best = math.inf
    for _ in range(7):
        t0 = time.perf_counter()
        x.sum()
        best = min(best, time.perf_counter() - t0)
    return x.numel() * 4 / best / 1e9


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=list(MODELS), default="micro")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--tokens", type=int, default=128, help="response cap (32K in OLMo 3)")
    p.add_argument("--sync-threads", type=int, default=torch.get_num_threads())
    p.add_argument("--async-threads", type=int, default=threads_per_op(torch.get_num_threads(), 1))
    a = p.parse_args()
    torch.set_num_threads(a.sync_threads)
    bw = read_bandwidth_gbs()
    print(
        f"model {a.model}; {a.steps} steps x {a.prompts} prompts x G={a.group}; lengths capped at "
        f"{a.tokens}, mean ~{MEAN_FRACTION * a.tokens:.0f}; read bandwidth {bw:.1f} GB/s"
    )
    results = []
    with tempfile.TemporaryDirectory() as d:
        model, tok = build_micro(MODELS[a.model], seed=0)
        init = save_checkpoint(model, tok, Path(d) / "init")
        # warm-up (not reported): the verifier worker pool and first-call costs are paid
        # once per process, and would otherwise fall on the first row
        run_row(ROWS[0], init, a.sync_threads, argparse.Namespace(**{**vars(a), "steps": 1}))
        for row in ROWS:
            threads = a.sync_threads if row.depth == 1 else a.async_threads
            r = run_row(row, init, threads, a)
            results.append(r)
            print(
                f"{row.label:32s} {r['tokens'] / r['wall']:8.0f} tok/s  MBU {100 * r['read_gbs'] / bw:5.1f}%  "
                f"({r['tokens']:.0f} tokens in {r['wall']:.1f} s, learner idle {r['idle']:.0%})",
                flush=True,
            )
    rates = [r["tokens"] / r["wall"] for r in results]
    print(
        "table_9_1: "
        + " -> ".join(f"{x:.0f}" for x in rates)
        + f" tok/s (x{rates[-1] / rates[0]:.2f})"
    )


if __name__ == "__main__":
    main()
