"""A string of the program's that the tests evaluate (``eval(repr(p))``, ``exec(f())``),
attacked through the real sandbox (``check_code``, as a verifier worker calls it): it
runs on the check side, which holds the expected values and writes the report."""

from __future__ import annotations

from recipe_arena.rewards.code import check_code
from recipe_arena.rewards.sandbox import Limits
from tests.hostile_tally import record_all_scored_0
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

# Forges the report: every assert passed and the statement finished, then ends the
# check side before a real verdict is written.
FORGE = (
    "import os\nfor d in range(3, 64):\n    try:\n        os.write(d, b'R 0 1\\nR 1 1\\nF\\n')\n"
    "    except OSError:\n        pass\nos._exit(0)\n"
)
ROUTES = {  # how the string reaches exec, each a way around the one before
    "exec": "exec(FORGE)",
    "import": "__import__('builtins').exec(FORGE)",
    "frame_builtins": "(x for x in [1]).gi_frame.f_builtins['exec'](FORGE)",
    "module_of_a_module": "re.enum.sys.modules['builtins'].exec(FORGE)",
    "format_field": (
        "string.Formatter().get_field('0.format.__globals__[__builtins__][exec]', "
        "[string.Formatter()], {})[0](FORGE)"
    ),
    "tests_own_os": "os.write(1, b'') or __import__('builtins').exec(FORGE)",
}
TESTS = ["import re, string, os", "assert eval(expr(1)) == 2", "assert g(5) == 25"]
RIGHT_FORMS = [  # the forms a right program's strings are evaluated in: as before
    "import re, math",
    "assert eval(expr('1+1')) == 2",
    "assert eval(expr('math.sqrt(4) + len([1])')) == 3",
    "x = 3",
    "assert eval(expr('x * 2')) == 6",
    "def h(k):\n    z = k + 1\n    return eval(expr('z * 2'))",
    "assert h(1) == 4",
    "assert eval(expr('[i for i in range(3)]')) == [0, 1, 2]",
    "assert eval(compile(expr('7'), 'x', 'eval')) == 7",
    "d = {}",
    "exec(expr('w = 1'), d)",
    "assert d['w'] == 1",
    'assert eval(expr(\'re.sub("a", "b", "aa")\')) == \'bb\'',
]


def all_held(label: str, strings: dict[str, object]) -> None:
    """Each of ``strings`` handed back by ``expr`` under ``TESTS`` beside a wrong ``g``
    scores 0 (tallied under ``label``): a string that forged the report scored 1."""
    got = {}
    for name, string in strings.items():
        program = f"def expr(x):\n    return {string!r}\ndef g(x):\n    return 0"
        got[name] = check_code(TESTS, fenced(program), all_pass=False)
    record_all_scored_0(label, got)


@needs_full
def test_a_string_the_tests_evaluate_cannot_reach_the_check_sides_internals() -> None:
    """``assert eval(expr(1)) == 2`` and ``assert g(5) == 25`` with a wrong ``g``: an
    ``expr`` returning a string that writes ``R 0 1``, ``R 1 1`` and ``F`` to every
    descriptor and ends the check side scored 1.0 (the string runs on the check side,
    where the report is written and the expected values are). The tests' ``eval``,
    ``exec`` and ``compile`` now refuse a string that reads a name or attribute
    starting with ``_``, ``exec``, ``eval``, ``getattr`` and the like, a frame's or
    code's attributes, an import, a module outside the safe ones (``os``, ``string``)
    or a module's module (``re.enum``): every route scores 0. Strings a right program
    hands them (arithmetic, ``math.sqrt``, the tests' own names, a comprehension,
    ``re.sub``) are evaluated as before."""
    strings = {k: route.replace("FORGE", repr(FORGE)) + " or 2" for k, route in ROUTES.items()}
    all_held("code sandbox: strings the tests evaluate", strings)
    right = "def expr(s):\n    return s"
    assert check_code(RIGHT_FORMS, fenced(right)) == (1.0, "passed 8/8")


PICKLER = f"""
import builtins, marshal, pickle
class Forge:
    def __reduce__(self):
        return (builtins.exec, ({FORGE!r},))
def ser(x):
    return pickle.dumps(Forge())
def code(x):
    return marshal.dumps(compile({FORGE!r}, 'f', 'exec'))
def g(x):
    return 0
"""
UNPICKLED = {  # bytes of the program's that the tests turn into objects or code
    "pickle_loads": ["import pickle", "assert pickle.loads(ser([1])) == [1]", "assert g(5) == 25"],
    "from_pickle_import": ["from pickle import loads", "assert loads(ser([1])) == [1]", "assert g(5) == 25"],
    "marshal_then_exec": ["import marshal", "exec(marshal.loads(code(1)))", "assert g(5) == 25"],
}  # fmt: skip


@needs_full
def test_bytes_the_tests_unpickle_cannot_run_the_programs_code() -> None:
    """``assert pickle.loads(ser([1])) == [1]`` with a ``ser`` returning the pickle of an
    object whose ``__reduce__`` is ``(exec, (FORGE,))``: unpickling ran the program's
    code on the check side, which forged the report (1.0 beside a wrong ``g``); so did
    ``exec(marshal.loads(...))`` of the program's bytes. The check side's ``pickle``
    now looks up only plain builtin and a few standard classes, and its ``exec`` and
    ``eval`` run only code its ``compile`` made: each scores 0, and a right ``ser``
    (``pickle.dumps`` of a list, a Counter, a date) still scores 1."""
    got = {k: check_code(t, fenced(PICKLER), all_pass=False) for k, t in UNPICKLED.items()}
    record_all_scored_0("code sandbox: bytes the tests unpickle", got)
    right = (
        "import collections, datetime, pickle\ndef ser(x):\n"
        "    return pickle.dumps([x, collections.Counter('aab'), datetime.date(2020, 1, 2)])"
    )
    tests = [
        "import pickle, collections, datetime",
        "v = [[1, (2, 3)], {4: {5}}, 'x', 1.5]",
        "assert pickle.loads(ser(v)) == [v, collections.Counter('aab'), datetime.date(2020, 1, 2)]",
    ]
    assert check_code(tests, fenced(right)) == (1.0, "passed 1/1")


# Strings that the vetting's parse refused, so they were not vetted, but that the real
# eval reads: eval strips leading blanks; bytes are decoded by their coding cookie.
UNPARSED = {
    "leading_space": " ROUTE",
    "leading_tab": "\tROUTE",
    "latin1_bytes": b"# coding: latin-1\n[\xff for \xff in [1]] and ROUTE",
    "bytes_with_a_space": b" ROUTE",
}


@needs_full
def test_a_string_the_vetting_cannot_parse_is_not_run() -> None:
    """``assert eval(expr(1)) == 2`` and ``assert g(5) == 25`` with a wrong ``g``: the
    vetting parsed the string as written and, when that parse failed, let the real
    ``eval`` raise the error; but ``eval`` strips leading spaces and tabs, and decodes
    bytes by their ``# coding:`` line, so ``" __import__('builtins').exec(FORGE)"``
    (or latin-1 bytes whose utf-8 reading does not parse) ran unvetted on the check
    side, forged the report and scored 1.0. The vetting now parses what the real call
    reads (stripped, bytes as bytes) and runs nothing it could not parse: each scores
    0, and a right ``expr`` handing back ``' 1+1'`` or bytes still scores 1."""
    route = "__import__('builtins').exec(FORGE) or 2".replace("FORGE", repr(FORGE))
    strings = {
        k: form.replace(b"ROUTE", route.encode())
        if isinstance(form, bytes)
        else form.replace("ROUTE", route)
        for k, form in UNPARSED.items()
    }
    all_held("code sandbox: strings the vetting cannot parse", strings)
    right = "def expr(s):\n    return {1: ' 1+1', 2: '\\t2*3', 3: b'# coding: latin-1\\n4'}[s]"
    tests = ["assert eval(expr(1)) == 2", "assert eval(expr(2)) == 6", "assert eval(expr(3)) == 4"]
    assert check_code(tests, fenced(right)) == (1.0, "passed 3/3")


# An object made by a string of the program's that the tests evaluate, whose every
# attribute lookup ends the check side (SystemExit) or never returns.
STALLS = {
    "exits": "(x for x in ()).throw(SystemExit())",
    "never_returns": "any(x is None for x in iter(int, 1))",
}
HELPER_THEN_OBJECT = [
    "def t(a, b):\n    assert dbl(a) == b",
    "t(1, 2)",
    "p = eval(make(1))",
    "t(2, 4 if p else 4)",
]


@needs_full
def test_an_object_a_string_made_cannot_end_the_check_side_before_a_helper_fails() -> None:
    """``t(1, 2)`` passes the helper's assert; ``p = eval(make(1))`` keeps an object
    of a class the program's string made, whose ``__getattribute__`` raises SystemExit
    or loops; ``t(2, 4 if p else 4)`` should fail the helper (``dbl(2)`` is wrong). The
    check side looked into ``p`` (for test functions it holds) before naming the
    statement's asserts: the lookup ended it, or stalled it to the time limit, with no
    ``S`` line, so the ``R 0 1`` of ``t(1, 2)`` stood (1.0). A statement now names its
    own asserts first, and a lookup that raises anything is skipped: both score 0."""
    lim = Limits(wall_s=3.0)
    got = {}
    for name, body in STALLS.items():
        made = "type('A', (), {'__getattribute__': lambda s, n: " + body + "})()"
        program = f"def make(x):\n    return {made!r}\ndef dbl(a):\n    return 2 if a == 1 else 0"
        got[name] = check_code(HELPER_THEN_OBJECT, fenced(program), all_pass=False, limits=lim)
    record_all_scored_0("code sandbox: objects a string made", got)


REBINDS = {  # a string of the program's that rebinds what the tests' later asserts call
    "walrus_isclose": ("assert eval(expr(1)) == 2", "(isclose := lambda a, b: True) and 2"),
    "walrus_builtin_all": ("assert eval(expr(1)) == 2", "(all := lambda a: True) and 2"),
    "walrus_in_a_comprehension": ("assert eval(expr(1)) == 2", "[(all := any) for x in [1]] and 2"),
    "exec_def": ("exec(expr(1))", "def isclose(a, b):\n    return True"),
    "exec_global": ("exec(expr(1))", "def h():\n    global all\n    all = len\nh()"),
}
LATER = ["from math import isclose", "assert isclose(g(5), 25)", "assert all([g(6) == 36])"]


@needs_full
def test_a_string_the_tests_evaluate_cannot_rebind_their_names() -> None:
    """``assert eval(expr(1)) == 2`` (or ``exec(expr(1))``) before asserts on a wrong
    ``g`` that call ``isclose`` and ``all``: a string ``(isclose := lambda a, b: True)
    and 2`` bound the tests' ``isclose`` (or the builtin ``all``) in the tests' own
    scope, so the later asserts called the program's function and a wrong ``g``
    scored 1.0; so did ``def isclose`` and ``global all`` run by ``exec``. A string
    that binds a name its scope or the builtins already bind is now refused: 0. A
    comprehension's own variable, a walrus in a lambda and a new name still run."""
    got = {}
    for name, (stmt, string) in REBINDS.items():
        program = f"def expr(x):\n    return {string!r}\ndef g(x):\n    return 0"
        got[name] = check_code([LATER[0], stmt, *LATER[1:]], fenced(program), all_pass=False)
    record_all_scored_0("code sandbox: strings that rebind the tests' names", got)
    right = "def expr(s):\n    return s"
    tests = [
        "x, d = 3, {}",
        "assert eval(expr('[x for x in range(2)]')) == [0, 1]",
        "assert eval(expr('(lambda y: (z := y + 1) * z)(1)')) == 4",
        "exec(expr('w = len([0])'), d)",
        "assert d['w'] == 1 and x == 3",
    ]
    assert check_code(tests, fenced(right)) == (1.0, "passed 3/3")
