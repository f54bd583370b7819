"""`recipe-arena verify` on hostile input: every bad line costs itself only, bad files
exit 2 in one line, and the output is replaced atomically and only when it is safe.

The chat rows are judged by a real (untrained, tiny) micro model with a 256-token
context, saved as a checkpoint and named by ``rewards.judge_model``."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from recipe_arena.cli import main
from recipe_arena.config import RewardsConfig
from recipe_arena.models.factory import TinyModelSpec, build_micro, save_checkpoint
from recipe_arena.rewards.sandbox import isolation_mode
from recipe_arena.rewards.verify import verify_jsonl

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
    """The 17 hostile lines of HOSTILE between the 3 good rows of GOOD: the batch goes
    through, every hostile line has score null and an ``error:`` reason, the good rows
    keep their scores, and the averages leave the errors out: math (1 + 0) / 2 = 0.5,
    code 1/1, 17 errors of 20 rows. Every output line is strict JSON (no NaN)."""
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
    for name, rec in zip(names, got[1 : 1 + len(names)], strict=True):
        assert rec["score"] is None and rec["reason"].startswith("error:"), (name, rec)
    assert [got[0]["score"], got[-2]["score"], got[-1]["score"]] == [1.0, 0.0, 1.0]
    assert summary == {
        "rows": 20.0,
        "errors": 17.0,
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
