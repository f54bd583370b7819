"""Capping the CPU kernels of a run at one instruction set, so that an AVX-512 machine
computes the same bits as an AVX2 one, where that was measured to hold.

torch chooses its CPU kernels by the widest vector instructions the processor has
(``torch.backends.cpu.get_cpu_capability()``), and so do MKL (matrix products) and
oneDNN. Kernels of another width add floating-point numbers in another order, so one
run with one seed gives other numbers on an AVX2 and on an AVX-512 machine: a study
committed from one does not reproduce on the other from its first trained weights on.
Each library reads, when it loads, a variable that caps the set it uses (``PINS``); a
process that sets them before torch loads, and every process it starts, uses the
capped kernels.

Measured (docs/results.md, "On another processor"): the Table 9.2 study, run on an Intel
machine whose widest set is AVX2, re-run on an AMD EPYC with AVX-512: without the cap the
base model's held-out scores already differ; with it the per-question scores are
identical, and so are a row's on an AMD EPYC whose widest set is AVX2. The cap is not
enough everywhere: on an Intel Xeon with AVX-512 and AMX
(``MEASURED_TO_DIFFER``) the capped RL start already scores otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

Isa = Literal["avx2"]
"""The instruction sets a run can be capped at: AVX2, the widest set every x86-64
machine of the last decade has (Intel since 2013, AMD since 2015)."""

PINS: dict[str, dict[str, str]] = {
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",  # torch's own kernels
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",  # MKL's matrix products
        "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN's (linear layers and convolutions)
    }
}
"""The environment of each cap: the variable each library reads once, when it loads."""

CPU_FLAGS = Path("/proc/cpuinfo")
"""Where Linux lists the processor's instruction-set flags (``flags : ... avx2 ...``)."""


def pinned() -> str | None:
    """The instruction set this process's kernels are capped at (``ATEN_CPU_CAPABILITY``,
    lower case), or None when they are not. Part of every cache key (``cache.cache_key``)
    while set, so a model built with capped kernels is never served to a run without the
    cap, or the reverse, from the same cache."""
    value = os.environ.get("ATEN_CPU_CAPABILITY", "").strip().lower()
    return value or None


MKL_MODE = "MKL_CBWR"
"""The variable that puts MKL in its conditional numerical reproducibility mode (for
example ``AVX2,STRICT``). Not part of any cap: measured on an Intel Xeon with AVX-512
and AMX, its strict mode gives one micro-model training step the same bits on one thread
and on two, and an emulated Haswell the Xeon's bits, but an emulated AMD EPYC other bits
(in ``exp``, which torch computes with MKL's vector maths, in one product shape, and so
in the step: on processors not made by Intel MKL does not take the AVX2 branch); and it
builds another base model than MKL's default on the machines the committed studies were
made on (docs/results.md, "On another processor")."""


def mkl_mode() -> str | None:
    """MKL's reproducibility mode (``MKL_MODE``, upper case) when set, else None. Part of
    every cache key while set (``cache.cache_key``), so a model built in one mode is never
    served to a run in another."""
    value = os.environ.get(MKL_MODE, "").strip().upper()
    return value or None


def pin(isa: Isa) -> None:
    """Cap this process's kernels, and those of every process it starts afterwards, at
    ``isa`` (``PINS``). Torch must not have loaded yet in a process that computes with
    the cap; a process that only starts runs (``recipe-arena study``) may set it at any
    time."""
    os.environ.update(PINS[isa])


MEASURED_TO_DIFFER: dict[str, str] = {
    "amx_tile": "an Intel Xeon with AVX-512 and AMX",
}
"""Flag -> the processor that has it on which capped kernels were measured to compute
other numbers than the studies committed from other processors (docs/results.md, "On
another processor"; the one made on it, ``table_9_2_96_seeds_8-11``, it reproduces):
on an Intel Xeon of family 6, model 207 (AVX-512, AMX), under ``isa: avx2``, the RL start
of the stale-data row scored held-out code 0.72 against the committed 0.90. The base
model already differs there: MKL's matrix products at AVX2 give other bits by the
processor MKL detects and, at two threads, by how it splits them, and no setting of
MKL's found on that machine gives the committed bits. The flag marks the machine
measured, not every processor that differs. Why: a user
comparing against a committed study there is told before hours of runs, not after."""


def cpu_flags(flags_file: Path = CPU_FLAGS) -> set[str] | None:
    """This processor's instruction-set flags: the words of the first ``flags`` line of
    ``flags_file``; None where the file cannot be read or has no such line (not Linux),
    so a caller can say it could not tell."""
    try:
        text = flags_file.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return None


def cpu_has(isa: Isa, flags_file: Path = CPU_FLAGS) -> bool | None:
    """Whether this processor has ``isa``: its flag in ``flags_file``; None where the
    file cannot be read (not Linux), so the caller can say it could not tell."""
    flags = cpu_flags(flags_file)
    return None if flags is None else isa in flags


def measured_to_differ(flags_file: Path = CPU_FLAGS) -> str | None:
    """The processor of ``MEASURED_TO_DIFFER`` this one is, by its flags; None when it
    is none of them or its flags cannot be read."""
    flags = cpu_flags(flags_file) or set()
    return next((name for flag, name in MEASURED_TO_DIFFER.items() if flag in flags), None)
