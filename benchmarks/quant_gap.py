"""What shared quantisation is for: the engine-vs-trainer logprob gap with only the
rollout engine on int8 weights, against both sides on the same int8 weights
(``staleness=shared_quant``), side by side on the same rollouts.

The RL starting checkpoint (base, then SFT) samples ``--prompts`` held-out math prompts
x G through the real actor with its torch engine on int8 per-channel fake-quantised
weights. The learner then scores those rollouts: once in full precision (the gap a
trainer sees when only inference is quantised) and once on the same int8 weights. A
third row, engine and trainer both in full precision, is the floor.

Last line:
    quant_gap: mean |logp_engine - logp_trainer| = <a> engine-only int8, <b> both int8 (<a/b>x)

Run: python benchmarks/quant_gap.py [--prompts 16 --group 4 --tokens 96]
"""

from __future__ import annotations

from recipe_arena.config import RLConfig
from recipe_arena.rl_start import gap_arguments, sample_heldout_math
from recipe_arena.staleness import NoCorrectionParams, SharedQuantParams
from recipe_arena.wiring import ActorSettings, LearnerSettings, make_learner


def main() -> None:
    a = gap_arguments(__doc__.splitlines()[0], prompts=16, tokens=96)
    gaps = {}
    for engine_int8 in (True, False):
        settings = ActorSettings(  # shared quantisation's actor hook quantises the engine
            group_size=a.group,
            temperature=1.0,
            max_new_tokens=a.tokens,
            staleness=SharedQuantParams() if engine_int8 else NoCorrectionParams(),
        )
        model, batch = sample_heldout_math(a, {}, settings)
        trainers = {"full": NoCorrectionParams(), "int8": SharedQuantParams()}
        for trainer, staleness in trainers.items():
            if not engine_int8 and trainer == "int8":
                continue
            learner = make_learner(model, LearnerSettings(rl=RLConfig(), staleness=staleness))
            _, m = learner.compute_loss(batch)
            engine = "int8" if engine_int8 else "full"
            gaps[(engine, trainer)] = m
            print(
                f"engine {engine:4s} trainer {trainer:4s}: mean |dlogp| "
                f"{m['staleness/logprob_diff_mean']:.2e}, max {m['staleness/logprob_diff_max']:.2e}, "
                f"k3 KL {m['staleness/kl_engine_trainer']:.2e} over {batch.num_tokens} tokens",
                flush=True,
            )
    one = gaps[("int8", "full")]["staleness/logprob_diff_mean"]
    both = gaps[("int8", "int8")]["staleness/logprob_diff_mean"]
    print(
        f"quant_gap: mean |logp_engine - logp_trainer| = {one:.2e} engine-only int8, "
        f"{both:.2e} both int8 ({one / both:.0f}x)"
    )


if __name__ == "__main__":
    main()
