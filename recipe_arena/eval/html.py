"""A report's Markdown as one self-contained HTML page.

The Markdown is parsed by markdown-it-py (CommonMark with GitHub tables), so tables
become real ``<table>`` elements; every image it references is read from the report's
directory and embedded as a ``data:`` URI, so the page loads nothing from anywhere
(no network, no sibling files) and can be mailed or archived on its own. Images and
wide tables are held to the page width.
"""

from __future__ import annotations

import base64
import html
import mimetypes
from pathlib import Path

from markdown_it import MarkdownIt

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto;
       max-width: 1200px; padding: 0 16px; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; margin-top: 1.6em;
     border-bottom: 1px solid #ddd; } h3 { font-size: 1.1em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em;
        display: block; max-width: 100%; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
tbody tr:nth-child(even) { background: #fafafa; }
img { max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
code { background: #f3f3f3; padding: 0 3px; }
p.note { color: #555; font-size: 0.9em; }
"""


def _data_uri(path: Path) -> str | None:
    if not path.is_file():
        return None
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def markdown_to_html(title: str, markdown: str, base_dir: str | Path) -> str:
    """The page for ``markdown``; relative image paths resolve against ``base_dir``. An
    image that is missing, or that points outside ``base_dir`` or at a URL, is shown as
    its alt text rather than fetched."""
    base = Path(base_dir).resolve()
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(markdown)
    for token in tokens:
        for child in token.children or []:
            if child.type != "image":
                continue
            src = str(child.attrGet("src") or "")
            target = (base / src).resolve()
            uri = _data_uri(target) if target.is_relative_to(base) and ":" not in src else None
            if uri is None:
                child.type = "text"
                child.content = f"[{child.content or src}: not available]"
            else:
                child.attrSet("src", uri)
    body = md.renderer.render(tokens, md.options, {})
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>\n{body}</body></html>\n"
    )


def write_pages(out_dir: Path, title: str, md: list[str]) -> None:
    """report.md and its self-contained report.html in ``out_dir``."""
    text = "\n".join(md) + "\n"
    (out_dir / "report.md").write_text(text)
    (out_dir / "report.html").write_text(markdown_to_html(title, text, out_dir))
