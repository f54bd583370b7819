"""The few lines a finished run prints: where the report is, held-out pass@1 per domain
at the start and end of RL with the change, the wall time of each stage, and a warning
for each reward domain whose judge verdicts were mostly unparsable in training.

Drawn only from the run directory (``metrics.jsonl``, ``stages.json``, ``eval.json``,
``config.yaml``), like the report, so it can be printed again for any run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from recipe_arena.data.schema import DOMAINS
from recipe_arena.rundir import read_metrics

_PASS = re.compile(r"^eval/([^/]+)/pass@1$")


def duration(seconds: float) -> str:
    """'0.4 s', '32 s', '1m 30s', '1h 02m' (hand-readable, no more precision than useful)."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def pass_at_1(record: dict[str, Any]) -> dict[str, float]:
    """domain -> held-out pass@1 in one metrics record, in the order of DOMAINS (others
    after them; the mean over domains left out)."""
    found = {}
    for key, value in record.items():
        m = _PASS.match(key)
        if m and m.group(1) != "mean" and isinstance(value, int | float):
            found[m.group(1)] = float(value)
    order = [d for d in DOMAINS if d in found] + sorted(set(found) - set(DOMAINS))
    return {d: found[d] for d in order}


def rl_heldout(records: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, float]]:
    """(pass@1 at the RL start, pass@1 at its last evaluation) per domain, from the
    ``rlvr`` records of metrics.jsonl; empty dicts when RL evaluated nothing. On a
    resumed run the start is the first evaluation logged (step 0)."""
    evals = [(int(r.get("step", 0)), pass_at_1(r)) for r in records if r.get("stage") == "rlvr"]
    evals = [(step, p) for step, p in evals if p]
    if not evals:
        return {}, {}
    return evals[0][1], evals[-1][1]


def _config(run: Path) -> dict[str, Any]:
    path = run / "config.yaml"
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


def _trained_domains(run: Path) -> set[str] | None:
    weights = _config(run).get("rl", {}).get("domain_weights")
    return None if weights is None else {d for d, w in weights.items() if w > 0}


def _heldout_table(run: Path, records: list[dict[str, Any]]) -> list[str]:
    start, end = rl_heldout(records)
    label = ("RL start", "RL end")
    if not start:  # no RL evaluation: the final evaluation alone
        eval_path = run / "eval.json"
        end = pass_at_1(json.loads(eval_path.read_text())) if eval_path.exists() else {}
        if not end:
            return []
        return ["  held-out pass@1 (final)  " + "  ".join(f"{d} {v:.3f}" for d, v in end.items())]
    trained = _trained_domains(run)
    lines = [f"  held-out pass@1   {label[0]:>8}  {label[1]:>8}  change"]
    for domain, after in end.items():
        before = start.get(domain)
        change = f"{after - before:+.3f}" if before is not None else "   n/a"
        first = f"{before:.3f}" if before is not None else "n/a"
        note = "  (not trained)" if trained is not None and domain not in trained else ""
        lines.append(f"    {domain:<14} {first:>8}  {after:>8.3f}  {change}{note}")
    return lines


def _stage_times(run: Path, records: list[dict[str, Any]]) -> str:
    path = run / "stages.json"
    done: dict[str, float] = json.loads(path.read_text()).get("done", {}) if path.exists() else {}
    if not done:
        return ""
    cached = any(r.get("stage") == "base" and r.get("cached") == 1.0 for r in records)
    order = _config(run).get("pipeline", {}).get("stages", [])
    stages = [s for s in order if s in done] + [s for s in done if s not in order]
    parts = [
        f"{stage} {duration(done[stage])}{' (cached)' if stage == 'base' and cached else ''}"
        for stage in stages
    ]
    return f"  wall time   {' | '.join(parts)}  (stages total {duration(sum(done.values()))})"


VERDICT_COUNTERS = {
    "judge_unparsable": ("judged", "judge"),
    "tournament_unparsable": ("tournament_games", "tournament"),
}
"""Scorer counters of unparsable verdicts -> (the counter of all verdicts, a name):
``reward/<domain>/<unparsable>`` of ``reward/<domain>/<all>`` (``rewards.scorer``)."""
UNPARSABLE_WARN_FRAC = 0.5
"""Warn when more than this share (0-1) of a domain's verdicts was unparsable: an
unparsable verdict scores 0, so such a domain's rewards carry almost no signal."""
_COUNTER = re.compile(r"^reward/([^/]+)/([^/]+)$")


def unparsable_warnings(records: list[dict[str, Any]]) -> list[str]:
    """One line per reward domain and verdict kind whose unparsable share, summed over
    every training step of the run (the actors' scorers, ``reward/<domain>/...``), is
    above ``UNPARSABLE_WARN_FRAC``."""
    totals: dict[tuple[str, str], float] = {}
    for r in records:
        for key, value in r.items():
            m = _COUNTER.match(key)
            if m and isinstance(value, int | float):
                at = (m.group(1), m.group(2))
                totals[at] = totals.get(at, 0.0) + float(value)
    lines = []
    for (domain, name), bad in sorted(totals.items()):
        if name not in VERDICT_COUNTERS:
            continue
        every, kind = VERDICT_COUNTERS[name]
        n = totals.get((domain, every), 0.0)
        if n > 0 and bad / n > UNPARSABLE_WARN_FRAC:
            lines.append(
                f"  warning     {domain}: {bad:.0f} of {n:.0f} {kind} verdicts unparsable in "
                f"training ({bad / n:.0%}); they score 0, so {domain} rewards carry little signal"
            )
    return lines


def run_summary(run_path: str | Path) -> str:
    """The closing lines of `recipe-arena run` for the run directory ``run_path``."""
    run = Path(run_path)
    records = read_metrics(run) if (run / "metrics.jsonl").exists() else []
    lines = [f"run finished: {run}"]
    report = run / "report.html"
    if report.exists():
        lines.append(f"  report      {report}  (and report.md)")
    lines += _heldout_table(run, records)
    times = _stage_times(run, records)
    if times:
        lines.append(times)
    lines += unparsable_warnings(records)
    return "\n".join(lines)


def closing_lines(run_path: str | Path) -> str:
    """``run_summary`` plus, when warnings were held back as repeats, a line saying so."""
    from recipe_arena.logsetup import repeat_report

    held = repeat_report()
    return run_summary(run_path) + (f"\n{held}" if held else "")
