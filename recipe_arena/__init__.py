"""recipe-arena: a fair arena for frontier LLM post-training recipes."""

import os

__version__ = "0.1.0"


def offline_env() -> None:
    """Nothing may reach a model hub at run time: HF offline switches (set before
    transformers, datasets or lm-eval are imported), tokenizers single-threaded."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
