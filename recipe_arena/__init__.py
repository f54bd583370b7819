"""recipe-arena: a fair arena for frontier LLM post-training recipes."""

import contextlib
import os
import sys
from collections.abc import Iterator

__version__ = "0.1.0"

# OpenMP threads that wait for each other sleep instead of spinning. Set here, at the
# package's import, because the OpenMP runtime reads it once, when torch loads it. The
# actor and the learner share one process and the machine's cores, and every other job
# on the machine competes for them: a spinning thread then holds a core its peer needs,
# and each parallel region waits out a scheduler time slice. A value set by the user is
# kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def offline_env() -> None:
    """Nothing may reach a model hub at run time: HF offline switches (set before
    transformers, datasets or lm-eval are imported), tokenizers single-threaded."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@contextlib.contextmanager
def hidden_modules(names: tuple[str, ...]) -> Iterator[None]:
    """Within the block, importing any of ``names`` that is not imported yet fails with
    ImportError (``sys.modules[name] = None``, which ``importlib.util.find_spec`` also
    reads as absent); afterwards they import as usual. For libraries that import a
    heavy optional package at their own import for a feature recipe-arena never uses."""
    added = [n for n in names if n not in sys.modules]
    for n in added:
        sys.modules[n] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for n in added:
            if sys.modules.get(n, ...) is None:
                del sys.modules[n]
