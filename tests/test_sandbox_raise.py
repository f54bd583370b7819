"""Checks the tests write with ``raise`` instead of ``assert``, attacked through the real
sandbox (``check_code``, as a verifier worker calls it): a wrong program that answers
the asserted case right and the raised one wrong, and honest programs on the forms
where the sandbox itself raises or cannot see what plain Python sees."""

from __future__ import annotations

import pytest

from recipe_arena.rewards.code import check_code, parse_report
from tests.hostile_tally import record_all_scored_0
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

WRONG = "def srt(xs):\n    return [1, 2, 3]"
"""Right for ``[3, 1, 2]`` (the assert), wrong for every other list."""
RIGHT = "def srt(xs):\n    return sorted(xs)"
FIRST = "assert srt([3, 1, 2]) == [1, 2, 3]"
RAISED = {  # each check written without assert, on a case WRONG gets wrong
    "if_raise": "if srt([2, 1]) != [1, 2]:\n    raise AssertionError",
    "bound_first": "r = srt([2, 1])\nif r != [1, 2]:\n    raise Exception('no')",
    "loop": "for xs, want in [([2, 1], [1, 2]), ([5, 4], [4, 5])]:\n"
    "    if srt(xs) != want:\n        raise AssertionError(xs)",
    "not_equal": "if not srt([2, 1]) == [1, 2]:\n    raise ValueError('no')",
    "test_function": "def test_two():\n    if srt([2, 1]) != [1, 2]:\n        raise AssertionError\n"
    "test_two()",
}
NOTES = {
    "if_raise": "test raised AssertionError: ",
    "bound_first": "test raised Exception: no",
    "loop": "test raised AssertionError: [2, 1]",
    "not_equal": "test raised ValueError: no",
    "test_function": "test raised AssertionError: ",
}


@needs_full
@pytest.mark.parametrize("all_pass", [True, False])
def test_a_check_written_with_raise_counts_as_a_failed_check(all_pass: bool) -> None:
    """``assert srt([3, 1, 2]) == [1, 2, 3]`` then ``if srt([2, 1]) != [1, 2]: raise
    AssertionError`` (or the same check bound first, in a loop, as ``not ==``, in a
    test function), with ``srt`` answering ``[1, 2, 3]`` for every list: the raise
    ended a statement that holds no assert, so it failed nothing and the wrong ``srt``
    scored 1.0 ("passed 1/1") under both rules. A ``raise <expr>`` of the tests' own
    that ends a statement now counts as one more check, failed: 1 of 2 passed, so 0.0
    under ``all_pass`` and 0.5 under ``pass_fraction``, with the raise as the note; a
    right ``srt`` scores 1.0 ("passed 1/1") as before."""
    got = {k: check_code([FIRST, t], fenced(WRONG), all_pass) for k, t in RAISED.items()}
    if all_pass:
        record_all_scored_0("code sandbox: a check written with raise", got)
    for name, (score, reason) in got.items():
        assert (score, reason) == (0.0 if all_pass else 0.5, f"passed 1/2; {NOTES[name]}")
    for name, t in RAISED.items():
        assert check_code([FIRST, t], fenced(RIGHT), all_pass) == (1.0, "passed 1/1"), name


STACK = "class Stack:\n    def __init__(self):\n        self.xs = []\n    def push(self, x):\n"
STACK += "        self.xs.append(x)\n    def pop(self):\n        return self.xs.pop()"
SORT_IP = "def sort_ip(xs):\n    xs.sort()"
HONEST = {  # name: (a right program, its tests); plain Python passes each
    "except_program_class": (
        "class Bad(Exception):\n    pass\ndef f(x):\n    if x < 0:\n        raise Bad('n')\n"
        "    return x",
        ["assert f(1) == 1", "try:\n    f(-1)\nexcept Bad:\n    pass\nelse:\n    raise AssertionError"],
    ),
    "value_error_subclass": (
        "class Bad(ValueError):\n    pass\ndef f(x):\n    if x < 0:\n        raise Bad('n')\n"
        "    return x",
        ["assert f(1) == 1", "try:\n    f(-1)\n    raise AssertionError('no raise')\n"
         "except ValueError:\n    pass"],
    ),
    "next_on_generator": (
        "def gen():\n    yield 1\n    yield 2",
        ["assert list(gen()) == [1, 2]", "if next(gen()) != 1:\n    raise AssertionError"],
    ),
    "isinstance_on_object": (
        STACK,
        ["s = Stack()\ns.push(1)\nassert s.pop() == 1",
         "if not isinstance(Stack(), Stack):\n    raise TypeError"],
    ),
    "pytest_raises": (
        "def f(x):\n    if x < 0:\n        raise ValueError('n')\n    return x",
        ["assert f(1) == 1", "import pytest\nwith pytest.raises(ValueError):\n    f(-1)"],
    ),
    "import_the_sandbox_lacks": (
        "def f(x):\n    return x * 2",
        ["assert f(1) == 2", "import numpy as np\nif f(np.int64(2)) != 4:\n    raise AssertionError"],
    ),
    "in_place_change": (
        SORT_IP,
        ["assert sort_ip([2, 1]) is None",
         "lst = [3, 1, 2]\nsort_ip(lst)\nif lst != [1, 2, 3]:\n    raise AssertionError(lst)"],
    ),
    "in_place_change_read_later": (
        SORT_IP,
        ["assert sort_ip([2, 1]) is None",
         "lst = [3, 1, 2]\nassert sort_ip(lst) is None\nok = lst == [1, 2, 3]\n"
         "if not ok:\n    raise AssertionError"],
    ),
    "answer_changed_by_the_tests": (
        "_items = []\ndef get():\n    return _items\ndef size():\n    return len(_items)",
        ["assert size() == 0", "get().append(1)\nif size() != 1:\n    raise AssertionError"],
    ),
    "same_object": (
        "def ident(x):\n    return x",
        ["assert ident(3) == 3", "x = [1]\nif ident(x) is not x:\n    raise AssertionError"],
    ),
    "type_of_object": (
        STACK,
        ["s = Stack()\ns.push(1)\nassert s.pop() == 1",
         "if type(Stack()).__name__ != 'Stack':\n    raise TypeError"],
    ),
    "printed_output": (
        "def greet():\n    print('hi')",
        ["assert greet() is None", "import io, contextlib\nbuf = io.StringIO()\n"
         "with contextlib.redirect_stdout(buf):\n    greet()\n"
         "if buf.getvalue() != 'hi\\n':\n    raise AssertionError"],
    ),
    "reraised_from_the_sandbox": (
        "def gen():\n    yield 1",
        ["assert list(gen()) == [1]",
         "try:\n    next(gen())\nexcept TypeError as e:\n    raise AssertionError('no') from e"],
    ),
}  # fmt: skip


@needs_full
def test_the_sandbox_own_raises_and_blind_spots_count_no_check() -> None:
    """Right programs on tests whose statement without assert raises only because of
    the sandbox: ``except`` of the program's class (a handle is no exception class:
    ``TypeError``), its ``ValueError`` subclass caught as ``ValueError`` (it crosses as
    ``ProbeError``), ``next()`` on its generator and ``isinstance`` on its object (a
    handle: ``TypeError``), ``pytest.raises`` and ``numpy`` (not in the sandbox), and
    the raises written in the tests whose condition the sandbox makes true: an
    in-place change (the program sorts a copy; read at once or through a flag), a
    change the tests make to an answer (``get().append(1)``: a copy), ``is`` on an
    answer (a copy), ``type`` of its object (a handle), what it prints (its stdout is
    its own) and a raise in an ``except`` of the sandbox's ``TypeError``. Plain Python
    passes each; each scored 1.0 (every assert passed: "passed 1/1", "passed 2/2" for
    the flag, whose ``assert sort_ip(lst) is None`` is the second) before raise checks
    counted, and still does."""
    for name, (program, tests) in HONEST.items():
        n = 2 if name == "in_place_change_read_later" else 1
        assert check_code(tests, fenced(program)) == (1.0, f"passed {n}/{n}"), name


def test_each_x_line_is_one_more_check_failed() -> None:
    """``T 2``, ``R 0 1``, ``R 1 1``, ``D`` and two ``X`` lines: 2 of 4 passed; an
    ``X`` where the tests hold no assert (``T 0``) leaves the row one that judges
    nothing (total 0), and an ``R 2 1`` past the asserts is not counted."""
    assert parse_report(b"T 2\nR 0 1\nR 1 1\nR 2 1\nD\nX\nX\n")[:2] == (4, {0, 1})
    assert parse_report(b"T 0\nD\nX\n")[:2] == (0, set())


STATE = {  # name: (a right program, its tests); plain Python passes each
    "store_into_program_dict": (
        "CONFIG = {'mode': 'lower'}\ndef transform(s):\n"
        "    return s.upper() if CONFIG['mode'] == 'upper' else s.lower()",
        ["assert transform('A') == 'a'",
         "CONFIG['mode'] = 'upper'\nif transform('a') != 'A':\n    raise AssertionError('mode')"],
    ),
    "method_on_program_dict": (
        "settings = {'sep': ','}\ndef join(xs):\n    return settings['sep'].join(xs)",
        ["assert join(['a', 'b']) == 'a,b'",
         "settings.update(sep='-')\nif join(['a', 'b']) != 'a-b':\n    raise AssertionError"],
    ),
    "clear_program_cache": (
        "cache = {}\ndef fib(n):\n    if n in cache:\n        return cache[n]\n"
        "    r = n if n < 2 else fib(n - 1) + fib(n - 2)\n    cache[n] = r\n    return r\n"
        "def cache_size():\n    return len(cache)",
        ["assert fib(10) == 55",
         "cache.clear()\nif cache_size() != 0:\n    raise AssertionError('cache not cleared')"],
    ),
    "del_from_program_dict": (
        "inventory = {'apple': 3, 'pear': 1}\ndef count():\n    return sum(inventory.values())",
        ["assert count() == 4", "del inventory['pear']\nif count() != 3:\n    raise AssertionError"],
    ),
    "append_to_program_list": (
        "items = []\ndef size():\n    return len(items)",
        ["assert size() == 0", "items.append(1)\nif size() != 1:\n    raise AssertionError"],
    ),
    "augmented_program_list": (
        "items = [1]\ndef total():\n    return sum(items)",
        ["assert total() == 1", "items += [2]\nif total() != 3:\n    raise AssertionError"],
    ),
    "rebind_program_global": (
        "MAX_SIZE = 10\ndef capped(xs):\n    return xs[:MAX_SIZE]",
        ["assert capped([1]) == [1]",
         "MAX_SIZE = 2\nif capped([1, 2, 3]) != [1, 2]:\n    raise AssertionError"],
    ),
    "module_named_list": (
        "queue = []\ndef size():\n    return len(queue)",
        ["assert size() == 0", "queue.append(1)\nif size() != 1:\n    raise AssertionError"],
    ),
    "module_named_list_loop": (
        "queue = []\ndef total():\n    return sum(queue)",
        ["assert total() == 0", "queue.extend([1, 2])\nfor want in [3]:\n"
         "    if total() != want:\n        raise AssertionError"],
    ),
    "alias_of_program_list": (
        "LOG = []\ndef process(s):\n    LOG.append(s)\n    return s.upper()",
        ["assert process('a') == 'A'", "log = LOG\nresult = process('x')\n"
         "if result != 'X' or log != ['a', 'x']:\n    raise AssertionError(log)"],
    ),
    "answer_is_the_argument": (
        "def add(lst, x):\n    lst.append(x)\n    return lst",
        ["assert add([], 1) == [1]", "a = [1]\nb = add(a, 2)\nc = add(a, 3)\n"
         "if b != [1, 2, 3] or c != [1, 2, 3]:\n    raise AssertionError(b)"],
    ),
    "recorded_warnings": (
        "import warnings\ndef old(x):\n"
        "    warnings.warn('old is deprecated', DeprecationWarning)\n    return x * 2",
        ["assert old(1) == 2", "import warnings\nwith warnings.catch_warnings(record=True) as caught:\n"
         "    warnings.simplefilter('always')\n    r = old(2)\n"
         "if r != 4 or len(caught) != 1:\n    raise AssertionError(caught)"],
    ),
    "recorded_log_messages": (
        "import logging\nlog = logging.getLogger('app')\ndef work(x):\n"
        "    log.warning('working on %s', x)\n    return x + 1",
        ["assert work(1) == 2", "import logging\nrecords = []\nclass H(logging.Handler):\n"
         "    def emit(self, record):\n        records.append(record.getMessage())\n"
         "logging.getLogger('app').addHandler(H())\nr = work(5)\n"
         "if r != 6 or records != ['working on 5']:\n    raise AssertionError(records)"],
    ),
}  # fmt: skip


@needs_full
def test_tests_that_change_the_program_state_count_no_raise() -> None:
    """Right programs on raise checks whose condition is true here only because the
    program's module state is its own and the tests hold copies: the tests change it
    without a call (``CONFIG['mode'] = 'upper'``, ``settings.update(sep='-')``,
    ``cache.clear()``, ``del inventory['pear']``, ``items.append(1)``, ``items +=
    [2]``, ``MAX_SIZE = 2``, ``queue.append(1)`` where ``queue`` is also a standard
    module), keep an alias a later call changes (``log = LOG``; ``b = add(a, 2)``
    then ``add(a, 3)``), or record warnings or log messages the program side emits.
    Plain Python passes each; each scored 1.0 ("passed 1/1") before raise checks
    counted, 0.0 ("passed 1/2") once they did, and 1.0 again now: such tests count no
    raise."""
    for name, (program, tests) in STATE.items():
        assert check_code(tests, fenced(program)) == (1.0, "passed 1/1"), name
