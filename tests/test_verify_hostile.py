"""`recipe-arena verify` on hostile input: every bad line costs itself only, bad files
exit 2 in one line, and the output is replaced atomically and only when it is safe.

The chat rows are judged by a real (untrained, tiny) micro model with a 256-token
context, saved as a checkpoint and named by ``rewards.judge_model``."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from recipe_arena.cli import main
from recipe_arena.config_rewards import RewardsConfig
from recipe_arena.models.factory import TinyModelSpec, build_micro, save_checkpoint
from recipe_arena.rewards.sandbox import isolation_mode
from recipe_arena.rewards.verify import verify_jsonl
from tests.hostile_tally import record

IFEVAL_GT = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
GOOD = [
    {"domain": "math", "response": "\\boxed{4}", "ground_truth": "4"},
    {"domain": "math", "response": "\\boxed{5}", "ground_truth": "4"},
    {
        "domain": "code",
        "response": "```python\ndef f(x): return x\n```",
        "ground_truth": ["assert f(2) == 2"],
    },
]
# name -> raw line (bytes); each must come back with score null and an error reason.
HOSTILE: dict[str, bytes] = {
    "200k_brackets": b"[" * 200_000,
    "5000_digit_integer": b'{"domain": "math", "response": "\\\\boxed{1}", "ground_truth": '
    + b"7" * 5000
    + b"}",
    "lone_surrogate": b'{"domain": "math", "response": "\\\\boxed{1} \\ud800", "ground_truth": "1"}',
    "not_utf8": b'{"domain": "math", "response": "\xff\xfe", "ground_truth": "1"}',
    "chat_without_user": json.dumps(
        {"domain": "chat", "response": "hi", "messages": [{"role": "system", "content": "s"}]}
    ).encode(),
    "ifeval_without_user": json.dumps(
        {
            "domain": "ifeval",
            "response": "hi",
            "messages": [{"role": "assistant", "content": "a"}],
            "ground_truth": IFEVAL_GT,
        }
    ).encode(),
    "chat_longer_than_judge_context": json.dumps(
        {"domain": "chat", "response": "yes", "prompt": "why? " * 400, "ground_truth": "no"}
    ).encode(),
    "nan_ground_truth": b'{"domain": "math", "response": "\\\\boxed{1}", "ground_truth": NaN}',
    "infinity_score_field": b'{"domain": "math", "response": "x", "ground_truth": "1", "w": Infinity}',
    "math_ground_truth_not_a_string": b'{"domain": "math", "response": "\\\\boxed{5}", "ground_truth": 5}',
    "code_ground_truth_not_a_list": b'{"domain": "code", "response": "```python\\nx=1\\n```", "ground_truth": "assert x"}',
    "code_tests_not_python": b'{"domain": "code", "response": "```python\\nx=1\\n```", "ground_truth": ["assert ("]}',
    "ifeval_ground_truth_garbage": b'{"domain": "ifeval", "response": "a", "prompt": "p", "ground_truth": {"instruction_id_list": ["nope:x"], "kwargs": [{}]}}',
    "unknown_domain": b'{"domain": "poetry", "response": "x"}',
    "not_an_object": b"[1, 2, 3]",
    "missing_response": b'{"domain": "math", "ground_truth": "1"}',
    "truncated_json": b'{"domain": "math", "resp',
    # a number that overflows a float, anywhere in the row (issue: rc 1, batch lost)
    "1e400_in_an_extra_field": b'{"domain": "math", "response": "\\\\boxed{4}", "ground_truth": "4", "w": 1e400}',
    "minus_1E400_deep_in_messages": b'{"domain": "chat", "response": "ok", "messages": [{"role": "user", "content": "q", "meta": [[-1E400]]}]}',
    "1e400_as_ground_truth": b'{"domain": "math", "response": "\\\\boxed{4}", "ground_truth": 1e400}',
    "1.5e99999_as_id": b'{"id": 1.5e99999, "domain": "math", "response": "\\\\boxed{4}", "ground_truth": "4"}',
    # memory per row: refused before parsing (line) or before scoring (prompt)
    "line_longer_than_the_cap": b'{"domain": "chat", "response": "ok", "prompt": "'
    + b"why " * ((4 << 20) // 4)
    + b'"}',
    "prompt_longer_than_the_cap": json.dumps(
        {"domain": "chat", "response": "ok", "prompt": "why " * 60_000}
    ).encode(),
    "messages_together_longer_than_the_cap": json.dumps(
        {
            "domain": "ifeval",
            "response": "ok",
            "ground_truth": IFEVAL_GT,
            "messages": [
                {"role": "system", "content": "s" * 150_000},
                {"role": "user", "content": "u" * 150_000},
            ],
        }
    ).encode(),  # fmt: skip
    # ground truths nested too deeply to send to a verifier worker (issue: pool closed)
    "math_ground_truth_nested_500": b'{"domain": "math", "response": "\\\\boxed{1}", "ground_truth": '
    + b"[" * 500
    + b"]" * 500
    + b"}",
    "code_tests_nested_900": b'{"domain": "code", "response": "```python\\nx=1\\n```", "ground_truth": '
    + b"[" * 900
    + b"]" * 900
    + b"}",
}


@pytest.fixture(scope="module")
def judge_dir(tmp_path_factory) -> Path:
    model, tok = build_micro(TinyModelSpec(max_position_embeddings=256), seed=0)
    return save_checkpoint(model, tok, tmp_path_factory.mktemp("judge") / "micro")


def _strict(line: str) -> dict:
    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} written into JSON")

    return json.loads(line, parse_constant=no_constants)


def test_every_hostile_line_costs_only_itself(tmp_path: Path, judge_dir: Path) -> None:
    """The 26 hostile lines of HOSTILE between the 3 good rows of GOOD: the batch goes
    through, every hostile line has score null and an ``error:`` reason, the good rows
    keep their scores, and the averages leave the errors out: math (1 + 0) / 2 = 0.5,
    code 1/1, 26 errors of 29 rows. Every output line is strict JSON (no NaN)."""
    inp = tmp_path / "rows.jsonl"
    names = list(HOSTILE)
    lines = [json.dumps(GOOD[0]).encode()] + [HOSTILE[n] for n in names]
    lines += [json.dumps(g).encode() for g in GOOD[1:]]
    inp.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "scored.jsonl"
    cfg = RewardsConfig(judge_model=str(judge_dir), workers=2, allow_weak_sandbox=True)
    summary = verify_jsonl(inp, out, cfg)
    got = [_strict(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(got) == len(lines)
    contained = sum(
        r["score"] is None and r["reason"].startswith("error:") for r in got[1 : 1 + len(names)]
    )
    record("verify: hostile rows", len(names), contained)
    for name, rec in zip(names, got[1 : 1 + len(names)], strict=True):
        assert rec["score"] is None and rec["reason"].startswith("error:"), (name, rec)
    assert [got[0]["score"], got[-2]["score"], got[-1]["score"]] == [1.0, 0.0, 1.0]
    assert len(HOSTILE) == 26
    assert summary == {
        "rows": 29.0,
        "errors": 26.0,
        "score/code": 1.0,
        "count/code": 1.0,
        "score/math": 0.5,
        "count/math": 2.0,
    }


def _cli(capsys, *args: str) -> tuple[int, str]:
    code = main(["verify", *args])
    return code, capsys.readouterr().err.strip()


def _good_input(tmp_path: Path) -> Path:
    inp = tmp_path / "rows.jsonl"
    inp.write_text(json.dumps(GOOD[0]) + "\n")
    return inp


def test_bad_files_exit_2_in_one_line(tmp_path: Path, capsys) -> None:
    """No input, a directory as input, an output under a regular file, an output that
    is the input (same path or a hard link): each exits 2 with one line naming it, and
    the input is untouched."""
    inp = _good_input(tmp_path)
    before = inp.read_bytes()
    (tmp_path / "plain").write_text("x")
    os.link(inp, tmp_path / "hardlink.jsonl")
    cases = {
        "no such input": (str(tmp_path / "missing.jsonl"), str(tmp_path / "o.jsonl")),
        "is a directory": (str(tmp_path), str(tmp_path / "o.jsonl")),
        "cannot use output": (str(inp), str(tmp_path / "plain" / "o.jsonl")),
        "does not exist": (str(inp), str(tmp_path / "nofolder" / "o.jsonl")),
        "is the input": (str(inp), str(inp)),
        "is the input file": (str(inp), str(tmp_path / "hardlink.jsonl")),
    }
    for expect, (i, o) in cases.items():
        code, err = _cli(capsys, i, o)
        assert code == 2 and expect in err and len(err.splitlines()) == 1, (expect, err)
    assert inp.read_bytes() == before


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_device_node_and_symlink_outputs_are_refused(tmp_path: Path, capsys) -> None:
    """Issue example: ``verify rows.jsonl /dev/null`` as root replaced the system's
    /dev/null with a plain file. Here a private character device (1, 3: null) and a
    symlink to a file are given as outputs: exit 2, the device is still a character
    device and the symlink's target is unchanged."""
    inp = _good_input(tmp_path)
    dev = tmp_path / "null"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    target = tmp_path / "target.txt"
    target.write_text("keep")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    for out, expect in ((dev, "not a regular file"), (link, "symlink")):
        code, err = _cli(capsys, str(inp), str(out))
        assert code == 2 and expect in err, err
    assert stat.S_ISCHR(os.lstat(dev).st_mode)
    assert link.is_symlink() and target.read_text() == "keep"


def test_output_is_replaced_whole_with_nothing_left_beside_it(tmp_path: Path, capsys) -> None:
    """An existing output is replaced by the complete new one; no temporary file stays."""
    inp = _good_input(tmp_path)
    out = tmp_path / "o.jsonl"
    out.write_text("old\n")
    code, _ = _cli(capsys, str(inp), str(out), "rewards.workers=1")
    assert code == 0
    assert [_strict(x)["score"] for x in out.read_text().splitlines()] == [1.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.jsonl", "rows.jsonl"]


@pytest.mark.skipif(
    isolation_mode() != "bwrap" and os.environ.get("CI") != "true",
    reason="needs root and bubblewrap",
)
def test_program_cannot_read_the_verify_input_through_proc() -> None:
    """Issue example: a program that looked through /proc/*/cmdline for the file being
    verified (``recipe-arena verify rows.jsonl``), parsed the assertions out of it and
    returned the expected values scored 3/3 computing nothing. A host process whose
    command line names the rows file stands in for the CLI; the file lies in a
    world-readable folder under /var/tmp (a sandbox that only hid /tmp let it through).
    The program must score 0."""
    from recipe_arena.rewards.code import check_code
    from tests.sandbox_attacks import ADD, SCAN_CMDLINES, fenced

    folder = Path(tempfile.mkdtemp(prefix="recipe_arena_verify_", dir="/var/tmp"))
    folder.chmod(0o755)
    inp = folder / "rows.jsonl"
    inp.write_text(json.dumps({"domain": "code", "ground_truth": ADD}) + "\n")
    inp.chmod(0o644)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(inp)])
    try:
        score, reason = check_code(ADD, fenced(SCAN_CMDLINES))
    finally:
        holder.kill()
        holder.wait()
        shutil.rmtree(folder)
    assert score == 0.0, reason


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null", "socket"])
def test_device_and_socket_inputs_exit_2_at_once(device: str, tmp_path: Path, capsys) -> None:
    """Issue example: ``verify /dev/zero`` hung forever. A character device (endless
    zeros, endless random bytes, or nothing) or a Unix socket as input exits 2 with one
    line, before any scorer starts (well within 10 s), and writes no output."""
    path = device
    sock = None
    if device == "socket":
        path = str(tmp_path / "s.sock")
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(path)
    try:
        t0 = time.monotonic()
        code, err = _cli(capsys, path, str(tmp_path / "o.jsonl"))
        assert time.monotonic() - t0 < 10.0
    finally:
        if sock is not None:
            sock.close()
    ok = code == 2 and "device or socket" in err and len(err.splitlines()) == 1
    record("verify: device and socket inputs", 1, int(ok and not (tmp_path / "o.jsonl").exists()))
    assert ok, err
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("endless", [b"\0", b"x", b"{"])
def test_an_endless_line_in_a_pipe_ends_the_input(
    endless: bytes, tmp_path: Path, monkeypatch
) -> None:
    """A pipe (a FIFO: allowed, like ``verify <(...)``) gives one good math row, then
    one line that never ends (zeros, letters, an unclosed object). With the skip cap
    at 8 MiB (MAX_SKIP_BYTES, lowered from 1 GiB for speed) verify returns: the good
    row scores 1, the endless line is one error row that says the input was not read
    further."""
    from recipe_arena.rewards import verify

    monkeypatch.setattr(verify, "MAX_SKIP_BYTES", 8 << 20)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    stop = threading.Event()

    def feed() -> None:
        with contextlib.suppress(BrokenPipeError, OSError), open(fifo, "wb") as w:
            w.write(json.dumps(GOOD[0]).encode() + b"\n")
            chunk = endless * (1 << 16)
            while not stop.is_set():
                w.write(chunk)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    out = tmp_path / "o.jsonl"
    try:
        summary = verify_jsonl(fifo, out, RewardsConfig(workers=1))
    finally:
        stop.set()
        with contextlib.suppress(OSError):  # unblock a writer still opening the FIFO
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(timeout=10)
    got = [_strict(x) for x in out.read_text().splitlines()]
    record("verify: endless input lines", 1, int([r["score"] for r in got] == [1.0, None]))
    assert [r["score"] for r in got] == [1.0, None]
    assert "input not read further" in got[1]["reason"]
    assert summary["rows"] == 2.0 and summary["errors"] == 1.0


def _chattr(flag: str, path: Path) -> bool:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


needs_chattr = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("chattr") is None, reason="chattr +i/+a needs root"
)


@needs_chattr
@pytest.mark.parametrize("how", ["immutable_file", "append_only_file", "append_only_folder"])
def test_an_output_that_cannot_be_replaced_is_refused_up_front(
    how: str, tmp_path: Path, capsys
) -> None:
    """Issue example: an immutable output passed the up-front checks and the batch was
    lost at the end. An existing output that is immutable (chattr +i), append-only
    (+a), or in an append-only folder cannot be replaced by a rename: verify exits 2
    with one line saying so before scoring, and the old output is untouched."""
    inp = _good_input(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "o.jsonl"
    out.write_text("old\n")
    target = folder if how == "append_only_folder" else out
    flag = "+i" if how == "immutable_file" else "+a"
    if not _chattr(flag, target):
        pytest.skip(f"chattr {flag} not supported on this filesystem")
    try:
        code, err = _cli(capsys, str(inp), str(out))
    finally:
        _chattr(flag.replace("+", "-"), target)
    ok = code == 2 and "cannot be replaced" in err and out.read_text() == "old\n"
    record("verify: unreplaceable outputs", 1, int(ok))
    assert code == 2 and "cannot be replaced" in err and len(err.splitlines()) == 1, err
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in folder.iterdir()) == ["o.jsonl"]


@needs_chattr
def test_scores_survive_an_output_made_immutable_during_the_run(tmp_path: Path, capsys) -> None:
    """The output passes the up-front check, then becomes immutable while the rows are
    scored (a thread runs chattr +i once the temporary output exists). The final rename
    fails: verify exits 2, its error line names the file that holds the scores, and that
    file holds them (math 1.0 and 0.0)."""
    inp = tmp_path / "rows.jsonl"
    inp.write_text("".join(json.dumps(g) + "\n" for g in GOOD[:2]))
    out = tmp_path / "o.jsonl"
    out.write_text("old\n")
    done = threading.Event()

    def freeze() -> None:
        while not done.is_set():
            if any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
                _chattr("+i", out)
                return
            time.sleep(0.01)

    th = threading.Thread(target=freeze, daemon=True)
    th.start()
    try:
        code, err = _cli(capsys, str(inp), str(out), "rewards.workers=1")
    finally:
        done.set()
        th.join(timeout=10)
        _chattr("-i", out)
    last = err.splitlines()[-1]  # after the progress lines
    assert code == 2 and last.startswith("recipe-arena: verify: cannot replace output"), err
    kept = Path(last.rsplit("the scores are in ", 1)[1])
    record("verify: output refused at the end", 1, int(kept.is_file()))
    try:
        assert [_strict(x)["score"] for x in kept.read_text().splitlines()] == [1.0, 0.0]
        assert out.read_text() == "old\n"
    finally:
        kept.unlink()


@pytest.mark.slow
def test_memory_per_row_is_bounded_before_parsing(tmp_path: Path) -> None:
    """Issue example: three chat rows with 20 MB prompts took verify to 8.8 GB, a 2.6 MB
    prompt to 1.6 GB. Here ``recipe-arena verify`` runs twice in a subprocess: on one
    math row, and on that row plus three 20 MB chat rows (over the 4 MiB line cap: not
    parsed) and three 2.6 MB ones (under it: parsed, refused by the 200,000-character
    prompt cap). Its peak RSS (ru_maxrss of the child) grows by under 100 MB."""
    good = json.dumps(GOOD[0]) + "\n"
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    small.write_text(good)
    with open(big, "w") as f:
        for words in (5 << 20, 5 << 20, 5 << 20, 650_000, 650_000, 650_000):
            f.write(json.dumps({"domain": "chat", "response": "ok", "prompt": "why " * words}))
            f.write("\n")
        f.write(good)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    peaks = []
    for inp in (small, big):
        probe = (
            "import resource, subprocess, sys\n"
            "subprocess.run([sys.executable, '-m', 'recipe_arena.cli', 'verify', sys.argv[1],"
            " sys.argv[2], 'rewards.workers=1'], check=True)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        )
        res = subprocess.run(
            [sys.executable, "-c", probe, str(inp), str(inp) + ".out"],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        peaks.append(int(res.stdout.split()[-1]) / 1024)
    assert peaks[1] - peaks[0] < 100, peaks
    got = [json.loads(x) for x in Path(str(big) + ".out").read_text().splitlines()]
    assert [r["score"] for r in got] == [None] * 6 + [1.0]


def test_a_file_saved_with_a_byte_order_mark_keeps_its_first_row(tmp_path: Path, capsys) -> None:
    """Editors that save "UTF-8 with BOM" put EF BB BF before the first line. By hand: the
    two math rows (``4`` for 4, ``5`` for 4) score 1.0 and 0.0 and no row is an error.
    Before, the first row was refused as "not valid JSON (Unexpected UTF-8 BOM)" and only
    the second was scored; a mark anywhere but the file's start is still invalid JSON."""
    inp = tmp_path / "rows.jsonl"
    rows = [{"domain": "math", "response": r, "ground_truth": "4"} for r in ("4", "5")]
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    inp.write_bytes(b"\xef\xbb\xbf" + body + b"\xef\xbb\xbf" + body.splitlines(True)[0])
    out = tmp_path / "o.jsonl"
    _cli(capsys, str(inp), str(out), "rewards.workers=1")
    got = [_strict(x) for x in out.read_text().splitlines()]
    assert [g.get("score") for g in got] == [1.0, 0.0, None], got
    assert "BOM" in got[2]["reason"], got[2]
