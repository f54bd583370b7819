"""Capping the CPU kernels at one instruction set (``recipe_arena.cpu_isa``): the cap
reaches torch in the processes a study starts, and cached models built under it are
keyed apart from those built without it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recipe_arena import cpu_isa
from recipe_arena.cache import CODE_VERSION, cache_key
from recipe_arena.compare import child_env
from recipe_arena.study import pin_kernels

HAS_AVX2 = cpu_isa.cpu_has("avx2") is True


def _clear(monkeypatch: pytest.MonkeyPatch) -> None:
    """No cap in this process; whatever the test sets (``pin`` included) is undone after
    it: each variable is set through monkeypatch first, which restores it."""
    for var in [*cpu_isa.PINS["avx2"], cpu_isa.MKL_MODE]:
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)


def test_the_cache_key_holds_the_cap_only_while_one_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without a cap the key is the hash it always was (sha256 of the sorted JSON of the
    code version and the parts, first 16 hex digits), so existing cache entries keep
    their keys; with one, the same parts give another key, so a base model trained with
    AVX-512 kernels is never served to a run capped at AVX2."""
    _clear(monkeypatch)
    parts = {"world": "micro", "steps": 400}
    blob = json.dumps({"code": CODE_VERSION, **parts}, sort_keys=True, default=str)
    assert cache_key(parts) == hashlib.sha256(blob.encode()).hexdigest()[:16]
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "AVX2")
    capped = json.dumps({"code": CODE_VERSION, **parts, "isa": "avx2"}, sort_keys=True)
    assert cpu_isa.pinned() == "avx2"
    assert cache_key(parts) == hashlib.sha256(capped.encode()).hexdigest()[:16]
    assert cache_key(parts) != hashlib.sha256(blob.encode()).hexdigest()[:16]


def test_the_cache_key_holds_mkls_reproducibility_mode_only_while_one_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MKL's strict reproducible mode computes other bits than its default (measured on
    the base stage's products), so a model built under ``MKL_CBWR`` gets a key of its
    own, beside the cap's, and without it the key stays the one it was."""
    _clear(monkeypatch)
    parts = {"world": "micro", "steps": 400}
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    plain = json.dumps({"code": CODE_VERSION, **parts, "isa": "avx2"}, sort_keys=True)
    assert cpu_isa.mkl_mode() is None
    assert cache_key(parts) == hashlib.sha256(plain.encode()).hexdigest()[:16]
    monkeypatch.setenv("MKL_CBWR", "avx2,strict")
    both = {"code": CODE_VERSION, **parts, "isa": "avx2", "mkl_cbwr": "AVX2,STRICT"}
    assert cpu_isa.mkl_mode() == "AVX2,STRICT"
    want = hashlib.sha256(json.dumps(both, sort_keys=True).encode()).hexdigest()[:16]
    assert cache_key(parts) == want


def test_cpu_has_reads_the_flags_line(tmp_path: Path) -> None:
    """The ``flags`` line of /proc/cpuinfo decides; a whole word, not a prefix (avx512f
    does not mean avx2); no file: cannot tell."""
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n")
    assert cpu_isa.cpu_has("avx2", info) is True
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2x avx512f\n")
    assert cpu_isa.cpu_has("avx2", info) is False
    assert cpu_isa.cpu_has("avx2", tmp_path / "missing") is None


def test_a_study_warns_on_a_processor_where_the_cap_was_measured_not_to_reproduce(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On an AVX2 processor the study says where the cap was measured to reproduce; on
    one with AMX (the Intel Xeon whose capped RL start scored code 0.72 against the
    committed 0.90) it warns that its runs will not reproduce the studies made elsewhere,
    though it has AVX2, and names the one made on such a machine; a flag that only
    starts with ``amx`` does not count."""
    _clear(monkeypatch)
    info = tmp_path / "cpuinfo"
    info.write_text("flags\t\t: fpu sse2 avx avx2 fma avx512f\n")
    pin_kernels("avx2", info)
    said = capsys.readouterr().err
    assert "measured to give the same numbers" in said and "warning" not in said
    info.write_text("flags\t\t: fpu avx2 avx512f amx_bf16 amx_tile amx_int8\n")
    assert cpu_isa.measured_to_differ(info) == "an Intel Xeon with AVX-512 and AMX"
    pin_kernels("avx2", info)
    said = capsys.readouterr().err
    assert said.startswith("study: warning: CPU kernels capped at avx2, but on an Intel Xeon")
    assert "will not reproduce" in said and "table_9_2_96_seeds_8-11" in said
    info.write_text("flags\t\t: fpu avx2 amx_tilex\n")
    assert cpu_isa.measured_to_differ(info) is None
    assert cpu_isa.measured_to_differ(tmp_path / "missing") is None


@pytest.mark.skipif(not HAS_AVX2, reason="the cap needs a processor with AVX2")
def test_a_study_caps_the_kernels_of_the_runs_it_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After ``pin_kernels`` (what ``recipe-arena study`` does for a file with ``isa:
    avx2``) a child started with the runs' environment (``compare.child_env``) runs
    torch's AVX2 kernels, whatever the processor's widest set; MKL and oneDNN get their
    caps too. A child started without the cap reports the machine's own set, which is
    AVX2 or wider."""
    _clear(monkeypatch)
    probe = [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"]
    native = subprocess.run(probe, env=child_env(1, 1), capture_output=True, text=True, check=True)
    assert native.stdout.strip() in ("AVX2", "AVX512")
    pin_kernels("avx2")
    assert "capped at avx2" in capsys.readouterr().err
    env = child_env(2, 1)
    assert {k: env[k] for k in cpu_isa.PINS["avx2"]} == cpu_isa.PINS["avx2"]
    capped = subprocess.run(probe, env=env, capture_output=True, text=True, check=True)
    assert capped.stdout.strip() == "AVX2"


def test_isa_option_replaces_the_files_cap_and_a_study_directory_keeps_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``recipe-arena study FILE isa=none`` runs a file that caps at AVX2 without the cap:
    the study process sets none of the cap's variables, which its runs would inherit,
    where without the option it sets all three (each call stops at an unknown row, after
    the cap and before any run). A bad value fails in one line. A study directory whose
    runs were made capped refuses ``isa=none`` before any work, and the reverse, since
    a run's key does not hold the cap; the same cap passes, and so does a directory
    without runs."""
    import yaml

    from recipe_arena.compose import ConfigError
    from recipe_arena.study import STUDY_FILE, check_same_cap, run_study

    _clear(monkeypatch)
    study = {"name": "tiny", "recipe": "olmo3_think", "seeds": [0], "isa": "avx2"}
    study["rows"] = [{"name": "lr", "axis": "rl.lr", "arms": ["1e-5", "0"]}]
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(study))
    with pytest.raises(ConfigError, match="expected none or one of avx2") as e:
        run_study([str(path), "isa=avx9", f"out_dir={tmp_path / 'a'}"])
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="no row"):
        run_study([str(path), "isa=none", "rows=nope", f"out_dir={tmp_path / 'a'}"])
    assert not any(var in os.environ for var in cpu_isa.PINS["avx2"])
    with pytest.raises(ConfigError, match="no row"):
        run_study([str(path), "rows=nope", f"out_dir={tmp_path / 'b'}"])
    assert {k: os.environ[k] for k in cpu_isa.PINS["avx2"]} == cpu_isa.PINS["avx2"]
    capsys.readouterr()

    root = tmp_path / "c" / "tiny"
    (root / "runs").mkdir(parents=True)
    (root / STUDY_FILE).write_text(json.dumps({**study, "isa": "avx2"}))
    check_same_cap(root, "avx2")  # an empty runs/ holds nothing to mix
    (root / "runs" / "lr_0-s0").mkdir()
    check_same_cap(root, "avx2")
    with pytest.raises(
        ConfigError, match="kernels capped at avx2, this study would make them uncapped"
    ):
        run_study([str(path), "isa=none", f"out_dir={tmp_path / 'c'}"])
    (root / STUDY_FILE).write_text(json.dumps({**study, "isa": None}))
    with pytest.raises(
        ConfigError, match="kernels uncapped, this study would make them capped at avx2"
    ):
        check_same_cap(root, "avx2")
    check_same_cap(root, None)
