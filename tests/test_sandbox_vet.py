"""Ways around the vetting of a string the tests evaluate (``sandbox_remote._vet``),
attacked through the real sandbox (``check_code``, as a verifier worker calls it): a
string of the program's that reaches an attribute the vetting refuses by another road
runs any code on the check side, which holds the expected values and writes the
report."""

from __future__ import annotations

from recipe_arena.rewards.code import check_code
from tests.hostile_tally import record_all_scored_0
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

# Forges the report: every assert passed and the statement finished, then ends the
# check side before a real verdict is written.
FORGE = (
    "import os\nfor d in range(3, 64):\n    try:\n        os.write(d, b'R 0 1\\nR 1 1\\nF\\nD\\n')\n"
    "    except OSError:\n        pass\nos._exit(0)\n"
)
MATCH = {  # a class pattern reads an attribute named in a string, not an ast.Attribute
    "keyword_pattern": "match (lambda: 0):\n    case object(__globals__=gl):\n        gl['__builtins__'].exec(FORGE)",
    "positional_pattern": (
        "M = type('M', (type,), {'__instancecheck__': lambda c, x: True})\n"
        "C = M('C', (), {'__match_args__': ('__globals__',)})\n"
        "match (lambda: 0):\n    case C(gl):\n        gl['__builtins__'].exec(FORGE)"
    ),
}  # fmt: skip


def scores(tests: list[str], strings: dict[str, str]) -> dict[str, tuple[float, str]]:
    """``check_code`` of ``tests`` for each string handed back by ``expr``, beside a
    ``g`` and an ``area`` that are wrong."""
    out = {}
    for name, string in strings.items():
        program = f"def expr(x):\n    return {string!r}\ndef g(x):\n    return 0\ndef area(r):\n    return 0"
        out[name] = check_code(tests, fenced(program), all_pass=True)
    return out


@needs_full
def test_a_class_pattern_in_an_executed_string_reads_no_refused_attribute() -> None:
    """``exec(expr(1))`` then ``assert g(5) == 25`` with a wrong ``g``: ``expr``
    returning ``match (lambda: 0): case object(__globals__=gl): gl['__builtins__']
    .exec(FORGE)`` reached the check side's builtins, since a class pattern's keyword
    names an attribute as a string the vetting never saw; FORGE wrote ``R 0 1`` and
    ended the check side: 1.0 ("passed 1/1"). So did a positional item of a class
    made with ``type`` whose ``__match_args__`` names ``__globals__`` (a metaclass
    makes a lambda its instance). A keyword that starts like a refused attribute, and
    any positional item of a class pattern, are now refused: 0.0. A ``match`` on a
    sequence, or with a plain keyword (``case float(real=r)``), runs as before."""
    tests = ["exec(expr(1))", "assert g(5) == 25"]
    got = scores(tests, {k: s.replace("FORGE", repr(FORGE)) for k, s in MATCH.items()})
    record_all_scored_0("code sandbox: class patterns in strings the tests evaluate", got)
    right = [
        "d = {}",
        "exec(expr('match [1, 2]:\\n    case [a, b]:\\n        w = a + b'), d)",
        "assert d['w'] == 3",
        "exec(expr('match 1.5:\\n    case float(real=r):\\n        v = r'), d)",
        "assert d['v'] == 1.5",
    ]
    assert check_code(right, fenced("def expr(s):\n    return s")) == (1.0, "passed 2/2")


ALIASES = {  # a safe module held under a name the vetting does not know is one
    "comprehension": "[y.enum.sys.modules['builtins'].exec(FORGE) for y in [re]] and 2",
    "walrus": "(y := re) and y.enum.sys.modules['builtins'].exec(FORGE) or 2",
    "lambda_default": "(lambda y=re: y.enum.sys.modules['builtins'].exec(FORGE))() or 2",
    "argument": "(lambda y: y.enum.sys.modules['builtins'].exec(FORGE))(re) or 2",
}


@needs_full
def test_a_safe_module_is_only_read_from_in_an_evaluated_string() -> None:
    """``assert eval(expr(1)) == 2`` and ``assert g(5) == 25`` with a wrong ``g``:
    ``expr`` returning ``[y.enum.sys.modules['builtins'].exec(FORGE) for y in [re]]``
    passed the vetting, which refuses ``re.enum`` (a module's module) only where the
    module is read by its own name; FORGE wrote ``R 0 1``, ``R 1 1`` and ended the
    check side: 1.0 ("passed 2/2"), and likewise through a walrus, a lambda's default
    or its argument. And ``exec(expr(1))`` of ``math.isclose = lambda *a, **k: True``
    before ``assert math.isclose(area(2), 12.566370614359172)`` passed an ``area``
    returning 0 (1.0, "passed 1/1"). A name bound to a module is now refused unless
    the string reads an attribute of it: 0.0 for each; ``math.sqrt(4)`` and
    ``re.sub(...)`` in a string evaluate as before."""
    tests = ["import re", "assert eval(expr(1)) == 2", "assert g(5) == 25"]
    got = scores(tests, {k: s.replace("FORGE", repr(FORGE)) for k, s in ALIASES.items()})
    patch = ["import math", "exec(expr(1))", "assert math.isclose(area(2), 12.566370614359172)"]
    got |= scores(patch, {"patched_isclose": "math.isclose = lambda *a, **k: True"})
    record_all_scored_0("code sandbox: a module under another name in an evaluated string", got)
    right = [
        "import math, re",
        "assert eval(expr('math.sqrt(4) + len([1])')) == 3",
        'assert eval(expr(\'re.sub("a", "b", "aa")\')) == "bb"',
    ]
    assert check_code(right, fenced("def expr(s):\n    return s")) == (1.0, "passed 2/2")


OBJ = "try:\n    re.zzz\nexcept AttributeError as e:\n    m = e.obj\n"
HELD = {  # a module an AttributeError hands back, under a name the vetting does not know
    "error_object": OBJ + "m.enum.sys.modules['builtins'].exec(FORGE)",
    "error_object_by_pattern": (
        "try:\n    re.zzz\nexcept AttributeError as e:\n    match e:\n"
        "        case AttributeError(obj=m):\n            m.enum.sys.modules['builtins'].exec(FORGE)"
    ),
}


@needs_full
def test_a_module_an_attribute_error_holds_is_not_reached() -> None:
    """``exec(expr(1))`` then ``assert g(5) == 25`` with a wrong ``g``: ``expr``
    returning ``try: re.zzz`` ``except AttributeError as e: m = e.obj`` then
    ``m.enum.sys.modules['builtins'].exec(FORGE)`` got the ``re`` module back from the
    error (``obj``, Python 3.10 on) under a name the vetting did not know was a
    module, whose ``enum`` it read: FORGE wrote the report, 1.0 ("passed 1/1"); the
    same through ``case AttributeError(obj=m)``. And ``e.obj.isclose = lambda *a, **k:
    True`` after ``math.zzz`` let an ``area`` returning 0 pass ``assert
    math.isclose(area(2), 12.566370614359172)``: 1.0. ``obj``, and an attribute named
    like a module a safe module holds (``enum``, ``sys``), are now refused on any
    object: 0.0 for each."""
    tests = ["import re", "exec(expr(1))", "assert g(5) == 25"]
    got = scores(tests, {k: s.replace("FORGE", repr(FORGE)) for k, s in HELD.items()})
    patch = ["import math", "exec(expr(1))", "assert math.isclose(area(2), 12.566370614359172)"]
    patched = (
        "try:\n    math.zzz\nexcept AttributeError as e:\n    e.obj.isclose = lambda *a, **k: True"
    )
    got |= scores(patch, {"patched_isclose": patched})
    record_all_scored_0("code sandbox: a module an AttributeError holds", got)
