"""``recipe-arena verify IN.jsonl [OUT.jsonl]``: score a file of responses.

Input: one JSON object per line with ``domain``, ``response`` and ``ground_truth``;
optional ``id``, ``messages`` (chat list) or ``prompt`` (string), ``effort``,
``token_budget``. Output: the same objects with ``score`` (float in [0, 1], or null
when the row could not be scored) and ``reason`` added.

The input is other people's data: whatever a line holds (not UTF-8, not JSON, nested
200,000 deep, a 5,000-digit number, a number that overflows a float such as ``1e400``,
a lone surrogate, NaN, no user message, a prompt or line too long, malformed ground
truth) costs that row only: it gets ``score: null`` and an ``error:`` reason, counts
under ``errors`` and stays out of the averages. A line is read with a byte cap
(``MAX_LINE_BYTES``) and a longer one is skipped unparsed, so memory per row is
bounded before parsing. Problems with the files themselves (no input, a folder, a
device or socket as input, an output that cannot be written or replaced (an
immutable file, a folder that refuses it), is not a regular file, is a symlink or is
the input) raise VerifyError (one line; the CLI exits 2) before anything is scored.
The output is written to a temporary file beside it and renamed over it only when
complete; nothing else is ever replaced. Should that last rename still fail, the
scores stay in the temporary file, whose path the error names.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import json
import math
import os
import stat
import sys
import tempfile
import unicodedata
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.data.schema import DOMAINS, PromptRow, chat_reference

CHUNK = 256
CHUNK_BYTES = 16 << 20
"""A chunk is scored once it holds ``CHUNK`` rows or this many bytes of input lines: a
parsed line holds up to about 25 times its size in objects (4 MiB of ``[{}, {}, ...]``
is 100 MB), so 256 lines near ``MAX_LINE_BYTES`` held at once would need 25 GB."""
MAX_LINE_BYTES = 4 << 20
"""Longer input lines (bytes) are skipped as errors without being parsed: parsing and
scoring a line costs a few times its size (a 20 MB chat prompt cost GBs in the judge's
tokenizer before its row was refused)."""
MAX_PROMPT_CHARS = 200_000
"""Longer prompts (all messages together, characters) are refused: no judge context
holds them, and tokenizing one costs hundreds of MB."""
MAX_SKIP_BYTES = 1 << 30
"""An over-long line is skipped up to this many bytes; a longer one ends the input
(an endless stream without a newline)."""


NOT_SCORED = ("error:", "judge failed")
"""Reasons of rows that could not be scored (malformed ground truth, no verdict)."""


class VerifyError(ValueError):
    """A problem with the input or output file; the message is one line. A character
    that is not printable, in a file name from someone else's archive (a newline, an
    escape), is shown as Python escapes it (``\\n``, ``\\x1b``): written as it was, it
    split the line and drove the terminal (``\\x1b[2J`` clears it)."""

    def __init__(self, message: str) -> None:
        super().__init__("".join(c if c.isprintable() else ascii(c)[1:-1] for c in message))


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} overflows a float")
    return value


def parse_line(raw: bytes, lineno: int) -> tuple[Any, str]:
    """(record, "") or (None, "error: ...") for one input line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"error: line {lineno} is not UTF-8 (byte {raw[e.start]:#04x} at {e.start})"
    try:
        rec = json.loads(text, parse_constant=_no_constants, parse_float=_finite_float)
    except RecursionError:
        return None, f"error: line {lineno} is nested too deeply to parse"
    except (ValueError, MemoryError) as e:
        return None, f"error: line {lineno} is not valid JSON ({str(e).splitlines()[0][:120]})"
    try:
        json.dumps(rec, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        return None, f"error: line {lineno} holds a lone surrogate (not Unicode text)"
    except (ValueError, RecursionError):
        return None, f"error: line {lineno} cannot be written back as JSON"
    return rec, ""


def row_from_record(rec: Any, lineno: int) -> tuple[PromptRow | None, str]:
    """(row, "") or (None, "error: ...") for one input record."""
    if not isinstance(rec, dict):
        return None, "error: line is not a JSON object"
    missing = [k for k in ("domain", "response") if k not in rec]
    if missing:
        return None, f"error: missing field(s) {', '.join(missing)}"
    if rec["domain"] not in DOMAINS:
        return None, f"error: domain {str(rec['domain'])[:40]!r} not one of {', '.join(DOMAINS)}"
    if not isinstance(rec["response"], str):
        return None, "error: response must be a string"
    messages = rec.get("messages") or [{"role": "user", "content": str(rec.get("prompt", ""))}]
    if isinstance(messages, list):
        size = sum(len(str(m.get("content", ""))) if isinstance(m, dict) else 0 for m in messages)
        if size > MAX_PROMPT_CHARS:
            return None, f"error: prompt longer than {MAX_PROMPT_CHARS} characters ({size})"
    gold, why = _chat_gold(rec) if rec["domain"] == "chat" else (rec.get("ground_truth"), "")
    if why:
        return None, why
    try:
        row = PromptRow(
            id=str(rec.get("id", f"line{lineno}"))[:200],
            messages=messages,
            ground_truth=gold,
            domain=rec["domain"],
            effort=rec.get("effort"),
            token_budget=rec.get("token_budget"),
        )
    except (ValueError, TypeError) as e:
        first = str(e).splitlines()[1:2] or [str(e)]
        return None, f"error: bad row ({first[0].strip()[:120]})"
    if row.domain in ("chat", "ifeval") and not any(m.role == "user" for m in row.messages):
        return None, f"error: a {row.domain} row needs a user message (messages or prompt)"
    return row, ""


def _chat_gold(rec: dict[str, Any]) -> tuple[Any, str]:
    """(reference, "") for a chat record, or (None, "error: ...") when its ground truth is
    neither text, a number nor null (``schema.chat_reference``, as training reads it)."""
    try:
        return chat_reference(rec.get("ground_truth")), ""
    except ValueError as e:
        return None, f"error: {e}"


def _records(path: Path) -> Iterator[tuple[int, Any, str, int]]:
    """(line number, record, error, bytes read) for each line that is not blank."""
    with open(path, "rb") as f:
        lineno = 0
        while True:
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            lineno += 1
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]  # editors that save "UTF-8 with BOM"
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                skipped = len(raw)
                del raw
                while (more := f.readline(1 << 20)) and not more.endswith(b"\n"):
                    skipped += len(more)
                    if skipped > MAX_SKIP_BYTES:
                        yield (
                            lineno,
                            {"line": lineno},
                            f"error: line {lineno} has no end within {MAX_SKIP_BYTES} bytes; "
                            "input not read further",
                            0,
                        )
                        return
                yield (
                    lineno,
                    {"line": lineno},
                    f"error: line {lineno} is longer than {MAX_LINE_BYTES} bytes",
                    0,
                )
                continue
            if not raw.strip():
                continue
            rec, err = parse_line(raw, lineno)
            yield lineno, {"line": lineno} if err else rec, err, len(raw)


def check_paths(in_path: Path, out_path: Path | None) -> None:
    """Raise VerifyError (one line) for an input or output that must not be used."""
    try:
        st_in = in_path.stat()
    except FileNotFoundError:
        raise VerifyError(f"no such input file: {in_path}") from None
    except OSError as e:
        raise VerifyError(f"cannot read input {in_path}: {e.strerror}") from None
    if stat.S_ISDIR(st_in.st_mode):
        raise VerifyError(f"input {in_path} is a directory, not a JSONL file")
    if not (stat.S_ISREG(st_in.st_mode) or stat.S_ISFIFO(st_in.st_mode)):
        raise VerifyError(
            f"input {in_path} is a device or socket, not a JSONL file (a pipe is fine)"
        )
    if not os.access(in_path, os.R_OK):
        raise VerifyError(f"cannot read input {in_path}: permission denied")
    if out_path is None:
        return
    try:
        st_out = os.lstat(out_path)
    except FileNotFoundError:
        st_out = None
    except OSError as e:
        raise VerifyError(f"cannot use output {out_path}: {e.strerror}") from None
    if st_out is not None:
        if stat.S_ISLNK(st_out.st_mode):
            raise VerifyError(f"output {out_path} is a symlink; refusing to replace it")
        if not stat.S_ISREG(st_out.st_mode):
            raise VerifyError(f"output {out_path} is not a regular file; refusing to replace it")
        if (st_out.st_dev, st_out.st_ino) == (st_in.st_dev, st_in.st_ino):
            raise VerifyError(f"output {out_path} is the input file; write the scores elsewhere")
    parent = out_path.parent if str(out_path.parent) else Path(".")
    if not parent.is_dir():
        raise VerifyError(f"output folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise VerifyError(f"output folder {parent} is not writable")


def _probe_replace(out_path: Path) -> None:
    """Raise VerifyError unless ``out_path``'s entry can be replaced: move an existing
    output aside and back (an immutable or append-only file, or a sticky folder owned
    by someone else, refuses this just as it would refuse the final rename)."""
    if not os.path.lexists(out_path):
        return
    aside = out_path.with_name(f".{out_path.name}.{os.getpid()}.probe")
    try:
        os.rename(out_path, aside)
    except OSError as e:
        raise VerifyError(f"output {out_path} cannot be replaced: {e.strerror}") from None
    try:
        os.rename(aside, out_path)
    except OSError as e:
        raise VerifyError(
            f"output {out_path} could not be put back from {aside}: {e.strerror}"
        ) from None


@contextlib.contextmanager
def _atomic_output(out_path: Path | None) -> Iterator[IO[str]]:
    """stdout, or a temporary file beside ``out_path`` renamed over it on success."""
    if out_path is None:
        yield sys.stdout
        return
    _probe_replace(out_path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out_path.name}.", suffix=".tmp", dir=out_path.parent)
    except OSError as e:
        raise VerifyError(f"cannot write output {out_path}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    try:
        os.replace(tmp, out_path)
    except OSError as e:  # the scores are complete: keep them where they are
        raise VerifyError(
            f"cannot replace output {out_path} ({e.strerror}); the scores are in {tmp}"
        ) from None


def verify_jsonl(
    in_path: str | Path, out_path: str | Path | None, cfg: RewardsConfig | None = None
) -> dict[str, float]:
    """Score every line of ``in_path``; write to ``out_path`` (stdout if None).

    Returns a summary: ``rows``, ``errors`` (rows not scored), ``score/<domain>``
    (mean over scored rows) and ``count/<domain>``. Progress goes to stderr.
    """
    from recipe_arena.rewards.scorer import build_scorer

    in_path = Path(in_path)
    out = Path(out_path) if out_path is not None else None
    check_paths(in_path, out)
    tally = _Tally()
    with _atomic_output(out) as f, build_scorer(cfg or RewardsConfig()) as scorer:
        chunk: list[tuple[Any, PromptRow | None, str]] = []
        held = 0  # bytes of input lines in the chunk
        for lineno, rec, err, size in _records(in_path):
            row, why = (None, err) if err else row_from_record(rec, lineno)
            chunk.append((rec, row, why))
            held += size
            if len(chunk) >= CHUNK or held >= CHUNK_BYTES:
                tally.flush(scorer, chunk, f)
                chunk, held = [], 0
        tally.flush(scorer, chunk, f)
    return tally.summary()


def _score(
    scorer: Any, chunk: list[tuple[Any, PromptRow | None, str]], good: list[Any]
) -> list[Any]:
    """The scorer's results for the ``good`` rows of ``chunk``; should the batch call
    fail as a whole, each row is scored alone, and a row that still fails gets an
    ``error:`` result, so no row is lost with the others."""
    from recipe_arena.rewards.text import RewardResult

    rows = [r for _, r in good]
    responses = [chunk[i][0]["response"] for i, _ in good]
    if not rows:
        return []
    try:
        return list(scorer.score(rows, responses))
    except Exception:
        pass
    out = []
    for row, resp in zip(rows, responses, strict=True):
        try:
            out.extend(scorer.score([row], [resp]))
        except Exception as e:
            out.append(RewardResult(0.0, f"error: scoring failed ({type(e).__name__})"))
    return out


_UNSEEN = ("Cc", "Cf", "Zl", "Zp")
"""Categories written escaped in an output line: C1 controls and DEL (``\\x9b`` starts a
terminal escape sequence), format characters (a right-to-left override ``\\u202e``
redraws the rest of the line backwards) and the line and paragraph separators."""


@functools.cache
def _unseen_escapes() -> dict[int, str]:
    """Each character of ``_UNSEEN`` outside ASCII but DEL, to its JSON escape (built once,
    on the first line that is not ASCII)."""
    return {
        c: json.dumps(chr(c))[1:-1]
        for c in range(0x7F, sys.maxunicode + 1)
        if unicodedata.category(chr(c)) in _UNSEEN
    }


def _escaped_line(line: str) -> str:
    """The JSON ``line`` with each character of ``_UNSEEN`` written as its ``\\u`` escape:
    the same JSON value, shown as it is. ``json.dumps`` escapes C0 controls only, so a
    response holding ``\\u202e`` printed to a terminal (verify writes to stdout without an
    output file) drew the row's score and reason reversed or sent escapes."""
    if line.isascii() and "\x7f" not in line:
        return line
    return line.translate(_unseen_escapes())


def _printable(text: str) -> str:
    """``text`` with its control characters shown as spaces (a reason is one line)."""
    return "".join(c if c.isprintable() else " " for c in text)


class _Tally:
    """Running sums per domain and the count of rows not scored."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self.n = self.errors = 0

    def flush(
        self, scorer: Any, chunk: list[tuple[Any, PromptRow | None, str]], out: IO[str]
    ) -> None:
        good = [(i, row) for i, (_, row, _) in enumerate(chunk) if row is not None]
        by_index = dict(zip((i for i, _ in good), _score(scorer, chunk, good), strict=True))
        for i, (rec, row, why) in enumerate(chunk):
            rec = dict(rec) if isinstance(rec, dict) else {"line": i}
            res = by_index.get(i)
            score: float | None = None if res is None else res.score
            reason = why if res is None else res.reason
            if score is not None and (reason.startswith(NOT_SCORED) or not math.isfinite(score)):
                score, reason = None, reason if reason.startswith("error:") else f"error: {reason}"
            if score is None or row is None:
                rec["score"], rec["reason"] = None, _printable(reason)
                self.errors += 1
            else:
                rec["score"], rec["reason"] = score, _printable(reason)
                self.sums[row.domain] += score
                self.counts[row.domain] += 1
            try:
                line = json.dumps(rec, ensure_ascii=False, allow_nan=False)
            except (ValueError, TypeError, RecursionError) as e:  # never loses the batch
                if score is not None and row is not None:
                    self.sums[row.domain] -= score
                    self.counts[row.domain] -= 1
                    self.errors += 1
                line = json.dumps(
                    {"line": rec.get("line"), "id": str(rec.get("id", ""))[:200], "score": None,
                     "reason": f"error: row cannot be written back as JSON ({type(e).__name__})"}
                )  # fmt: skip
            out.write(_escaped_line(line) + "\n")
        out.flush()
        self.n += len(chunk)
        if chunk:
            print(f"verify: {self.n} rows scored ({self.errors} errors)", file=sys.stderr)

    def summary(self) -> dict[str, float]:
        out: dict[str, float] = {"rows": float(self.n), "errors": float(self.errors)}
        for d in sorted(self.counts):
            out[f"score/{d}"] = self.sums[d] / self.counts[d]
            out[f"count/{d}"] = float(self.counts[d])
        return out
