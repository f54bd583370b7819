"""``pipeline.reuse_prefix``: a run copies the stages before RL from an earlier run with
the same prefix settings, and ends exactly where training them itself would have."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipe_arena.cache import cache_root
from recipe_arena.cli import main
from recipe_arena.compose import load_config
from recipe_arena.prefix_cache import prefix_config, prefix_entry, prefix_settings, prefix_stages


def test_prefix_is_the_stages_before_the_first_that_trains_from_rewards() -> None:
    assert prefix_stages(["base", "sft", "dpo", "prompt_filter", "rlvr", "eval"]) == [
        "base",
        "sft",
        "dpo",
        "prompt_filter",
    ]
    assert prefix_stages(["base", "sft", "specialists", "mopd", "eval"]) == ["base", "sft"]
    assert prefix_stages(["base", "sft", "eval"]) == []  # nothing after it to share it


_BASE = ["recipe=olmo3_think", "budget=smoke"]


def _entry(*overrides: str, threads: int = 2) -> Path:
    cfg = prefix_config(load_config([*_BASE, *overrides]))
    return prefix_entry(cfg, prefix_stages(cfg.pipeline.stages), threads)


@pytest.mark.parametrize(
    "override",
    [
        "staleness=none",
        "advantage=standard",
        "loss.normalisation=sample",
        "rl.lr=3e-5",
        "rl.lag=4",
        "rl.eval_every=2",
        "rewards.label_flip.p=0.25",
        "spurious_reward.enabled=true",
        "name=other",
        "engine.keep_kv_on_update=false",  # in-flight updates happen in RL alone
    ],
)
def test_settings_only_rl_reads_share_the_prefix(override: str) -> None:
    """Each of these is read only after the prefix (RL_ONLY), so the key is the same."""
    assert _entry(override) == _entry()


@pytest.mark.parametrize(
    "override",
    [
        "seed=1",
        "sft.lr=1e-4",
        "dpo.beta=0.2",
        "engine.dtype=bfloat16",  # the prompt filter and evaluations sample with it
        "rl.domain_weights={math:1.0}",  # the prompt filter picks its prompts by it
        "rl.max_new_tokens=48",  # and caps its samples at it
        "rewards.math_extractors=[boxed,last_number]",  # the filter's and eval's verifier
        "pipeline.stages=[base,sft,prompt_filter,rlvr,eval]",
    ],
)
def test_settings_the_prefix_reads_change_the_key(override: str) -> None:
    assert _entry(override) != _entry()


def test_prefix_seed_replaces_the_seed_in_the_key() -> None:
    """With ``pipeline.prefix_seed`` the seeds of a comparison share one prefix."""
    assert _entry("seed=1", "pipeline.prefix_seed=0") == _entry("pipeline.prefix_seed=0")
    assert _entry("pipeline.prefix_seed=0") == _entry()  # seed 0 either way
    assert _entry("seed=1", "pipeline.prefix_seed=1") != _entry("pipeline.prefix_seed=0")


def test_thread_count_changes_the_key() -> None:
    """Floating-point sums depend on the thread count, so the prefix does too."""
    assert _entry(threads=1) != _entry(threads=2)


def test_rl_settings_kept_in_the_key_are_the_ones_named() -> None:
    assert set(prefix_settings(load_config(_BASE))["rl"]) == {"domain_weights", "max_new_tokens"}


def _records(run: Path, name: str) -> list[dict]:
    """The run's records, less the wall-clock fields (time, *_s, *per_s, seconds) and
    the judge's memo hits (verdicts this process remembers from the runs before)."""
    out = []
    for line in (run / name).read_text().splitlines():
        r = json.loads(line)
        out.append(
            {
                k: v
                for k, v in r.items()
                if k != "time"
                and not k.endswith(("_s", "per_s", "seconds", "idle_frac", "memo_hits"))
            }
        )
    return out


def _prefix(records: list[dict]) -> list[dict]:
    return [r for r in records if r["stage"] not in ("rlvr", "eval")]


@pytest.mark.slow  # three smoke runs, 50-110 s on 2 cores; the keys are checked above
def test_a_reused_prefix_ends_where_training_it_would(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """All three runs train the prefix (base, SFT, prompt filter) at prefix seed 0.
    Run a (seed 0) trains it and stores it; run b (seed 1) copies it; run c (seed 1)
    trains it again without reuse. Under the deterministic schedule b's per-question
    scores and metrics are then c's exactly, and their prefix records a's (the stages
    read the prefix seed, not the run's), while RL at seed 1 differs from RL at seed 0.
    b's checkpoints live in its own directory and the prefix's records appear once. A
    restore that lost the prefix's records or kept a's paths, or stages that read the
    run's seed, fail here."""
    shared = cache_root(None)  # the suite's cache: its smoke base model and judge
    for kind in ("base", "judge"):
        (shared / kind).mkdir(parents=True, exist_ok=True)
        (tmp_path / "cache").mkdir(exist_ok=True)
        (tmp_path / "cache" / kind).symlink_to(shared / kind)
    monkeypatch.setenv("RECIPE_ARENA_CACHE", str(tmp_path / "cache"))  # prefixes start empty
    args = [
        "run",
        *_BASE,
        "pipeline.stages=[base,sft,prompt_filter,rlvr,eval]",
        "pipeline.prefix_seed=0",
        "rl.schedule=deterministic",
        "rl.steps=2",
        f"out_dir={tmp_path / 'runs'}",
    ]
    assert main([*args, "pipeline.reuse_prefix=true", "name=a"]) == 0
    assert main([*args, "pipeline.reuse_prefix=true", "seed=1", "name=b"]) == 0
    assert main([*args, "seed=1", "name=c"]) == 0
    a, b, c = (tmp_path / "runs" / n for n in "abc")
    assert len([p for p in (tmp_path / "cache" / "prefix").iterdir() if p.is_dir()]) == 1
    for name in ("eval_scores.jsonl", "metrics.jsonl"):
        assert _records(b, name) == _records(c, name), name
        assert _prefix(_records(b, name)) == _prefix(_records(a, name)), name
    assert _records(b, "rollouts.jsonl") == _records(c, "rollouts.jsonl")
    assert _records(b, "rollouts.jsonl") != _records(a, "rollouts.jsonl")  # RL's own seed
    stages = json.loads((b / "stages.json").read_text())
    assert stages["inputs"]["rlvr"] == str(b / "checkpoints" / "sft")
    assert stages["train_rows"] == str(b / "train_filtered.jsonl")
    assert (b / "checkpoints" / "sft" / "model.safetensors").is_file()
    sft_records = [r for r in _records(b, "metrics.jsonl") if r["stage"] == "sft"]
    assert sft_records and len(sft_records) == len({r["step"] for r in sft_records})


def test_sft_is_stored_once_and_copied_by_runs_that_differ_after_it(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """With ``pipeline.reuse_prefix`` SFT's trained weights and records are stored under
    their own key: run b, whose settings differ from a's after SFT (the prompt filter's
    domain mix, so another stored prefix), copies them without training
    (``train_steps`` is by then replaced by a function that fails: a fault injected, as
    no real one shows whether training happened). b's SFT checkpoint is a's byte for
    byte, and its SFT records (training losses, held-out pass@1) are a's and those of run c, which trains
    SFT itself without reuse. Another SFT learning rate trains again."""
    from recipe_arena.stages import sft

    shared = cache_root(None)  # the suite's cache: its smoke base model and judge
    (tmp_path / "cache").mkdir()
    for kind in ("base", "judge"):
        (shared / kind).mkdir(parents=True, exist_ok=True)
        (tmp_path / "cache" / kind).symlink_to(shared / kind)
    monkeypatch.setenv("RECIPE_ARENA_CACHE", str(tmp_path / "cache"))
    args = [
        "run",
        *_BASE,
        "sft.steps=4",
        "sft.evaluate=true",
        "rl.steps=0",
        f"out_dir={tmp_path / 'runs'}",
    ]
    stages = "pipeline.stages=[base,sft,prompt_filter,rlvr,eval]"
    assert main([*args, stages, "pipeline.reuse_prefix=true", "name=a"]) == 0
    real_train = sft.train_steps

    def no_training(*args: object, **kwargs: object) -> None:
        raise AssertionError("SFT trained again")

    monkeypatch.setattr(sft, "train_steps", no_training)
    b_args = [*args, stages, "pipeline.reuse_prefix=true", "rl.domain_weights={math:1.0}"]
    assert main([*b_args, "name=b"]) == 0
    with pytest.raises(AssertionError, match="trained again"):
        main([*b_args, "sft.lr=1e-4", "name=b2"])
    monkeypatch.setattr(sft, "train_steps", real_train)
    assert main([*args, stages, "rl.domain_weights={math:1.0}", "name=c"]) == 0
    a, b, c = (tmp_path / "runs" / n for n in "abc")
    assert len([p for p in (tmp_path / "cache" / "sft").iterdir() if p.is_dir()]) == 1
    for other in (a, c):
        for f in ("model.safetensors", "checksums.json"):
            assert (b / "checkpoints/sft" / f).read_bytes() == (
                other / "checkpoints/sft" / f
            ).read_bytes()
        mine = [r for r in _records(b, "metrics.jsonl") if r["stage"] == "sft"]
        assert any("eval/math/pass@1" in r for r in mine) and any("loss/train" in r for r in mine)
        assert mine == [r for r in _records(other, "metrics.jsonl") if r["stage"] == "sft"]


def test_a_checkpoint_without_checksums_is_keyed_by_its_files(tmp_path: Path) -> None:
    """A starting checkpoint that ``save_checkpoint`` did not write (no checksums.json,
    a world's own model folder) enters SFT's key by the content of its files: a changed
    weight file changes it, a cached evaluation written beside the weights does not.
    Once sealed, the folder is keyed by its checksums.json alone."""
    import hashlib

    from recipe_arena.integrity import seal
    from recipe_arena.stages.sft import checkpoint_digest

    ckpt = tmp_path / "model"
    ckpt.mkdir()
    (ckpt / "model.safetensors").write_bytes(b"weights")
    (ckpt / "config.json").write_text("{}")
    first = checkpoint_digest(ckpt)
    (ckpt / "eval-0123.json").write_text('{"metrics": {}}')
    assert checkpoint_digest(ckpt) == first
    (ckpt / "model.safetensors").write_bytes(b"other weights")
    changed = checkpoint_digest(ckpt)
    assert changed != first
    (ckpt / "eval-0123.json").unlink()
    seal(ckpt)
    listed = hashlib.sha256((ckpt / "checksums.json").read_bytes()).hexdigest()
    assert checkpoint_digest(ckpt) == listed
