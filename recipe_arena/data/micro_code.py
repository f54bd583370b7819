"""Code problems: templated one-line Python functions with 2-4 ``assert`` tests.

Each problem names its function in the prompt (``add3``) and its ground truth is a list
of ``assert name(args) == value`` lines, the OLMo 3 code-data form. The reference answer
is a ```python fenced block; a character-level model can learn to write these because
the body follows from the name and the sentence.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from recipe_arena.data.micro_problem import Problem
from recipe_arena.data.schema import Effort


@dataclass(frozen=True)
class _Template:
    name: str
    """Function name with ``{k}`` for the constant."""
    arg: str
    sentence: str
    """What the function returns, in words."""
    body: str
    """The return expression."""
    inputs: Callable[[random.Random], object]
    effort: Effort


def _int(rng: random.Random) -> object:
    return rng.randint(-20, 20)


def _word(rng: random.Random) -> object:
    return rng.choice(["ab", "cat", "dog", "hello", "x", "sun", "tree", "code"])


_TEMPLATES = [
    _Template("add{k}", "x", "x plus {k}", "x + {k}", _int, "low"),
    _Template("sub{k}", "x", "x minus {k}", "x - {k}", _int, "low"),
    _Template("times{k}", "x", "x times {k}", "x * {k}", _int, "low"),
    _Template("sq_plus{k}", "x", "x squared plus {k}", "x * x + {k}", _int, "medium"),
    _Template("gt{k}", "x", "True if x is greater than {k}, else False", "x > {k}", _int, "medium"),
    _Template("mod{k}", "x", "the remainder of x divided by {k}", "x % {k}", _int, "medium"),
    _Template("rep{k}", "s", "the string s repeated {k} times", "s * {k}", _word, "medium"),
    _Template("first{k}", "s", "the first {k} characters of s", "s[:{k}]", _word, "high"),
    _Template("last{k}", "s", "the last {k} characters of s", "s[-{k}:]", _word, "high"),
]


def sample_code(rng: random.Random) -> Problem:
    t = rng.choice(_TEMPLATES)
    k = rng.randint(1, 9) if t.arg == "s" else rng.randint(1, 20)
    if t.name.startswith("mod"):
        k = rng.randint(2, 9)
    name, body = t.name.format(k=k), t.body.format(k=k)
    fn = eval(f"lambda {t.arg}: {body}")  # our own template, never user input
    args: list[object] = []
    while len(args) < rng.randint(2, 4):
        a = t.inputs(rng)
        if a not in args:
            args.append(a)
    tests = [f"assert {name}({a!r}) == {fn(a)!r}" for a in args]
    prompt = f"Write a Python function `{name}({t.arg})` that returns {t.sentence.format(k=k)}."
    code = f"def {name}({t.arg}):\n    return {body}"
    answer = f"```python\n{code}\n```"
    return Problem(name, prompt, tests, answer, f"return {body}", t.effort)
