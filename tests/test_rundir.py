"""Run directory artifacts: metrics survive a torn last line, W&B works offline, reports render."""

from __future__ import annotations

import json
from pathlib import Path

from recipe_arena.compose import load_config
from recipe_arena.eval.report import write_report
from recipe_arena.rundir import RunDir, read_metrics


def test_metrics_lines_and_torn_tail(tmp_path: Path) -> None:
    cfg = load_config(["budget=smoke", f"out_dir={tmp_path}"])
    run = RunDir(cfg, tmp_path / "r")
    run.log("rlvr", 1, {"reward/mean": 0.25})
    run.log("rlvr", 2, {"reward/mean": 0.5})
    # A crash mid-write leaves half a line; readers keep every complete record.
    with open(run.metrics_path, "a") as f:
        f.write('{"stage": "rlvr", "step": 3, "rew')
    records = read_metrics(run.path)
    assert [(r["step"], r["reward/mean"]) for r in records] == [(1, 0.25), (2, 0.5)]
    saved = (run.path / "config.yaml").read_text()
    assert "budget:\n  name: smoke" in saved


def test_wandb_offline_writes_under_the_run(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_DIR", raising=False)
    cfg = load_config(["budget=smoke", "wandb.enabled=true", f"out_dir={tmp_path}"])
    run = RunDir(cfg, tmp_path / "r")
    run.log("sft", 1, {"loss/train": 1.5})
    run.close()
    offline_runs = list((tmp_path / "r" / "wandb").glob("offline-run-*"))
    assert len(offline_runs) == 1
    assert any(p.suffix == ".wandb" for p in offline_runs[0].iterdir())


def test_report_has_tables_and_plots(tmp_path: Path) -> None:
    metrics = [
        {"stage": "rlvr", "step": s, "reward/mean": 0.1 * s, "loss/policy": 1.0 / s}
        for s in range(1, 5)
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    (tmp_path / "eval.json").write_text(json.dumps({"eval/math/pass@1": 0.375}))
    md = write_report(tmp_path).read_text()
    assert "| eval/math/pass@1 | 0.375 |" in md
    assert "| reward/mean | 0.4 | 4 |" in md
    assert (tmp_path / "plot_rlvr.png").stat().st_size > 1000
    html = (tmp_path / "report.html").read_text()
    assert "eval/math/pass@1" in html
    # tables are HTML tables, not pipe-separated text; plots are embedded, nothing is
    # fetched from anywhere (no file, no network)
    assert "<td>eval/math/pass@1</td>" in html and "|---|" not in html
    assert 'src="data:image/png;base64,' in html and 'src="plot_' not in html


def test_metric_plots_wrap_into_rows_that_fit_the_page(tmp_path: Path) -> None:
    """Ten plotted metrics of one stage: at most 4 panels per row (3.2 in each at 90
    dpi), so the figure is at most 4 * 3.2 * 90 = 1,152 px wide and has 3 rows
    (ceil(10 / 4)), each 2.5 in: 3 * 2.5 * 90 = 675 px high."""
    from matplotlib.image import imread

    metrics = [
        {"stage": "sft", "step": s, **{f"loss/m{i}": float(i * s) for i in range(10)}}
        for s in range(1, 4)
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    write_report(tmp_path)
    height, width = imread(tmp_path / "plot_sft.png").shape[:2]
    assert width <= 1152 and height == 675


def test_report_rl_curves_table_and_figure(tmp_path: Path) -> None:
    """RL steps 0..4 with held-out math 0.2 at step 0 and 0.35 at step 4 (code 0.5 then
    0.25): the RL table lists both steps and the change row reads +0.150 for math and
    -0.250 for code; step 4's churn (math fixed 0.2, broken 0.05: 0.2 - 0.05 = 0.15)
    gets its own rows, blank for code, which has none; the curves figure is drawn and
    linked from report.md."""
    metrics = [
        {"stage": "rlvr", "step": 0, "eval/math/pass@1": 0.2, "eval/code/pass@1": 0.5},
        *(
            {"stage": "rlvr", "step": s, "reward/mean": 0.1 * s, "reward/math/mean": 0.05 * s}
            for s in range(1, 4)
        ),
        {
            "stage": "rlvr",
            "step": 4,
            "reward/mean": 0.4,
            "eval/math/pass@1": 0.35,
            "eval/code/pass@1": 0.25,
            "eval/math/fixed": 0.2,
            "eval/math/broken": 0.05,
        },
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    md = write_report(tmp_path).read_text()
    assert "| step | code | math |" in md
    assert "| 0 | 0.500 | 0.200 |" in md and "| 4 | 0.250 | 0.350 |" in md
    assert "| change 0 -> 4 | -0.250 | +0.150 |" in md
    assert "| fixed by step 4 |  | +0.200 |" in md
    assert "| broken by step 4 |  | -0.050 |" in md
    assert "![RL curves](plot_rl_curves.png)" in md
    assert (tmp_path / "plot_rl_curves.png").stat().st_size > 1000
