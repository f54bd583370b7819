"""The olmo3_7b world's cluster configuration and its dry run (no GPU needed)."""

from __future__ import annotations

import pytest

from recipe_arena.cli import main
from recipe_arena.compose import load_config
from recipe_arena.plan import launch_problems, placement_plan

BASE = [
    "recipe=olmo3_think",
    "world=olmo3_7b",
    "cluster=olmo3_7b",
    "budget=full",
    "world.checkpoint=/ckpt/Olmo-3-7B-Think-DPO",
    "world.train_path=/data/dolci_think_rl.jsonl",
    "rewards.judge_model=http://judge:8000/v1",
]


def test_dry_run_prints_the_olmo3_7b_settings_and_plan(capsys):
    """The dry run exits 0 and prints OLMo 3 7B Think's RL settings: 64 prompts x 8
    samples, 32,768-token responses, pipeline depth 8, TIS with cap 2.0, ratio clip
    [1 - 0.2, 1 + 0.272] = [0.8, 1.272], lr 1e-6 constant, temperature 1.0, beta 0,
    centred advantages; and a plan of 16 learner GPUs on 2 nodes, 56 one-GPU vLLM
    actors on 56 / 8 = 7 nodes, the judge service on 1 node: 10 nodes, with the 112
    code workers 16 per actor node."""
    assert main(["run", *BASE, "--dry-run"]) == 0
    out = capsys.readouterr().out
    expected = {
        "prompts x samples per step": "64 x 8",
        "response length (tokens)": "32768",
        "pipeline depth": "8",
        "staleness": "tis (cap 2.0)",
        "length control": "none",
        "ratio clip": "[0.8, 1.272]",
        "clip-higher": "0.272",
        "learning rate": "1e-06 constant",
        "temperature": "1.0",
        "KL beta": "0.0",
        "advantage": "centered (reward_scale 1.0)",
        "judge": "http://judge:8000/v1",
    }
    for key, value in expected.items():
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(key))
        assert line.split(key, 1)[1].strip() == value, line
    assert "domains" in out and "math 30, ifeval 30, code 23, chat 21" in out
    assert "placement: 10 node(s) x 8 GPUs; learner 16 GPUs, 56 vLLM actor(s) x 1 GPU" in out
    assert "judge 8 GPUs, 112 code worker(s)" in out
    assert "node 0: learner GPUs 0,1,2,3,4,5,6,7" in out
    assert "node 2: actors 0-7 (8); code workers 16" in out
    assert "node 8: actors 48-55 (8); code workers 16" in out
    assert "node 9: judge GPUs 0,1,2,3,4,5,6,7" in out


def test_cluster_fields_change_the_plan():
    """gpus_per_actor=2 packs 8 / 2 = 4 actors a node: 56 actors need 14 nodes (2 + 14
    + 1 = 17); learner_gpus=12 fills node 0 and 4 GPUs of node 1; judge_gpus=0 places
    no judge (2 + 7 = 9 nodes); code_workers=15 over the 7 actor nodes gives one node
    15 // 7 + 1 = 3 and six 2;
    gpus_per_node=4 with 1-GPU actors needs 56 / 4 = 14 actor nodes, 16 / 4 = 4
    learner nodes and 8 / 4 = 2 judge nodes: 20."""
    cfg = load_config([*BASE, "cluster.gpus_per_actor=2", "cluster.learner_gpus=12"])
    plan = placement_plan(cfg)
    assert plan.nodes == 17 and plan.count("learner") == 12 and plan.count("actor") == 112
    assert [p.gpus for p in plan.placements if p.role == "learner"] == [
        tuple(range(8)),
        (0, 1, 2, 3),
    ]
    assert next(p for p in plan.placements if p.role == "actor-5").gpus == (2, 3)
    cfg = load_config([*BASE, "cluster.judge_gpus=0", "cluster.code_workers=15"])
    plan = placement_plan(cfg)
    assert plan.nodes == 9 and plan.count("judge") == 0
    assert sorted(p.cpus for p in plan.placements if p.role == "code") == [2] * 6 + [3]
    assert placement_plan(load_config([*BASE, "cluster.gpus_per_node=4"])).nodes == 20


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("engine.name=hf", "engine.name='hf': GPU actors serve with 'vllm' or 'torch'"),
        ("cluster=local", "cluster.backend='local': a GPU layout needs the 'ray' backend"),
        ("cluster.gpus_per_actor=3", "must divide cluster.gpus_per_node=8"),
        ("cluster.learner_gpus=0", "cluster.learner_gpus=0: GPU actors need a GPU learner"),
        ("rewards.judge_model=smol", "with cluster.judge_gpus the judge is a service"),
        ("cluster.code_workers=0", "cluster.code_workers=0: GPU actors score code"),
        ("rl.max_staleness=1", "rl.max_staleness=1 < rl.pipeline_depth - 1=7"),
    ],
)
def test_dry_run_refuses_a_launch_that_cannot_work(override, message, capsys):
    """Each broken setting exits 2 with one line naming the key, value and fix.
    (cluster=local keeps the GPU fields of cluster=olmo3_7b only when they are set on
    the command line; here it resets them, so the local layout is the one checked.)"""
    args = [*BASE, override]
    if override == "cluster=local":
        args = [*args, "cluster.gpus_per_actor=1", "cluster.learner_gpus=16"]
    cfg = load_config(args)
    assert any(message in p for p in launch_problems(cfg))
    assert main(["run", *args, "--dry-run"]) == 2
    assert message in capsys.readouterr().err


def test_olmo3_7b_needs_its_paths(capsys):
    """Without world.checkpoint and world.train_path the dry run names both."""
    assert main(["run", *BASE[:4], "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "world.checkpoint is not set" in err and "world.train_path is not set" in err
