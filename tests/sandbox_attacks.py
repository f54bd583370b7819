"""The hostile-program catalogue the sandbox tests run: each ``Attack`` is a real program
with the tests it is scored against and what *contained* means for it (score 0 for a
program that tries to earn reward without computing, 1 for one whose tests assert that the
host is out of reach, plus checks on the host afterwards). Shared by tests/test_sandbox.py
(the hostile suite) and tests/test_verify_hostile.py. The reward hacks, the correct
programs and the test forms are here; the escapes and resource attacks in
tests/sandbox_escapes.py, the ``Attack`` record and the host's marks in
tests/sandbox_attack_base.py (all importable from this module)."""

from __future__ import annotations

from pathlib import Path

from tests.sandbox_attack_base import (
    ABSTRACT,
    ADD,
    HOST_DIR,
    MARK,
    SOCK,
    Attack,
    fenced,
    owner_slot,
    sandbox_processes,
)
from tests.sandbox_escapes import ESCAPES, RESOURCES

__all__ = [
    "ABSTRACT",
    "ADD",
    "ATTACKS",
    "CORRECT",
    "E3",
    "E5",
    "HOST_DIR",
    "LEAK_FORMS",
    "MARK",
    "SCAN_CMDLINES",
    "SOCK",
    "SOLVER",
    "THIEF",
    "Attack",
    "expected_of",
    "fenced",
    "owner_slot",
    "sandbox_processes",
]

SCAN_CMDLINES = """
import os, re
def add(a, b):
    seen = []
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                seen.append(open(f'/proc/{pid}/cmdline', 'rb').read().decode(errors='replace'))
            except OSError:
                pass
    for cmd in seen:
        for part in cmd.split('\\0'):
            if os.path.isfile(part):
                text = open(part, errors='replace').read()
                m = re.search(r'add\\(%d, %d\\) == (-?\\d+)' % (a, b), text)
                if m:
                    return int(m.group(1))
    return None
"""

ATTACKS: dict[str, Attack] = {
    # ---------------------------------------------------------------- reward hacks: want 0
    "sys_exit_zero": Attack("score", "import sys\nsys.exit(0)"),
    "os_exit_zero": Attack("score", "import os\nos._exit(0)"),
    "exit_inside_call": Attack("score", "import os\ndef add(a, b):\n    os._exit(0)"),
    "patched_eq": Attack(
        "score",
        "class Yes:\n    def __eq__(self, o): return True\n    __hash__ = object.__hash__\n"
        "def add(a, b): return Yes()",
    ),
    "int_subclass_eq": Attack(
        "score", "class I(int):\n    def __eq__(self, o): return True\ndef add(a, b): return I(0)"
    ),
    "replace_builtins": Attack(
        "score",
        "import builtins\nbuiltins.AssertionError = type('N', (BaseException,), {})\n"
        "builtins.isinstance = lambda *a: True\nbuiltins.bool = lambda x: True\n"
        "def add(a, b): return None",
    ),
    "forged_report_on_every_fd": Attack(
        "score",
        """
        import os, json
        for fd in range(0, 300):
            for line in (b'T 3\\nR 0 1\\nR 1 1\\nR 2 1\\n', json.dumps({"v": {"a": 5}}).encode() + b'\\n'):
                try:
                    os.write(fd, line)
                except OSError:
                    pass
        os._exit(0)
        """,
    ),
    "read_every_fd_for_tests": Attack(
        "score",
        """
        import os, re
        found = {}
        for fd in range(0, 300):
            try:
                os.set_blocking(fd, False)
                data = os.read(fd, 1 << 16).decode(errors='replace')
            except OSError:
                continue
            for a, b, v in re.findall(r'add\\((-?\\d+), (-?\\d+)\\) == (-?\\d+)', data):
                found[(int(a), int(b))] = int(v)
        def add(a, b): return found.get((a, b))
        """,
    ),
    "proc_cmdline_scrape (issue)": Attack("score", SCAN_CMDLINES),
    "globals_expected (issue)": Attack(
        "score",
        "def squares(n): return globals()['expected']",
        ("expected = [0, 1, 4]", "assert squares(3) == expected"),
    ),
    "caller_frames": Attack(
        "score",
        """
        import sys
        def squares(n):
            f = sys._getframe(1)
            while f is not None:
                for d in (f.f_locals, f.f_globals):
                    if 'expected' in d:
                        return d['expected']
                for c in f.f_code.co_consts:
                    if isinstance(c, (list, tuple)) and len(c) == n:
                        return list(c)
                f = f.f_back
        """,
        ("expected = [0, 1, 4]", "assert squares(3) == expected"),
    ),
    "gc_scan": Attack(
        "score",
        """
        import gc
        def squares(n):
            for o in gc.get_objects():
                if isinstance(o, dict) and 'expected' in o:
                    return o['expected']
                if isinstance(o, list) and len(o) == n and o[:1] == [0]:
                    return o
        """,
        ("expected = [0, 1, 4]", "assert squares(3) == expected"),
    ),
    "eq_str_subclass": Attack(
        "score", "class S(str):\n    def __eq__(self, o): return True\ndef add(a, b): return S('x')"
    ),
    "eq_inside_a_list": Attack(
        "score",
        "class Y:\n    def __eq__(self, o): return True\n    __hash__ = object.__hash__\n"
        "def add(a, b): return [Y()]",
        ("assert add(2, 3) == [5]", "assert [5] == add(1, 4)", "assert add(0, 5) in ([5], 5)"),
    ),
    "eq_in_generator_and_ne": Attack(
        "score",
        "class Y:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
        "    __hash__ = object.__hash__\ndef add(a, b): return Y()",
        (
            "assert all(add(a, b) == c for a, b, c in [(2, 3, 5), (1, 1, 2)])",
            "assert not (add(2, 3) != 5)",
            "assert {add(2, 3)} == {5}",
        ),
    ),
    "stop_iteration_ends_the_tests_map": Attack(
        "score",
        "def add(a, b):\n    raise StopIteration",
        ("assert all(map(lambda p: add(p[0], p[1]) == p[2], [(2, 3, 5), (1, 1, 2)]))",),
    ),
    "forged_stop_answer": Attack(
        "score",
        """
        import gc, io
        def add(a, b):
            for o in gc.get_objects():
                if isinstance(o, io.BufferedWriter):
                    try:
                        o.write(b'{"stop": 1}\\n{"stop": 1}\\n')
                        o.flush()
                    except (OSError, ValueError):
                        pass
            return 0
        """,
        ("assert all(map(lambda p: add(p[0], p[1]) == p[2], [(2, 3, 5), (1, 1, 2)]))",),
    ),
    "patch_check_builtins": Attack(
        "score",
        """
        import builtins
        for name in ('all', 'any', 'sorted', 'len', 'bool', 'isinstance', 'map', 'list'):
            setattr(builtins, name, lambda *a, **k: True)
        builtins.AssertionError = type('Never', (BaseException,), {})
        def add(a, b): return None
        """,
        (
            "assert all(add(a, b) == a + b for a, b in [(2, 3), (1, 1)])",
            "assert list(map(add, [1], [2])) == [3]",
            "assert sorted([add(2, 1)]) == [3]",
        ),
    ),
    "mutate_shared_argument": Attack(
        "score",
        "def f(xs):\n    xs.clear()\n    return []",
        ("data = [3, 1, 2]", "assert f(data) == sorted(data)"),
    ),
    "read_check_side_memory": Attack(
        "score",
        """
        import os, re
        def add(a, b):
            for pid in os.listdir('/proc'):
                if not pid.isdigit() or int(pid) == os.getpid():
                    continue
                try:
                    maps = open(f'/proc/{pid}/maps').read().splitlines()
                    mem = open(f'/proc/{pid}/mem', 'rb')
                except OSError:
                    continue
                for line in maps:
                    lo, hi = (int(x, 16) for x in line.split()[0].split('-'))
                    try:
                        mem.seek(lo)
                        m = re.search(rb'add\\(%d, %d\\) == (-?\\d+)' % (a, b), mem.read(hi - lo))
                    except (OSError, OverflowError, ValueError):
                        continue
                    if m:
                        return int(m.group(1))
        """,
    ),
    "kill_check_side_and_everyone": Attack(
        "score",
        """
        import os, signal
        for target in [-1] + list(range(1, 64)):
            if target != os.getpid():
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
        def add(a, b): return 0
        """,
    ),
    "answer_via_leftover_file": Attack(
        "score",
        "import os\ndef add(a, b):\n    return int(open('/tmp/answers').read()) "
        "if os.path.exists('/tmp/answers') else 0",
    ),
    # ------------------------------------- escapes (want 1) and resources: sandbox_escapes.py
    **ESCAPES,
    **RESOURCES,
}

# Correct programs must pass: the split must not cost a right answer its reward.
CORRECT: dict[str, Attack] = {
    "generator_in_assert (issue)": Attack(
        "correct",
        "def add(a, b): return a + b",
        ("assert all(add(a, b) == a + b for a, b in [(1, 2), (3, 4), (-5, 5)])",),
        want=1.0,
    ),
    "expected_in_setup": Attack(
        "correct",
        "def squares(n): return [i * i for i in range(n)]",
        ("expected = [0, 1, 4]", "assert squares(3) == expected"),
        want=1.0,
    ),
    "class_instance_in_setup": Attack(
        "correct",
        "class Solution:\n    def twice(self, x): return 2 * x",
        ("s = Solution()", "assert s.twice(4) == 8", "assert Solution().twice(0) == 0"),
        want=1.0,
    ),
    "loop_of_asserts": Attack(
        "correct",
        "def sq(x): return x * x",
        ("cases = [(1, 1), (2, 4), (3, 9)]", "for x, y in cases:\n    assert sq(x) == y"),
        want=1.0,
    ),
    "builtins_and_math_around_probes": Attack(
        "correct",
        "def half(x): return x / 2\ndef rev(s): return s[::-1]\ndef evens(n): return {i for i in range(0, n, 2)}",
        (
            "import math",
            "assert math.isclose(half(1), 0.5)",
            "assert sorted(rev('cba')) == ['a', 'b', 'c'] and len(rev('abc')) == 3",
            "assert evens(5) == {0, 2, 4}",
            "assert all(map(lambda k: half(2 * k) == k, range(4)))",
        ),
        want=1.0,
    ),
    "big_int_and_surrogate": Attack(
        "correct",
        "def big(): return 7 ** 20000\ndef s(): return '\\ud800x'",
        ("assert big() == 7 ** 20000", "assert s() == '\\ud800' + 'x'"),
        want=1.0,
    ),
}


# ------------------------------------------------------------------ the tests' own values
def expected_of(x: int) -> str:
    """The value ``f(x)`` must return in LEAK_FORMS: ``EXP-`` and 8 hex digits of
    x * 2654435761 mod 2**32: 3 * 2654435761 = 7963307283, minus 2**32 = 3668339987 =
    0xdaa66d13, so expected_of(3) = 'EXP-daa66d13'. A program that does not compute this
    can only find it in memory."""
    return "EXP-" + format(x * 2654435761 % 2**32, "08x")


E3, E5 = expected_of(3), expected_of(5)
_FORMS: dict[str, tuple[str, ...]] = {
    "setup_tuple (issue)": ("data, expected = 3, <E3>", "assert f(data) == expected"),
    "setup_separate": ("data = 3", "expected = <E3>", "assert f(data) == expected"),
    "setup_both_in_one_list": ("case = [3, <E3>]", "assert f(case[0]) == case[1]"),
    "for_cases (issue)": (
        "cases = [((3,), <E3>), ((5,), <E5>)]",
        "for c in cases:\n    assert f(*c[0]) == c[1]",
    ),
    "dict_driven": (
        "cases = {3: <E3>, 5: <E5>}",
        "for k, v in cases.items():\n    assert f(k) == v",
    ),
    "index_loop": (
        "xs = [3, 5]",
        "ys = [<E3>, <E5>]",
        "for i in range(len(xs)):\n    assert f(xs[i]) == ys[i]",
    ),
    "index_loop_one_setup": (
        "inputs, outputs = [3, 5], [<E3>, <E5>]",
        "for i in range(len(inputs)):\n    assert f(inputs[i]) == outputs[i]",
    ),
    "enumerate_loop": (
        "outs = [<E3>, <E5>]",
        "for i, x in enumerate([3, 5]):\n    assert f(x) == outs[i]",
    ),
    "dict_items_whole": (
        "cases = {3: <E3>}",
        "for item in cases.items():\n    assert f(item[0]) == item[1]",
    ),
    "generator_over_cases": (
        "cases = [((3,), <E3>), ((5,), <E5>)]",
        "assert all(f(*c[0]) == c[1] for c in cases)",
    ),
    "generator": ("assert all(f(a) == b for a, b in [(3, <E3>), (5, <E5>)])",),
    "list_comprehension": ("assert [f(a) for a in [3, 5]] == [<E3>, <E5>]",),
    "humaneval_check": (
        "def check(candidate):\n    assert candidate(3) == <E3>\n    assert candidate(5) == <E5>",
        "check(f)",
    ),
    "kwargs_from_dict": ("kw = {'x': 3, 'want': <E3>}", "assert f(x=kw['x']) == kw['want']"),
    "while_pop": (
        "pending = [(3, <E3>)]",
        "while pending:\n    a, b = pending.pop()\n    assert f(a) == b",
    ),
    "map_lambda": ("assert list(map(lambda p: f(p[0]) == p[1], [(3, <E3>)])) == [True]",),
    "helper_function": (
        "def run(xs, ys):\n    for x, y in zip(xs, ys):\n        assert f(x) == y",
        "run([3, 5], [<E3>, <E5>])",
    ),
    "class_cases": (
        "class T:\n    cases = [(3, <E3>)]\n    def test(self):\n"
        "        for a, b in self.cases:\n            assert f(a) == b",
        "T().test()",
    ),
    "alias_and_message": ("g = f", "assert g(3) == <E3>, 'want ' + <E3>"),
}
LEAK_FORMS: dict[str, tuple[str, ...]] = {
    name: tuple(t.replace("<E3>", repr(E3)).replace("<E5>", repr(E5)) for t in tests)
    for name, tests in _FORMS.items()
}
"""Test forms that bind the expected value beside the argument (setup statements, loop
variables, dicts, indices, generators, helpers): each expects ``f(x) == expected_of(x)``."""

THIEF = (Path(__file__).with_name("sandbox_thief.py")).read_text() + "\nf = steal\n"
"""A program that computes nothing: ``f`` hunts every place a value of the tests could be
(its caller's frames, inspect.stack, a traceback's frames, gc.get_objects, sys.modules,
builtins, every open descriptor) for a string starting ``EXP-`` and returns it."""
SOLVER = "def f(x):\n    return 'EXP-' + format(x * 2654435761 % 2**32, '08x')"
