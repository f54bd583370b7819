"""Report pages are self-contained: tables are tables, images are embedded, nothing loads."""

from __future__ import annotations

import base64
from pathlib import Path

from recipe_arena.eval.html import markdown_to_html


def test_tables_images_and_nothing_from_outside(tmp_path: Path) -> None:
    """A table becomes <table> with one <td> per cell; plot.png (8 bytes) is embedded as
    data:image/png;base64 of exactly those bytes; an image outside the report's folder,
    a missing one and a URL are shown as text, never referenced."""
    (tmp_path / "plot.png").write_bytes(b"\x89PNG1234")
    (tmp_path.parent / "secret.png").write_bytes(b"\x89PNGxxxx")
    md = (
        "# R\n\n| a | b |\n|---|---|\n| 1 | x \\| y |\n\n![p](plot.png)\n\n"
        "![s](../secret.png) ![m](missing.png) ![u](http://example.com/x.png)\n"
    )
    html = markdown_to_html("R <1>", md, tmp_path)
    assert "<title>R &lt;1&gt;</title>" in html
    assert "<td>1</td>" in html and "<td>x | y</td>" in html
    encoded = base64.b64encode(b"\x89PNG1234").decode()
    assert f'src="data:image/png;base64,{encoded}"' in html
    assert html.count("<img") == 1
    assert "[s: not available]" in html and "[m: not available]" in html
    assert "[u: not available]" in html and "example.com" not in html
