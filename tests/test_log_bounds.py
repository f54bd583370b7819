"""The bounds on reading a run's JSON-lines logs (``rundir.open_log``), which reports read
from run folders that others hand over: a line at most ``LOG_MAX_LINE_CHARS`` long, at
most ``LOG_MAX_LINES`` lines and ``LOG_MAX_CHARS`` characters in all, gzipped or not, and
a regular file. Each test reads a log just within a bound whole and one just past it not
at all, through ``read_metrics`` and ``read_eval_scores`` as ``report`` calls them; a
reader that counted bytes of the gzip instead of the text, or dropped a bound, fails
one of them. Before the bounds, a log that never ended or a gzip bomb was read until
memory ran out."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from recipe_arena.comparison_plan import ArtifactError
from recipe_arena.eval.scores import read_eval_scores
from recipe_arena.rundir import (
    LOG_MAX_CHARS,
    LOG_MAX_LINE_CHARS,
    LOG_MAX_LINES,
    LogReadError,
    read_metrics,
)


def _packed(path: Path, text: str) -> None:
    """``path``.gz holding ``text``, as an exported study keeps its logs."""
    with gzip.open(path.with_name(path.name + ".gz"), "wt", compresslevel=1) as f:
        f.write(text)


def test_a_line_of_the_longest_length_is_read_and_one_longer_is_refused(tmp_path: Path) -> None:
    """A record padded with blanks to ``LOG_MAX_LINE_CHARS`` characters, its newline
    included, is read; one character more and the log is refused rather than the line
    read on (a line that never ends would never stop)."""
    body = '{"stage": "rlvr", "step": 1}'
    longest = body + " " * (LOG_MAX_LINE_CHARS - len(body) - 1) + "\n"
    assert len(longest) == LOG_MAX_LINE_CHARS
    _packed(tmp_path / "metrics.jsonl", longest)
    assert read_metrics(tmp_path) == [{"stage": "rlvr", "step": 1}]
    _packed(tmp_path / "metrics.jsonl", " " + longest)
    with pytest.raises(LogReadError, match=f"a line longer than {LOG_MAX_LINE_CHARS}"):
        read_metrics(tmp_path)


@pytest.mark.slow
def test_a_log_of_the_most_lines_is_read_and_one_more_is_refused(tmp_path: Path) -> None:
    """``LOG_MAX_LINES`` lines of ``{}`` (3 characters each, far within the length bound)
    make as many records; one more line and the log is refused: a gzip of a few MB of
    such lines would otherwise make tens of millions of objects. About 10 s."""
    _packed(tmp_path / "metrics.jsonl", "{}\n" * LOG_MAX_LINES)
    assert len(read_metrics(tmp_path)) == LOG_MAX_LINES
    _packed(tmp_path / "metrics.jsonl", "{}\n" * (LOG_MAX_LINES + 1))
    with pytest.raises(LogReadError, match=f"more than {LOG_MAX_LINES} lines"):
        read_metrics(tmp_path)


@pytest.mark.slow
def test_a_log_of_the_most_characters_is_read_and_one_more_is_refused(tmp_path: Path) -> None:
    """``LOG_MAX_CHARS`` characters as 16 lines of ``LOG_MAX_LINE_CHARS`` (each a record
    padded with blanks) are read whole, expanded from a gzip of about 1 MB; one more
    character and the log is refused. About 10 s."""
    lines = LOG_MAX_CHARS // LOG_MAX_LINE_CHARS
    assert lines * LOG_MAX_LINE_CHARS == LOG_MAX_CHARS and lines < LOG_MAX_LINES
    line = "{}" + " " * (LOG_MAX_LINE_CHARS - 3) + "\n"
    _packed(tmp_path / "metrics.jsonl", line * lines)
    assert os.path.getsize(tmp_path / "metrics.jsonl.gz") < 2 << 20
    assert read_metrics(tmp_path) == [{}] * lines
    _packed(tmp_path / "metrics.jsonl", line * lines + "\n")
    with pytest.raises(LogReadError, match=f"longer than {LOG_MAX_CHARS} characters"):
        read_metrics(tmp_path)


def test_a_log_that_is_not_a_regular_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """An evaluation log linked to ``/dev/zero`` (one line of zeros that never ends) and
    a metrics log that is a FIFO (opening it would wait for a writer for ever) are
    refused at once, and the report names such a file as one it cannot read whole
    (``read_eval_scores`` here, ``comparison.load_run`` for the metrics;
    tests/test_study_damaged.py)."""
    (tmp_path / "eval_scores.jsonl").symlink_to("/dev/zero")
    with pytest.raises(ArtifactError, match="cannot be read whole .not a regular file"):
        read_eval_scores(tmp_path, finished=True)
    os.mkfifo(tmp_path / "metrics.jsonl")
    with pytest.raises(LogReadError, match="not a regular file"):
        read_metrics(tmp_path)
