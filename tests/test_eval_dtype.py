"""``eval.dtype``: held-out evaluations in a precision of their own, keyed by it.

The engine of every held-out evaluation (``eval.final.evaluate_model``, and the deferred
evaluation's generation, ``eval.deferred``) is ``engine`` with its dtype replaced by
``eval.dtype`` when that is set. The evaluation cache key holds the evaluation engine's
precision when it is not float32, so a bfloat16 evaluation is never served a cached
float32 result, or the reverse. A setting added after runs were keyed must leave the
keys of those runs, of their stored prefixes and of float32 evaluation caches as they
were: the known-answer values below were computed before the field existed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from recipe_arena.compose import load_config
from recipe_arena.config import RunConfig
from recipe_arena.data.micro import generate_split
from recipe_arena.eval.comparison import group_runs
from recipe_arena.eval.deferred import _generate_and_verify
from recipe_arena.eval.final import eval_cache_path, eval_engine_config, evaluate_model
from recipe_arena.models.factory import TinyModelSpec, build_micro, load_checkpoint, save_checkpoint
from recipe_arena.prefix_cache import prefix_config, prefix_entry, prefix_stages
from recipe_arena.rewards import build_scorer
from recipe_arena.stages.base import train_base
from recipe_arena.study import settings_digest
from tests.test_compare import _write_run
from tests.test_config_validation import assert_refused_naming

STUDY = [
    "recipe=olmo3_think",
    "rl.schedule=deterministic",
    "rl.eval_every=6",
    "pipeline.reuse_prefix=true",
    "pipeline.prefix_seed=0",
    "rewards.judge_markers=special",
]
"""The Table 9.2 study's runs (studies/table_9_2.yaml): its recipe and common overrides."""
STRESSED = [
    "engine.dtype=bfloat16",
    "rl.lag=8",
    "rl.max_staleness=8",
    "rl.update_at_decode_step=16",
    "rl.lr=3e-5",
]
"""The study's stressed regime."""


def _rows() -> list:  # type: ignore[type-arg]
    """Three held-out math and three ifeval rows (data seed 0)."""
    return [r for d in ("math", "ifeval") for r in generate_split(d, "heldout", 3, seed=0)]


def _with(cfg: RunConfig, engine_dtype: str, eval_dtype: str | None) -> RunConfig:
    """``cfg`` with ``engine.dtype`` and ``eval.dtype`` set."""
    return cfg.model_copy(
        update={
            "engine": cfg.engine.model_copy(update={"dtype": engine_dtype}),
            "eval": cfg.eval.model_copy(update={"dtype": eval_dtype}),
        }
    )


# ----------------------------------------------------------------------------- keys
def test_study_run_and_prefix_keys_are_those_of_the_runs_on_disk() -> None:
    """A study run's directory is ``r<settings_digest>-s<seed>`` and its stages before RL
    are stored under ``prefix_entry``'s key; a resumed study finds what it made only
    while both keys stay what they were. The values are the keys of the Table 9.2 study's
    default-regime tis arm, of a stressed none arm evaluated in the engine's bfloat16,
    and of their shared prefix, at ``cache.VERDICTS_VERSION`` verdicts-v2 (the version
    enters both keys: bumping it is the one deliberate change of these values); a fixed
    value is right because keys on disk must keep naming their runs, and adding
    ``eval.dtype`` did not move them. ``eval.dtype`` at its default is
    left out of both (``comparison_plan.LATER_DEFAULTS``); set, it enters them, since it
    changes what the run logs."""
    default = load_config([*STUDY, "seed=0"])
    assert settings_digest(default, 1) == "cecaf79d3d9f"
    assert settings_digest(load_config([*STUDY, *STRESSED, "staleness=none", "seed=0"]), 1) == (
        "e46c7982aa3d"
    )
    stages = prefix_stages(default.pipeline.stages)
    assert prefix_entry(prefix_config(default), stages, 1).name == "bb38fa126849dc98"
    fp32_eval = load_config([*STUDY, "eval.dtype=float32", "seed=0"])
    assert settings_digest(fp32_eval, 1) != "cecaf79d3d9f"
    assert prefix_entry(prefix_config(fp32_eval), stages, 1).name != "bb38fa126849dc98"


def test_the_audit_probes_version_keys_only_pipelines_that_run_the_audit(monkeypatch) -> None:
    """``cache.AUDIT_VERSION`` enters the run and prefix keys of a pipeline with the audit
    stage (its quarantine follows the probes), so a change of the probes reruns those
    runs; the keys of every other run stay those on disk. ``AUDIT_TOURNAMENT_VERSION``
    enters them only where chat is scored by the rubric tournament, so a change to how
    the audit plays chat probes there leaves the Table 9.2 study's audited arms (chat
    judged alone) under their committed keys: ``d9db3976a29a`` (hack left in) and
    ``18fbc4aed562`` (quarantined) in docs/studies/table_9_2/rows/reward_hack.default."""
    from recipe_arena import cache

    hack = [
        "rewards.math_extractors=[boxed,final_answer_is,short_answer,last_number]",
        "pipeline.stages=[base,sft,dpo,audit,prompt_filter,rlvr,eval]",
        "seed=0",
    ]
    audited = load_config([*STUDY, *hack])
    quarantined = load_config([*STUDY, *hack, "rewards.audit_quarantine=true"])
    played = load_config([*STUDY, *hack, "rewards.chat=rubric_tournament"])
    plain = load_config([*STUDY, "seed=0"])
    a_stages = prefix_stages(audited.pipeline.stages)
    p_stages = prefix_stages(plain.pipeline.stages)

    def keys() -> tuple[str, ...]:
        return (
            settings_digest(audited, 1),
            prefix_entry(prefix_config(audited), a_stages, 1).name,
            settings_digest(played, 1),
            prefix_entry(prefix_config(played), a_stages, 1).name,
            settings_digest(plain, 1),
            prefix_entry(prefix_config(plain), p_stages, 1).name,
        )

    before = keys()
    assert before[0] == "d9db3976a29a" and settings_digest(quarantined, 1) == "18fbc4aed562"
    assert before[4:] == ("cecaf79d3d9f", "bb38fa126849dc98")
    monkeypatch.setattr(cache, "AUDIT_TOURNAMENT_VERSION", "tournament-next")
    played_next = keys()
    assert played_next[2] != before[2] and played_next[3] != before[3]
    assert played_next[:2] == before[:2] and played_next[4:] == before[4:]
    monkeypatch.setattr(cache, "AUDIT_VERSION", "audit-next")
    after = keys()
    assert all(after[i] != played_next[i] for i in range(4))
    assert after[4:] == before[4:]


def test_eval_cache_key_holds_the_evaluation_engines_precision() -> None:
    """A float32 evaluation with ``eval.dtype`` unset keeps the cache file it had before
    the field existed (known answer at verdicts-v2: ``cache.VERDICTS_VERSION`` is part of the
    key, and adding the field did not move it), so existing caches stay valid. An
    engine in bfloat16 evaluates in bfloat16 and gets another file: before the fix it
    got the float32 one, which is how the stressed regime's RL start was served a
    float32 result. A bfloat16 engine evaluating in float32 (``eval.dtype=float32``)
    shares the float32 file: the same engine computes both. A float32 engine evaluating
    in bfloat16 shares the bfloat16 engine's file. ``rewards.judge_markers`` at
    'special', as the file was made, keeps it too; at its default 'text' the judge
    reads answers otherwise and the file is another."""
    ck = Path("/checkpoint")
    rows = _rows()
    fp32 = RunConfig.model_validate({"rewards": {"judge_markers": "special"}})
    assert eval_cache_path(fp32, ck, rows).name == "eval-e4608993b4aff768.json"
    assert eval_cache_path(RunConfig(), ck, rows) != eval_cache_path(fp32, ck, rows)
    assert eval_cache_path(load_config([*STUDY, "seed=0"]), ck, rows) == (
        eval_cache_path(fp32, ck, rows)
    )
    bf16 = _with(fp32, "bfloat16", None)
    assert eval_cache_path(bf16, ck, rows) != eval_cache_path(fp32, ck, rows)
    assert eval_cache_path(_with(fp32, "bfloat16", "float32"), ck, rows) == (
        eval_cache_path(fp32, ck, rows)
    )
    assert eval_cache_path(_with(fp32, "float32", "bfloat16"), ck, rows) == (
        eval_cache_path(bf16, ck, rows)
    )
    assert eval_cache_path(_with(fp32, "float32", "float16"), ck, rows) != (
        eval_cache_path(bf16, ck, rows)
    )


def test_eval_engine_config_replaces_only_the_dtype() -> None:
    """Unset, the evaluation engine is the run's engine; set, only its dtype differs
    (batching, device and LM-head settings stay the run's)."""
    over = [*STUDY, *STRESSED, "engine.max_batch_size=7", "engine.lm_head_fp32=true"]
    cfg = load_config(over)
    assert eval_engine_config(cfg) == cfg.engine and cfg.engine.dtype == "bfloat16"
    fp32 = eval_engine_config(load_config([*over, "eval.dtype=float32"]))
    assert fp32.dtype == "float32"
    assert fp32.model_dump(exclude={"dtype"}) == cfg.engine.model_dump(exclude={"dtype"})


def test_runs_written_before_the_field_share_an_arm_with_runs_after(tmp_path: Path) -> None:
    """A run directory's config.yaml written before ``eval.dtype`` existed lacks the key;
    one written now holds ``dtype: null``. Both are the same settings, so loose run
    directories (``eval.comparison.group_runs``) put them in one arm; a run with
    ``eval.dtype=float32`` is an arm of its own, named by that setting."""
    scores = [float(i < 10) for i in range(30)]
    old = _write_run(tmp_path, ["budget=smoke"], "old", 0, scores)
    raw = yaml.safe_load((old / "config.yaml").read_text())
    del raw["eval"]["dtype"]
    (old / "config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    new = _write_run(tmp_path, ["budget=smoke"], "new", 1, scores)
    fp32 = _write_run(tmp_path, ["budget=smoke", "eval.dtype=float32"], "fp32", 0, scores)
    arms = group_runs([old, new, fp32])
    assert [(a.name, [r.seed for r in a.runs]) for a in arms] == [
        ("baseline", [0, 1]),
        ("eval.dtype=float32", [0]),
    ]


# ----------------------------------------------------------------------------- evaluation
def test_evaluate_model_in_float32_under_a_bfloat16_engine() -> None:
    """The smoke base model (recipes/budget/smoke.yaml, trained once into the model
    cache) evaluated on 8 held-out math rows, 2 completions each sampled at temperature
    1 for up to 48 tokens. The engine samples by inverse CDF from per-row seeded
    uniforms, so two evaluations in one precision draw the same tokens, while bfloat16's
    logits (8 significand bits) move the CDF's boundaries enough to change some draws
    and so where some completions end: the mean completion length differs between a
    float32 and a bfloat16 engine (checked first, so the test can tell them apart).
    ``engine.dtype=bfloat16`` with ``eval.dtype=float32`` must then give exactly the
    float32 engine's metrics and row scores, and ``engine.dtype=float32`` with
    ``eval.dtype=bfloat16`` the bfloat16 engine's; an evaluation that ignored
    ``eval.dtype`` would give the other precision's lengths."""
    cfg = load_config(["recipe=olmo3_think", "budget=smoke"])
    model, tok = load_checkpoint(train_base(cfg, None))
    model.eval()
    rows = generate_split("math", "heldout", 8, seed=0)
    sampled = cfg.eval.model_copy(
        update={
            "max_prompts_per_domain": 8,
            "domain_prompts": {},
            "max_new_tokens": 48,
            "temperature": 1.0,
            "samples": 2,
        }
    )
    cfg = cfg.model_copy(update={"eval": sampled})
    with build_scorer(cfg.rewards, shared=True) as scorer:
        runs = {
            (e, v): evaluate_model(_with(cfg, e, v), model, tok, rows, scorer)
            for e, v in [
                ("float32", None),
                ("bfloat16", None),
                ("bfloat16", "float32"),
                ("float32", "bfloat16"),
            ]
        }
    fp32, bf16 = runs["float32", None], runs["bfloat16", None]
    assert fp32.metrics["eval/math/tokens"] != bf16.metrics["eval/math/tokens"]
    for got, want in [(runs["bfloat16", "float32"], fp32), (runs["float32", "bfloat16"], bf16)]:
        assert got.metrics == want.metrics
        assert got.scores == want.scores


def test_deferred_generation_uses_the_evaluation_precision(tmp_path: Path) -> None:
    """The deferred evaluation (``eval.deferred``: chat answers kept for the micro judge)
    generates what ``evaluate_model`` would, in the same precision, and returns the
    completions themselves. An untrained micro model sampled at temperature 1 from
    seeded uniforms: a float32 and a bfloat16 engine write different completions for some
    rows (bfloat16's rounding of the logits moves some draws to a neighbouring token;
    checked first), and ``eval.dtype`` picks which of the two the evaluation writes,
    whatever ``engine.dtype`` says."""
    model, tok = build_micro(TinyModelSpec(hidden_size=32, num_layers=1, num_heads=1), seed=0)
    ck = save_checkpoint(model, tok, tmp_path / "ck")
    rows = _rows()
    cfg = RunConfig(
        eval={
            "max_prompts_per_domain": 3,
            "domain_prompts": {},
            "max_new_tokens": 16,
            "temperature": 1.0,
            "samples": 2,
        }
    )

    def texts(engine: str, evaluation: str | None) -> list[list[str]]:
        return _generate_and_verify(_with(cfg, engine, evaluation), ck, rows)[0]

    fp32, bf16 = texts("float32", None), texts("bfloat16", None)
    assert fp32 != bf16
    assert texts("bfloat16", "float32") == fp32
    assert texts("float32", "bfloat16") == bf16


@pytest.mark.parametrize("value", ["float32", "bfloat16", "float16"])
def test_eval_dtype_is_a_setting(value: str) -> None:
    """``eval.dtype`` composes from the command line and is unset by default."""
    assert load_config([f"eval.dtype={value}"]).eval.dtype == value
    assert load_config([]).eval.dtype is None


def test_an_eval_dtype_that_cannot_run_fails_naming_the_key() -> None:
    assert_refused_naming("eval.dtype=float64", ["eval.dtype", "float64"])
