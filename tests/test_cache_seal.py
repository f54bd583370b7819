"""Cache entries an attacker, a bad disk or a killed process could leave: every entry
is sealed (SHA-256 and size of each file, written last), verified when used, and built
again with one line on stderr when it fails. Through the paths a run takes: the base
model (``train_base``), the micro judge, the compiled sandbox harness and a checkpoint's
cached evaluation. ``test_hostile_cache_suite`` prints
``hostile cache suite: N attempts, M contained, K failed``.

Before: a flipped byte that made one base weight NaN was trained on silently (NaN
loss), a zero-length weight file failed every run with a traceback and was never
rebuilt, and a zero-length compiled harness broke every code check."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from recipe_arena.cache import (
    SEAL,
    build_cached,
    entry_problem,
    read_json_checked,
    write_json_atomic,
)
from recipe_arena.compose import load_config


def _nan_first_f32(weights: Path) -> str:
    """Overwrite the first element of the first float32 tensor of a safetensors file
    with a quiet NaN (bytes 00 00 c0 7f, little-endian 0x7fc00000); the file keeps its
    size. Format: 8-byte little-endian header length, JSON header of name ->
    {dtype, shape, data_offsets}, then the data. Returns the tensor's name."""
    data = bytearray(weights.read_bytes())
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    name, info = next(
        (k, v) for k, v in sorted(header.items()) if k != "__metadata__" and v["dtype"] == "F32"
    )
    start = 8 + n + info["data_offsets"][0]
    data[start : start + 4] = b"\x00\x00\xc0\x7f"
    weights.write_bytes(bytes(data))
    return str(name)


def _weights(entry: Path) -> Path:
    return next(entry.glob("*.safetensors"))


CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "one weight NaN": lambda e: _nan_first_f32(_weights(e)) and None,
    "zero-length weights": lambda e: _weights(e).write_bytes(b""),
    "weights deleted": lambda e: _weights(e).unlink(),
    "bytes appended": lambda e: _weights(e).open("ab").write(b"\0" * 16) and None,
    "config.json truncated": lambda e: (e / "config.json").write_text("{"),
    "seal deleted": lambda e: (e / SEAL).unlink(),
    "seal truncated": lambda e: (e / SEAL).write_text('{"files": {"mod'),
    "seal lists a path outside": lambda e: (e / SEAL).write_text(
        json.dumps({"files": {"../../outside.txt": [4, hashlib.sha256(b"mine").hexdigest()]}})
    ),
}


@pytest.fixture(scope="module")
def base_cfg(tmp_path_factory: pytest.TempPathFactory):
    """A 5-step base model in a cache folder of its own (seconds to train)."""
    cache = tmp_path_factory.mktemp("cache")
    return load_config(["budget=smoke", "base.steps=5", f"world.cache_dir={cache}"])


@pytest.mark.parametrize(
    "case", ["one weight NaN", "zero-length weights", "seal deleted", "seal lists a path outside"]
)
def test_corrupt_base_model_is_reported_and_rebuilt(capfd, base_cfg, case: str) -> None:
    """``train_base`` builds and seals the cached base model; the corruption is applied
    to the entry; the next ``train_base`` (the next run) reports the entry in one line
    naming what failed, builds it again, and returns a checkpoint whose every weight is
    finite and whose seal verifies. ``outside.txt`` beside the cache, named by a forged
    seal, is only ever read. (Every corruption of ``CORRUPTIONS`` is tried on a cheaper
    entry in ``test_hostile_cache_suite``.)"""
    from recipe_arena.models.factory import load_checkpoint
    from recipe_arena.stages.base import train_base

    entry = train_base(base_cfg, None)
    outside = entry.parents[1] / "outside.txt"
    outside.write_text("mine")
    assert entry_problem(entry) is None
    CORRUPTIONS[case](entry)
    capfd.readouterr()
    assert train_base(base_cfg, None) == entry
    err = capfd.readouterr().err
    lines = [x for x in err.splitlines() if "cache entry" in x]
    assert len(lines) == 1 and str(entry) in lines[0] and "corrupt" in lines[0], err
    assert entry_problem(entry) is None and outside.read_text() == "mine"
    model, _ = load_checkpoint(entry)
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_seal_lists_every_file_with_its_sha256(tmp_path: Path) -> None:
    """An entry of two files: the seal holds each relative path with its size and the
    SHA-256 of its bytes (of b"ok", computed here independently); a file added after
    sealing (a checkpoint's cached evaluation) is not sealed and does not fail it."""
    entry = tmp_path / "k"

    def build(tmp: Path) -> None:
        (tmp / "a").write_bytes(b"ok")
        (tmp / "d").mkdir()
        (tmp / "d" / "b").write_bytes(b"")

    build_cached(entry, build)
    files = json.loads((entry / SEAL).read_text())["files"]
    assert files == {
        "a": [2, hashlib.sha256(b"ok").hexdigest()],
        "d/b": [0, hashlib.sha256(b"").hexdigest()],
    }
    (entry / "eval-x.json").write_text("{}")
    assert entry_problem(entry) is None


@pytest.mark.parametrize("kind", ["symlink to a folder outside", "a plain file", "unsealed"])
def test_an_entry_that_is_not_a_sealed_folder_is_replaced(capfd, tmp_path: Path, kind: str) -> None:
    """The entry path holds a link to a folder outside the cache, a plain file, or a
    folder built by an older version (no seal): it is reported, moved aside (a link is
    moved as a link: the outside folder keeps its file) and built again."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("mine")
    entry = tmp_path / "cache" / "k"
    entry.parent.mkdir()
    if kind.startswith("symlink"):
        entry.symlink_to(outside)
    elif kind == "a plain file":
        entry.write_text("x")
    else:
        entry.mkdir()
        (entry / "model.safetensors").write_bytes(b"")
    calls: list[Path] = []
    build_cached(entry, lambda tmp: (calls.append(tmp), (tmp / "done").write_text("ok")))
    assert len(calls) == 1 and (entry / "done").read_text() == "ok" and not entry.is_symlink()
    assert "corrupt" in capfd.readouterr().err
    assert sorted(p.name for p in outside.iterdir()) == ["data.txt"]


def test_corrupt_micro_judge_is_rebuilt(capfd, tmp_path: Path) -> None:
    """The micro judge's cache entry (2 optimiser steps here) with a zero-length weight
    file: the next request reports it and trains it again, and the checkpoint loads."""
    from recipe_arena.models.factory import load_checkpoint
    from recipe_arena.rewards.micro_judge import micro_judge_checkpoint

    cfg = load_config(["budget=smoke", "rewards.micro_judge.steps=2"]).rewards.micro_judge
    entry = micro_judge_checkpoint(cfg, str(tmp_path))
    _weights(entry).write_bytes(b"")
    capfd.readouterr()
    assert micro_judge_checkpoint(cfg, str(tmp_path)) == entry
    assert "corrupt" in capfd.readouterr().err
    load_checkpoint(entry)


HARNESS_DAMAGE: dict[str, Callable[[Path], None]] = {
    "zero-length": lambda p: p.write_bytes(b""),
    "same length, garbage": lambda p: p.write_bytes(os.urandom(p.stat().st_size)),
    "deleted": lambda p: p.unlink(),
    "a Python file that scores 1": lambda p: p.write_bytes(b"print('T 1'); print('R 0 1')"),
}


@pytest.mark.parametrize("case", list(HARNESS_DAMAGE))
def test_damaged_compiled_harness_is_rebuilt(capfd, tmp_path: Path, monkeypatch, case: str) -> None:
    """A correct program scores 1 and a wrong one 0; the cached compiled harness is
    damaged; a new process (the harness path is memoised per process, so its cache is
    cleared here) reports the entry, compiles it again, and the two programs score 1
    and 0 again. A zero-length harness broke every code check until deleted by hand."""
    from recipe_arena.rewards import sandbox
    from recipe_arena.rewards.code import check_code
    from recipe_arena.rewards.sandbox import Limits

    monkeypatch.setenv("RECIPE_ARENA_CACHE", str(tmp_path))
    lim = Limits(wall_s=5.0, cpu_s=5, allow_weak=True)
    tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]
    good = "```python\ndef add(a, b):\n    return a + b\n```"
    bad = "```python\ndef add(a, b):\n    return 0\n```"
    sandbox._harness_file.cache_clear()
    try:
        assert check_code(tests, good, all_pass=True, limits=lim)[0] == 1.0
        harness = Path(sandbox._harness_file())
        assert harness.is_relative_to(tmp_path)
        HARNESS_DAMAGE[case](harness)
        sandbox._harness_file.cache_clear()
        capfd.readouterr()
        assert check_code(tests, good, all_pass=True, limits=lim)[0] == 1.0
        assert check_code(tests, bad, all_pass=True, limits=lim)[0] == 0.0
        assert "corrupt" in capfd.readouterr().err
    finally:
        sandbox._harness_file.cache_clear()


EVAL_DAMAGE: dict[str, Callable[[Path], None]] = {
    "a digit changed": lambda p: p.write_text(p.read_text().replace("0.25", "0.75")),
    "truncated": lambda p: p.write_text(p.read_text()[:20]),
    "zero-length": lambda p: p.write_text(""),
    "no checksum (older version)": lambda p: p.write_text('{"metrics": {}, "scores": []}'),
    "nested 100000 deep": lambda p: p.write_text("[" * 100000 + "]" * 100000),
}


@pytest.mark.parametrize("case", list(EVAL_DAMAGE))
def test_damaged_cached_evaluation_is_computed_again(capfd, tmp_path: Path, case: str) -> None:
    """``write_json_atomic`` stores a mapping with the SHA-256 of its canonical JSON;
    ``read_json_checked`` returns it unchanged, and after any damage returns None (the
    evaluation is then run again) with one line on stderr, never a wrong value."""
    path = tmp_path / "eval-k.json"
    value = {"metrics": {"eval/math/pass@1": 0.25}, "scores": [0.0, 1.0]}
    write_json_atomic(path, value)
    assert read_json_checked(path) == value
    EVAL_DAMAGE[case](path)
    assert read_json_checked(path) is None
    assert "corrupt" in capfd.readouterr().err


@functools.cache
def _tiny() -> tuple[Any, Any]:
    from recipe_arena.models.factory import TinyModelSpec, build_micro

    spec = TinyModelSpec(
        hidden_size=32, num_layers=1, num_heads=1, intermediate_size=64, max_position_embeddings=64
    )
    return build_micro(spec, seed=0)


def _save_tiny(out: Path) -> None:
    """An untrained one-layer micro model and its tokenizer (what a cached model entry
    holds, without the seconds of training)."""
    model, tok = _tiny()
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)


def test_hostile_cache_suite(capfd, tmp_path: Path) -> None:
    """Every corruption above of a model entry (a tiny untrained model, built through
    ``build_cached`` as the base and judge models are), of the harness entry's compiled
    file and of a cached evaluation, once more, counted: contained when the next use
    reports it and gets a verified (or recomputed) value."""
    failed: dict[str, str] = {}
    attempts = 0
    for name, corrupt in CORRUPTIONS.items():
        attempts += 1
        entry = build_cached(tmp_path / "model", _save_tiny)
        (entry.parent / "outside.txt").write_text("mine")
        corrupt(entry)
        capfd.readouterr()
        ok = build_cached(entry, _save_tiny) == entry and entry_problem(entry) is None
        if not ok or "corrupt" not in capfd.readouterr().err:
            failed[name] = "model entry"
    for name, damage in HARNESS_DAMAGE.items():
        attempts += 1
        entry = tmp_path / "sandbox" / "harness"
        build_cached(entry, lambda t: (t / "harness.pyc").write_bytes(b"compiled"))
        damage(entry / "harness.pyc")
        capfd.readouterr()
        build_cached(entry, lambda t: (t / "harness.pyc").write_bytes(b"compiled"))
        if (
            entry / "harness.pyc"
        ).read_bytes() != b"compiled" or "corrupt" not in capfd.readouterr().err:
            failed[name] = "harness entry"
    for name, damage in EVAL_DAMAGE.items():
        attempts += 1
        path = tmp_path / "eval.json"
        write_json_atomic(path, {"metrics": {"a": 0.25}, "scores": [1.0]})
        damage(path)
        if read_json_checked(path) is not None:
            failed[name] = "cached evaluation"
    with capfd.disabled():
        print(
            f"\nhostile cache suite: {attempts} attempts, {attempts - len(failed)} contained, "
            f"{len(failed)} failed"
        )
    assert not failed, failed
