"""How often a smoke-sized RL-Zero base model answers math right under the simple template.

Trains one base model with the olmo3_rl_zero recipe at budget=smoke plus the overrides
given (into a temporary folder, not the cache), then samples 4 responses of up to 32
tokens (the smoke RL length) at temperature 1 to each of 16 train-split math prompts in
the simple template, and prints the share the math verifier finds an answer in and the
share that is right. A right share near 0 means RL-Zero's smoke run sees no reward that
varies within a group.

    python benchmarks/rl_zero_smoke_base.py base.steps=160
    python benchmarks/rl_zero_smoke_base.py base.steps=80 base.plain_fraction=1.0
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch


def main(overrides: list[str]) -> None:
    from recipe_arena.compose import load_config
    from recipe_arena.data.micro import generate_split
    from recipe_arena.data.templates import encode_messages
    from recipe_arena.models.factory import load_checkpoint
    from recipe_arena.rewards.math_answer import extract_answer
    from recipe_arena.stages.base import _train

    cfg = load_config(["recipe=olmo3_rl_zero", "budget=smoke", *overrides])
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        _train(cfg, None, Path(tmp))
        seconds = time.time() - t0
        model, tok = load_checkpoint(Path(tmp))
    torch.manual_seed(0)
    answered = right = total = 0
    for row in generate_split("math", "train", 16, 5):
        ids = encode_messages(tok, [m.model_dump() for m in row.messages], "simple")
        prompt_1T = torch.tensor([ids])
        out_ST = model.generate(
            prompt_1T,
            max_new_tokens=32,
            do_sample=True,
            num_return_sequences=4,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
        for seq_T in out_ST:
            text = tok.decode(seq_T[len(ids) :], skip_special_tokens=False)
            answer, _ = extract_answer(text.replace(tok.pad_token, "").replace(tok.eos_token, ""))
            total += 1
            answered += answer is not None
            right += answer == row.ground_truth
    print(
        f"rl_zero_smoke_base: answered {answered / total:.3f}, right {right / total:.3f} "
        f"of {total}, base {cfg.base.steps} steps in {seconds:.1f} s ({' '.join(overrides)})"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
