"""The DPO stage's section of a run report, drawn from ``dpo.json``: the pairs (counts,
chosen/rejected verifier scores), the chosen-minus-rejected length difference in tokens
before and after the length cap per subset, and each dataset size's validation curve
with the size and step that were kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def dpo_section(run_path: Path) -> list[str]:
    """Markdown lines; none when the run has no ``dpo.json``."""
    path = run_path / "dpo.json"
    if not path.exists():
        return []
    d: dict[str, Any] = json.loads(path.read_text())
    counts = d.get("counts", {})
    md = [
        "## DPO: delta-learning pairs",
        "",
        "Pairs: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
        "",
    ]
    contrast = d.get("contrast", {})
    domains = sorted({k.split("/")[2] for k in contrast})
    if domains:
        md += ["| domain | chosen score | rejected score |", "|---|---|---|"]
        md += [
            f"| {dom} | {contrast[f'dpo/pairs/{dom}/chosen_score']:.3f} | "
            f"{contrast[f'dpo/pairs/{dom}/rejected_score']:.3f} |"
            for dom in domains
        ]
        md.append("")
    md += _length_table(d.get("length_delta", {}))
    md += _sizes_table(d)
    return md


def _length_table(report: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    if not report:
        return []
    qs = [k for k in report["all"]["before"] if k.startswith("p")]
    head = " | ".join(f"{q} before / after" for q in qs)
    md = [
        "Length difference, chosen minus rejected (tokens), before / after the length cap:",
        "",
        f"| subset | pairs before / after | {head} |",
        "|---" * (len(qs) + 2) + "|",
    ]
    for subset, stats in report.items():
        b, a = stats["before"], stats["after"]
        cells = " | ".join(
            f"{b.get(q, float('nan')):.0f} / {a.get(q, float('nan')):.0f}" for q in qs
        )
        md.append(f"| {subset} | {b['n']:.0f} / {a['n']:.0f} | {cells} |")
    return [*md, ""]


def _sizes_table(d: dict[str, Any]) -> list[str]:
    sizes = d.get("sizes", [])
    if not sizes:
        return []
    chosen = d.get("chosen", {})
    md = [
        f"Validation score (mean greedy pass@1 of the validation slice) at the start: "
        f"{d.get('start_score', float('nan')):.3f}",
        "",
        "| pairs | steps run | best score | best step | curve (step: score) |",
        "|---|---|---|---|---|",
    ]
    for s in sizes:
        curve = ", ".join(f"{step}: {score:.3f}" for step, score in s["curve"])
        mark = " (kept)" if s["size"] == chosen.get("size") else ""
        md.append(
            f"| {s['size']}{mark} | {s['steps_run']} | {s['best_score']:.3f} | "
            f"{s['best_step']} | {curve} |"
        )
    if chosen.get("size") == 0:
        md += ["", "No size validated above the start: the stage kept its starting checkpoint."]
    return [*md, ""]
