"""The sandbox's writable folders, attacked through the real sandbox (``check_code``, as a
verifier worker calls it): in ``bwrap`` mode with assert tests ``/tmp`` is the check
side's and ``/var/tmp`` the program's, two tmpfs of their own, so a file the tests
write is out of the program's reach and a path they write cannot be prepared for
them."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox import Limits
from tests.hostile_tally import record
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

READER = """
def guess():
    return open('/tmp/expected.txt').read()
"""

PLANTER = """
import os
try:  # at load, before any test runs: a file at the path the tests write later
    fd = os.open('/tmp/r.txt', os.O_CREAT | os.O_WRONLY, 0o666)
    os.fchmod(fd, 0o666)
    os.close(fd)
except OSError:
    pass
def sq(x):
    try:  # rewrite what the tests wrote before they read it back
        with open('/tmp/r.txt', 'w') as f:
            f.write('9')
    except OSError:
        pass
    return 0
"""

SCRATCH = """
import os, tempfile
def scratch():
    with open('here.txt', 'w') as f:  # its folder
        f.write('x')
    with tempfile.NamedTemporaryFile() as t:
        where = os.path.dirname(t.name)
    try:
        os.listdir('/tmp')
        tmp = 0
    except OSError as e:
        tmp = e.errno
    return (os.getcwd(), where, open('here.txt').read(), tmp)
"""


@needs_full
def test_a_file_the_tests_write_in_tmp_is_out_of_the_programs_reach() -> None:
    """The tests keep their expected value in a file of ``/tmp``
    (``open('/tmp/expected.txt', 'w').write('secret 42')``) and the program's ``guess``
    reads it back: with ``/tmp`` shared by the two sides (umask 022, so the file was
    world-readable) it returned ``'secret 42'`` and scored 1.0. With ``/tmp`` the check
    side's (mode 0700, owned by its uid) the open fails with EACCES, so ``guess``
    raises and the assert fails: 0.0, ``passed 0/1``."""
    tests = ["open('/tmp/expected.txt', 'w').write('secret 42')", "assert guess() == 'secret 42'"]
    got = check_code(tests, fenced(READER), True, Limits(wall_s=20.0))
    record("score", 1, int(got[0] == 0.0))
    assert got[0] == 0.0 and got[1].startswith("passed 0/1"), got


@needs_full
def test_a_path_the_tests_write_in_tmp_cannot_be_planted() -> None:
    """The program creates ``/tmp/r.txt`` at load, mode 0666, before any test runs; the
    tests write ``str(sq(3))`` there (``sq`` returns 0, wrong) and read it back after a
    second call of ``sq``, which rewrites the file to ``'9'``. With ``/tmp`` shared
    (and ``fs.protected_regular=0`` on the host, the tests' open of a file another uid
    owns succeeded) the read gave ``'9'`` and the wrong ``sq`` scored 1.0. With ``/tmp``
    the check side's the program can neither create nor open the file, so the tests
    read back their own ``'0'``: 0.0, ``passed 0/1``."""
    tests = [
        "with open('/tmp/r.txt', 'w') as fh:\n    fh.write(str(sq(3)))",
        "assert sq(0) == 0 and open('/tmp/r.txt').read() == '9'",
    ]
    got = check_code(tests, fenced(PLANTER), True, Limits(wall_s=20.0))
    record("score", 1, int(got[0] == 0.0))
    assert got == (0.0, "passed 0/1"), got


@needs_full
def test_the_program_has_a_scratch_folder_of_its_own() -> None:
    """A right program may still write files: its folder is ``/var/tmp``, a tmpfs of its
    own (before: ``/tmp``, shared with the check side), where it writes and reads back
    ``here.txt`` (``'x'``), and ``tempfile`` finds it (``/tmp`` is refused, so it takes
    the next folder it knows), while listing ``/tmp`` fails with EACCES, errno 13:
    ``('/var/tmp', '/var/tmp', 'x', 13)``, 1.0 (0.0 before, when it got
    ``('/tmp', '/tmp', 'x', 0)``)."""
    got = check_code(
        ["assert scratch() == ('/var/tmp', '/var/tmp', 'x', 13)"],
        fenced(SCRATCH),
        True,
        Limits(wall_s=20.0),
    )
    assert got == (1.0, "passed 1/1"), got


@needs_full
def test_a_verifier_killed_during_a_run_leaves_no_folder(tmp_path) -> None:
    """A verifier process (its temporary folder ``$TMPDIR`` a fresh empty one) is killed
    with SIGKILL while a program sleeps in the sandbox, before it can clean up. The tmpfs
    of ``/tmp`` and ``/var/tmp`` are mounted on two fixed empty folders of the cache
    folder in the run's own mount namespace, so nothing was made in ``$TMPDIR`` and
    nothing is left there: ``[]`` (with a folder made per run it was
    ``['recipe_arena_sbx_...']``)."""
    script = (
        "from recipe_arena.rewards.code import check_code\n"
        "check_code(['assert f() == 1'], "
        "'```python\\nimport time\\ndef f():\\n    time.sleep(30)\\n```', True)\n"
    )
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", script], env=env)
    time.sleep(4)  # the sandbox is running: the program sleeps for 30 s
    proc.kill()
    proc.wait()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
