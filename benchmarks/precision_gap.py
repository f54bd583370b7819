"""The engine/trainer logprob gap per precision setting, side by side on the same
prompts: the engine in float32, bfloat16 or float16, with or without its LM head in
float32 (``engine.dtype``, ``engine.lm_head_fp32``), scored by a float32 trainer and by
a trainer under bfloat16 or float16 autocast, with or without its LM head in float32
(``rl.bf16``, ``rl.fp16``, ``rl.lm_head_fp32``).

The RL starting checkpoint (base, then SFT) samples ``--prompts`` held-out math prompts
x G through the real actor and its torch engine at each engine setting; the learner
then scores those rollouts at each trainer setting (``Learner.compute_loss``), and the
run's mismatch metrics are printed: mean |logp_engine - logp_trainer|, the k3 estimate
of KL(engine || trainer) and the chi-square of the token ratio (``staleness.mismatch``).
The last column is the mean |dlogp| against the bfloat16 engine scored in float32
(the GPU default), so < 1 is a smaller gap.

Last line:
    precision_gap: mean |dlogp| bf16 <a>, fp16 <b> (<a/b>x), bf16 + fp32 head <c> (<a/c>x)

Run: python benchmarks/precision_gap.py [--prompts 8 --group 4 --tokens 64]
"""

from __future__ import annotations

from recipe_arena.config import RLConfig
from recipe_arena.rl_start import gap_arguments, sample_heldout_math
from recipe_arena.wiring import ActorSettings, LearnerSettings, make_learner

ENGINES = {
    "fp32": {"dtype": "float32"},
    "bf16": {"dtype": "bfloat16"},
    "bf16+head32": {"dtype": "bfloat16", "lm_head_fp32": True},
    "fp16": {"dtype": "float16"},
    "fp16+head32": {"dtype": "float16", "lm_head_fp32": True},
}
"""Engine settings (``engine.*``)."""
TRAINERS = {
    "fp32": ({}, False),
    "bf16": ({}, True),
    "bf16+head32": ({"lm_head_fp32": True}, True),
    "fp16": ({"fp16": True}, False),
    "fp16+head32": ({"fp16": True, "lm_head_fp32": True}, False),
}
"""Trainer settings: (``rl.*`` overrides, bfloat16 autocast on)."""
PAIRS = [
    ("fp32", "fp32"),
    ("bf16", "fp32"),
    ("bf16+head32", "fp32"),
    ("fp16", "fp32"),
    ("fp16+head32", "fp32"),
    ("bf16", "bf16"),
    ("bf16+head32", "bf16+head32"),
    ("fp16", "fp16"),
    ("fp16+head32", "fp16+head32"),
]
"""(engine, trainer) rows, in print order."""


def main() -> None:
    a = gap_arguments(__doc__.splitlines()[0], prompts=8, tokens=64)
    settings = ActorSettings(group_size=a.group, temperature=1.0, max_new_tokens=a.tokens)
    gaps: dict[tuple[str, str], dict[str, float]] = {}
    for engine in dict.fromkeys(e for e, _ in PAIRS):
        model, batch = sample_heldout_math(a, ENGINES[engine], settings)
        for trainer in (t for e, t in PAIRS if e == engine):
            overrides, bf16 = TRAINERS[trainer]
            learner = make_learner(model, LearnerSettings(rl=RLConfig(**overrides), bf16=bf16))
            _, m = learner.compute_loss(batch)
            gaps[(engine, trainer)] = m
            gaps[(engine, trainer)]["tokens"] = float(batch.num_tokens)
    ref = gaps[("bf16", "fp32")]["staleness/logprob_diff_mean"]
    print(
        f"{'engine':12s} {'trainer':12s} {'mean|dlogp|':>11s} {'max|dlogp|':>10s} "
        f"{'k3 KL':>9s} {'chi2':>9s} {'vs bf16/fp32':>12s}"
    )
    for engine, trainer in PAIRS:
        m = gaps[(engine, trainer)]
        d = m["staleness/logprob_diff_mean"]
        print(
            f"{engine:12s} {trainer:12s} {d:11.2e} {m['staleness/logprob_diff_max']:10.2e} "
            f"{m['staleness/k3_kl']:9.1e} {m['staleness/chi2_token']:9.1e} {d / ref:11.3f}x",
            flush=True,
        )
    bf16 = ref
    fp16 = gaps[("fp16", "fp32")]["staleness/logprob_diff_mean"]
    head = gaps[("bf16+head32", "fp32")]["staleness/logprob_diff_mean"]
    print(
        f"precision_gap: mean |dlogp| bf16 {bf16:.2e}, fp16 {fp16:.2e} ({bf16 / fp16:.1f}x), "
        f"bf16 + fp32 head {head:.2e} ({bf16 / head:.2f}x)"
    )


if __name__ == "__main__":
    main()
