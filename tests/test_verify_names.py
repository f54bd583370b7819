"""`recipe-arena verify` on files whose names come from someone else: a name holding a
newline, a terminal escape or a bidirectional override is refused in one printable line,
through the real CLI as a user runs it (``recipe-arena verify *.jsonl``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipe_arena.cli import main
from tests.hostile_tally import record

NAMES = [
    # each name forges a second line that looks like verify's own, after clearing the screen
    "evil\n\x1b[2Jrecipe-arena: verify: all rows scored.jsonl",
    "rows\r\x1b]0;owned\x07.jsonl",  # a carriage return, a terminal title
    "rows\u202elnosj.txt",  # a right-to-left override: shown as rows.txt...
    "rows\x9b2J.jsonl",  # the C1 control sequence introducer
]


@pytest.mark.parametrize("name", NAMES)
def test_a_hostile_file_name_is_shown_escaped_in_one_line(
    name: str, tmp_path: Path, capsys
) -> None:
    """The name is a folder (refused as input) and, in a second run, a missing input next
    to a real one: verify exits 2 and its one line shows each such character escaped
    (``\\n``, ``\\x1b``); it wrote them as they were, splitting the line and sending the
    escape to the terminal."""
    (tmp_path / name).mkdir()
    good = tmp_path / "rows.jsonl"
    good.write_text(json.dumps({"domain": "math", "response": "4", "ground_truth": "4"}) + "\n")
    errors = []
    for args in ([str(tmp_path / name)], [str(tmp_path / name / "missing.jsonl")]):
        code = main(["verify", *args])
        errors.append((code, capsys.readouterr().err.rstrip("\n")))
    ok = all(c == 2 and len(e.splitlines()) == 1 and e.isprintable() for c, e in errors)
    record("verify: hostile file names", 1, int(ok))
    for code, err in errors:
        assert code == 2 and len(err.splitlines()) == 1 and err.isprintable(), repr(err)
        assert ascii(name[4])[1:-1] in err, err  # the character, escaped


def test_a_plain_name_is_shown_as_it_is(tmp_path: Path, capsys) -> None:
    """Printable names, accents and spaces included, are shown unchanged."""
    folder = tmp_path / "données 2026"
    folder.mkdir()
    assert main(["verify", str(folder)]) == 2
    assert f"input {folder} is a directory" in capsys.readouterr().err
