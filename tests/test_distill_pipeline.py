"""Teacher routing, teacher serving, the distillation stages' settings and their
start-up checks (Kimi K3's specialists + MOPD, DeepSeek's RL + OPD)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from recipe_arena.compose import ConfigError, load_config
from recipe_arena.config_checks import check_paths, check_stages
from recipe_arena.data.schema import Message, PromptRow
from recipe_arena.distill.teachers import TeacherPool, route_for, routed_rows, teacher_name
from recipe_arena.models.factory import TinyModelSpec, build_micro, save_checkpoint
from recipe_arena.stages.distill import (
    distill_config,
    roles,
    rows_of,
    specialist_config,
    specialist_stage,
)


def _row(domain: str, effort: str | None, i: int = 0) -> PromptRow:
    return PromptRow(
        id=f"{domain}-{effort}-{i}",
        messages=[Message(role="user", content="What is 2+3?")],
        domain=domain,  # type: ignore[arg-type]
        effort=effort,  # type: ignore[arg-type]
    )


ROUTES = {"math/high": "A", "math": "B", "ifeval/low": "C"}


def test_each_prompt_goes_to_the_teacher_of_its_domain_and_effort() -> None:
    """Most specific route first: math/high -> A; math/low and math/medium have no
    route of their own, so the domain route 'math' -> B; ifeval/low -> C; ifeval/medium
    matches neither 'ifeval/medium' nor 'ifeval' nor '*' -> none; code -> none. With a
    '*' route added, the unmatched rows go to it and the matched ones stay."""
    rows = [
        _row("math", "high"),
        _row("math", "low"),
        _row("math", "medium"),
        _row("ifeval", "low"),
        _row("ifeval", "medium"),
        _row("code", "low"),
    ]
    assert [route_for(r, ROUTES) for r in rows] == [
        "math/high",
        "math",
        "math",
        "ifeval/low",
        None,
        None,
    ]
    with_any = {**ROUTES, "*": "D"}
    assert [route_for(r, with_any) for r in rows] == [
        "math/high",
        "math",
        "math",
        "ifeval/low",
        "*",
        "*",
    ]
    assert [r.id for r in routed_rows(rows, ROUTES)] == [r.id for r in rows[:4]]
    assert [teacher_name(k) for k in ("math/high", "math", "*")] == ["math-high", "math", "any"]


def test_a_routes_rows_are_exactly_what_routing_sends_it() -> None:
    """rows_of('math/low') is the math rows of low effort; rows_of('math') every math row."""
    rows = [_row("math", "low", 0), _row("math", "high", 1), _row("code", "low", 2)]
    assert [r.id for r in rows_of("math/low", rows)] == ["math-low-0"]
    assert [r.id for r in rows_of("math", rows)] == ["math-low-0", "math-high-1"]
    assert specialist_stage("math/low") == "specialist_math_low"


def _logprobs(model: torch.nn.Module, prompt: list[int], completion: list[int]) -> list[float]:
    """log softmax(logits at position t-1)[token t] for each completion token t."""
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
    p = len(prompt)
    return [float(logp[p + j - 1, tok]) for j, tok in enumerate(completion)]


def test_teacher_pool_scores_each_row_with_its_routes_checkpoint(tmp_path: Path) -> None:
    """Two micro teachers with different weights (seeds 1 and 2) on routes math/high
    and math. A math/high row is scored by teacher 1 and named math-high; a math/low row
    by teacher 2 and named math; each logprob equals that teacher's own log-softmax at
    the token (and not the other teacher's); an empty completion scores empty; a row
    without a route fails naming the prompt and the routes."""
    spec = TinyModelSpec(hidden_size=32, num_layers=1, intermediate_size=64)
    models = {}
    for seed in (1, 2):
        model, tok = build_micro(spec, seed=seed)
        save_checkpoint(model, tok, tmp_path / f"t{seed}")
        models[seed] = model.eval()
    pool = TeacherPool({"math/high": str(tmp_path / "t1"), "math": str(tmp_path / "t2")}, None)
    prompt, completions = [5, 6, 7], [[8, 9, 10], [11], []]
    try:
        name, scored = pool.score_group(_row("math", "high"), prompt, completions)
        assert name == "math-high"
        assert scored[0] == pytest.approx(_logprobs(models[1], prompt, completions[0]), abs=1e-5)
        assert scored[0] != pytest.approx(_logprobs(models[2], prompt, completions[0]), abs=1e-5)
        assert scored[1] == pytest.approx(_logprobs(models[1], prompt, completions[1]), abs=1e-5)
        assert scored[2] == ()
        name, scored = pool.score_group(_row("math", "low"), prompt, completions[:1])
        assert name == "math"
        assert scored[0] == pytest.approx(_logprobs(models[2], prompt, completions[0]), abs=1e-5)
        with pytest.raises(ValueError, match=r"code-low-0 .*has no teacher"):
            pool.score_group(_row("code", "low"), prompt, completions)
    finally:
        pool.close()


# ----------------------------------------------------------------------------- settings
def test_specialist_runs_its_steps_on_its_domain_alone() -> None:
    """specialists.steps = 3 becomes rl.steps; the mixture is the route's domain alone;
    every other RL field is rl's."""
    cfg = load_config(["recipe=kimi_k3", "specialists.steps=3", "rl.lr=0.001"])
    s = specialist_config(cfg, "ifeval/high")
    assert s.rl.steps == 3
    assert s.rl.domain_weights == {"ifeval": 1.0}
    assert s.rl.lr == 0.001 and s.advantage == cfg.advantage


def test_specialists_are_the_configured_domains_times_efforts() -> None:
    cfg = load_config(
        ["recipe=kimi_k3", "specialists.domains=[math,code]", "specialists.efforts=[high]"]
    )
    assert cfg.specialists.routes() == ["math/high", "code/high"]
    assert load_config(["recipe=kimi_k3"]).specialists.routes() == [
        "math/low",
        "math/medium",
        "math/high",
    ]


def test_distillation_runs_its_steps_with_the_distill_advantage() -> None:
    """distill.steps = 7 becomes rl.steps and distill.lr = 4e-5 rl.lr (the RL stage's own
    1e-5 stays with RL); distill.advantage (clip 0.25) replaces the
    RL advantage; rewards play no part, so the zero-gradient filter and active sampling
    are off. MOPD weighs the routed domains equally (math 1, ifeval 1; chat, with no
    route, 0); OPD ('*') keeps rl.domain_weights."""
    cfg = load_config(
        ["recipe=kimi_k3", "distill.steps=7", "distill.lr=4e-5", "distill.advantage.clip=0.25"]
    )
    d = distill_config(cfg, {"math/low": "x", "ifeval": "y"})
    assert d.rl.steps == 7
    assert d.rl.lr == 4e-5 and cfg.rl.lr == 1e-5
    assert d.advantage.name == "distill" and d.advantage.clip == 0.25  # type: ignore[union-attr]
    assert not d.rl.zero_gradient_filter and not d.rl.active_sampling
    assert d.rl.domain_weights == {"math": 1.0, "ifeval": 1.0}
    assert distill_config(cfg, {"*": "x"}).rl.domain_weights == cfg.rl.domain_weights


def test_who_teaches_whom() -> None:
    """mopd: the current checkpoint (SFT) learns from the specialists' routes; opd: the
    RL stage's input (SFT) learns from the current checkpoint (the RL output) on every
    prompt ('*'); with distill.teachers set, both stages distil those into the current
    checkpoint instead."""
    cfg = load_config(["recipe=kimi_k3"])
    spec = {"math/low": "ck/low", "math/high": "ck/high"}
    assert roles(cfg, "mopd", "sft", spec, None) == ("sft", spec)
    assert roles(cfg, "opd", "rl_out", {}, "sft") == ("sft", {"*": "rl_out"})
    given = load_config(["recipe=kimi_k3", "distill.teachers={math:/t}"])
    assert roles(given, "mopd", "sft", spec, None) == ("sft", {"math": "/t"})
    assert roles(given, "opd", "rl_out", {}, "sft") == ("rl_out", {"math": "/t"})


# ----------------------------------------------------------------------------- start-up
def test_mopd_without_specialists_or_teachers_fails_at_start_up() -> None:
    cfg = load_config(["recipe=kimi_k3", "pipeline.stages=[base,sft,mopd,eval]"])
    with pytest.raises(ConfigError, match=r"stage 'mopd' needs its teachers: put 'specialists'"):
        check_stages(cfg)


def test_opd_without_rl_or_teachers_fails_at_start_up() -> None:
    cfg = load_config(["recipe=deepseek_v4_flash", "pipeline.stages=[base,sft,opd,eval]"])
    with pytest.raises(ConfigError, match=r"stage 'opd' needs its teachers: put 'rlvr'"):
        check_stages(cfg)


def test_given_teachers_replace_the_stage_before(tmp_path: Path) -> None:
    """With distill.teachers set, mopd needs no specialists stage; a teacher checkpoint
    that does not exist fails naming its route and path."""
    model, tok = build_micro(TinyModelSpec(hidden_size=32, num_layers=1, intermediate_size=64))
    save_checkpoint(model, tok, tmp_path / "t")
    good = load_config(
        [
            "recipe=kimi_k3",
            "pipeline.stages=[base,sft,mopd,eval]",
            f"distill.teachers={{math/low:{tmp_path / 't'}}}",
            f"out_dir={tmp_path}",
        ]
    )
    check_stages(good)
    check_paths(good)
    missing = tmp_path / "nope"
    bad = load_config(
        [
            "recipe=kimi_k3",
            f"distill.teachers={{math/low:{tmp_path / 't'},math/high:{missing}}}",
            f"out_dir={tmp_path}",
        ]
    )
    with pytest.raises(ConfigError, match=rf"distill.teachers.math/high='{missing}'"):
        check_paths(bad)


def test_a_bad_route_key_fails_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"route 'math/hard' is not"):
        load_config(["recipe=kimi_k3", "distill.teachers={math/hard:/x}"])


def test_rl_with_the_distill_advantage_fails_at_start_up() -> None:
    cfg = load_config(["recipe=olmo3_think", "advantage.name=distill"])
    with pytest.raises(ConfigError, match=r"advantage.name='distill' in stage 'rlvr'"):
        check_stages(cfg)


def test_report_section_compares_teachers_and_student() -> None:
    """Two mopd steps of teacher math-low: gap -0.2 then -0.4 (mean -0.300), |gap| 0.5
    then 0.3 (mean 0.400), clipped 0.1 then 0.3 (mean 0.200); its route comparison:
    teacher 0.8, student 0.76, ratio 0.95; the specialist went 0.1 -> 0.8 in 20 steps."""
    from recipe_arena.eval.report_distill import distill_section

    def gap(g: float, a: float, c: float) -> dict[str, float]:
        return {"gap_mean": g, "gap_abs_mean": a, "clipped_frac": c, "tokens": 10.0}

    steps = [
        {"stage": "mopd", "step": i + 1}
        | {f"distill/{t}/{k}": v for t in ("all", "math-low") for k, v in gap(*g).items()}
        for i, g in enumerate([(-0.2, 0.5, 0.1), (-0.4, 0.3, 0.3)])
    ]
    records = [
        {
            "stage": "specialist_math_low",
            "step": 0,
            "eval/math/pass@1": 0.1,
            "eval/mean/pass@1": 0.1,
        },
        {
            "stage": "specialist_math_low",
            "step": 20,
            "eval/math/pass@1": 0.8,
            "eval/mean/pass@1": 0.8,
        },
        *steps,
        {
            "stage": "mopd",
            "step": 2,
            "route/math-low/math/teacher": 0.8,
            "route/math-low/math/student": 0.76,
            "route/math-low/math/ratio": 0.95,
        },
    ]
    md = distill_section(records)
    assert "| math_low | math | 0.100 | 0.800 | 20 |" in md
    assert "| math-low | math | 0.800 | 0.760 | 0.95 |" in md
    assert "| math-low | 2 | -0.300 | 0.400 | 0.200 | 0.500 | 0.300 |" in md
    assert distill_section([r for r in records if r["stage"] == "sft"]) == []
