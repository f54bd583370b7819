"""The documentation a user reads: every relative link and ``#anchor`` in README.md,
CONTRIBUTING.md and docs/ resolves, and the README stays a page a newcomer reads in minutes.

Anchors follow GitHub's rule for heading ids: the heading's text in lower case, every
character that is not a letter, digit, space, hyphen or underscore removed, spaces made
hyphens, and a repeated id suffixed ``-1``, ``-2``, ... in document order.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 150
"""The README's length limit in lines: about what a newcomer reads in five minutes."""

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_INLINE_CODE = re.compile(r"`[^`]*`")


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's id of a heading's text (without the duplicate suffix)."""
    text = heading.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading id of a Markdown file, duplicates suffixed as GitHub does."""
    seen: dict[str, int] = {}
    ids = set()
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        m = _HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        ids.add(base if n == 0 else f"{base}-{n}")
    return ids


def links(path: Path) -> list[str]:
    """The link targets of a Markdown file's prose (not in code blocks or inline code)."""
    found = []
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        found += _LINK.findall(_INLINE_CODE.sub("", line))
    return found


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """Relative links of ``path`` whose file or anchor does not exist, each named by
    ``path`` relative to ``root``."""
    bad = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            bad.append(f"{path.relative_to(root)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{path.relative_to(root)}: {target} (no such heading)")
    return bad


def test_slug_matches_githubs_heading_ids() -> None:
    """Hand-derived ids: backticks, apostrophes, colons, commas, dots and slashes go;
    hyphens stay; spaces become hyphens."""
    assert slug("Time of `make run`") == "time-of-make-run"
    assert slug("Kimi K3's pipeline: specialists, then MOPD") == (
        "kimi-k3s-pipeline-specialists-then-mopd"
    )
    assert slug("DeepSeek-V4.1-Flash's pipeline: RL, then OPD") == (
        "deepseek-v41-flashs-pipeline-rl-then-opd"
    )
    assert slug("The A/A control") == "the-aa-control"


def test_anchors_and_links_are_read_from_prose_only(tmp_path: Path) -> None:
    """A heading inside a code fence is no anchor, a second equal heading gets ``-1``,
    and a link inside inline code is no link; a missing file and a missing heading are
    both reported, an existing one is not."""
    (tmp_path / "other.md").write_text("# Other\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Top\n## Part\n## Part\n```bash\n# not a heading\n[x](nowhere.md)\n```\n"
        "[a](#part-1) [b](other.md#other) [c](other.md#top) [d](gone.md) `[e](gone2.md)`\n"
        "[f](#not-a-heading)\n"
    )
    assert anchors(doc) == {"top", "part", "part-1"}
    assert links(doc) == ["#part-1", "other.md#other", "other.md#top", "gone.md", "#not-a-heading"]
    bad = [b.split(": ", 1)[1] for b in broken_links(doc, tmp_path)]
    assert bad == [
        "other.md#top (no such heading)",
        "gone.md (no such file)",
        "#not-a-heading (no such heading)",
    ]


def test_every_relative_link_in_the_docs_resolves() -> None:
    """README.md, CONTRIBUTING.md and every page under docs/: each relative link names
    an existing file, and each ``#anchor`` an existing heading of its target."""
    bad = [b for path in _doc_files() for b in broken_links(path)]
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_readme_is_short() -> None:
    """The README is the five-minute page; details live under docs/."""
    n = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines (at most {README_MAX_LINES})"
