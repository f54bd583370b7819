"""Whether a study's verdicts hold on other seeds: the study rerun with ``seeds=``
against the study as published.

A verdict is put to the test when the published study calls it better or worse and its
effect lies beyond its own minimum detectable effect (|mean paired difference| > MDE,
the domain's MDE, on final pass@1 or on the area under the held-out curve). Such a
verdict claims an effect the design was powered to find; a rerun on new seeds, same
rows, regimes, arms and settings, should give it again. A verdict inside the MDE (or
inside the noise) makes no such claim and is not tested: at 80% power a true effect at
the MDE is missed once in five reruns.

``recipe-arena study FILE seeds=4,5,6,7 out_dir=DIR replicates=PUBLISHED`` runs the
chosen rows on the new seeds, then prints one line per tested verdict (one that does not
hold says whether the rerun's interval still holds the published effect or excludes it:
too noisy to confirm, or evidence against); ``python -m
recipe_arena.eval.replication PUBLISHED RERUN`` reads two finished study directories
(a committed export included) without running or writing anything.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from recipe_arena.eval.comparison import Comparison
from recipe_arena.eval.study_report import RowResult, load_rows, verdict

DIRECTIONAL = ("better", "worse")
"""The verdicts that claim a direction; every other verdict claims no effect."""


@dataclass(frozen=True)
class Replication:
    """One published verdict beyond its MDE and what the rerun gave for it."""

    row: str
    regime: str
    arm: str
    domain: str
    measure: str
    """"final" (final held-out pass@1) or "area" (area under the held-out curve)."""
    published: Comparison
    rerun: Comparison | None
    """The same comparison in the rerun; None where the rerun lacks it (row not rerun)."""

    @property
    def holds(self) -> bool | None:
        """True when the rerun gives the same verdict, None when it has no such comparison."""
        if self.rerun is None:
            return None
        return verdict(self.rerun) == verdict(self.published)

    @property
    def contradicted(self) -> bool | None:
        """For a verdict that does not hold: True when the rerun's 95% interval excludes
        the published effect (the rerun is evidence against it), False when it still
        holds it (the rerun, at its own noise, neither confirms nor refutes it); None
        when the verdict holds or was not rerun. Why: at 80% power a true effect at its
        MDE is missed once in five reruns, and a miss whose interval covers the
        published effect says that the rerun was too noisy, not that the effect is not
        there."""
        if self.rerun is None or self.holds:
            return None
        d = self.rerun.test.diff
        return not d.lo <= self.published.test.diff.value <= d.hi


def beyond_mde(c: Comparison) -> bool:
    """Better or worse (Holm-corrected p below 0.05) by more than the comparison's MDE."""
    return verdict(c) in DIRECTIONAL and abs(c.test.diff.value) > c.test.mde


def _measures(r: RowResult) -> dict[str, list[Comparison]]:
    return {"final": r.comps, "area": r.speed.comps if r.speed else []}


def replications(published: Path, rerun: Path) -> list[Replication]:
    """Every verdict of ``published`` beyond its MDE, paired with the same row, regime,
    arm, domain and measure in ``rerun`` (both study directories, read and not
    re-rendered)."""
    _, pub_rows = load_rows(published, render=False)
    _, new_rows = load_rows(rerun, render=False)
    new = {
        (r.row, r.regime, measure, c.arm, c.domain): c
        for r in new_rows
        for measure, comps in _measures(r).items()
        for c in comps
    }
    out = []
    for r in pub_rows:
        for measure, comps in _measures(r).items():
            for c in comps:
                if c.control or not beyond_mde(c):
                    continue
                other = new.get((r.row, r.regime, measure, c.arm, c.domain))
                out.append(Replication(r.row, r.regime, c.arm, c.domain, measure, c, other))
    return out


def _cell(c: Comparison) -> str:
    return f"{c.test.diff.fmt(signed=True)}, MDE {c.test.mde:.3f}, {verdict(c)}"


def report_lines(found: list[Replication]) -> list[str]:
    """One line per tested verdict, then the count: 'N of M hold' over those rerun."""
    lines = []
    for f in found:
        where = f"{f.row} ({f.regime}) {f.arm}, {f.domain} {f.measure}"
        if f.rerun is None:
            lines.append(f"not rerun  {where}: {_cell(f.published)}")
            continue
        mark = "holds     " if f.holds else "DIFFERS   "
        why = ""
        if f.contradicted is not None:
            why = "; its interval " + ("excludes" if f.contradicted else "holds")
            why += " the published effect"
        lines.append(f"{mark} {where}: {_cell(f.published)} -> {_cell(f.rerun)}{why}")
    tested = [f for f in found if f.rerun is not None]
    held = sum(bool(f.holds) for f in tested)
    against = sum(bool(f.contradicted) for f in tested)
    lines.append(
        f"replicates: {held} of {len(tested)} verdicts beyond their MDE hold on the rerun's "
        f"seeds ({len(found) - len(tested)} not rerun); of the {len(tested) - held} that do "
        f"not, {against} contradict the published effect (the rerun's interval excludes it)"
    )
    return lines


def check_replication(published: Path, rerun: Path) -> bool:
    """Print the lines of ``report_lines``; True when every verdict rerun holds."""
    found = replications(published, rerun)
    for line in report_lines(found):
        print(line, flush=True)
    return all(f.holds is not False for f in found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("published", type=Path, help="the study as published (a study directory)")
    ap.add_argument("rerun", type=Path, help="the same study on other seeds")
    args = ap.parse_args(argv)
    return 0 if check_replication(args.published, args.rerun) else 1


if __name__ == "__main__":
    raise SystemExit(main())
