"""Write the bytecode of what a run and the tests import, once, at set-up.

Where ``PYTHONDONTWRITEBYTECODE`` is set, Python never writes ``.pyc`` files, so every
process would compile again each module it imports (about 20 s of CPU for torch,
transformers, scipy and the rest). Compiling the whole environment instead (22,000
files) takes minutes of CPU. This script runs once with writing allowed (the Makefile
unsets the variable for it alone) and imports what a run and the test suite import:
the project's own modules and the libraries they load lazily. A module that fails to
import (an optional extra not installed) is skipped.

Run: env -u PYTHONDONTWRITEBYTECODE .venv/bin/python scripts/warm_bytecode.py
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

LIBRARIES = (
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "ray",
    "sympy",
    "sympy.physics.units",  # imported by SymPy's simplify on first use (the math warm-up)
    "math_verify",
    "scipy.stats",
    "scipy.optimize",
    "statsmodels.stats.multitest",
    "matplotlib.pyplot",
    "lm_eval",
    "lm_eval.tasks",
    "wandb",
    "hydra",
    "omegaconf",
    "pydantic",
    "rich",
    "markdown_it",
    "gguf",
    "nltk",
    "reasoning_gym",
    "yaml",
    "pytest",
    "hypothesis",
    "xdist",
)
"""Libraries the project imports, lazily or at the top of its modules."""


def main() -> int:
    t0 = time.perf_counter()
    sys.dont_write_bytecode = False
    names = list(LIBRARIES)
    import recipe_arena

    names += [
        m.name
        for m in pkgutil.walk_packages(recipe_arena.__path__, "recipe_arena.")
        if not m.name.endswith("__main__")
    ]
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # an optional extra (vllm) or a CUDA-only part
            failed.append(name)
    print(
        f"bytecode of {len(sys.modules)} modules written in {time.perf_counter() - t0:.0f} s"
        + (f" ({len(failed)} not importable here: {', '.join(failed[:5])})" if failed else ""),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
