"""How the check side reaches a verdict, attacked through the real sandbox
(``check_code``, as a verifier worker calls it): a program that returns the test's own
expected object."""

from __future__ import annotations

from recipe_arena.rewards.code import check_code
from tests.hostile_tally import record
from tests.sandbox_attack_base import fenced
from tests.test_sandbox import needs_full

NODE = """
class ListNode:
    def __init__(self, val=0, next=None):
        self.val, self.next = val, next
        MADE.append(self)
MADE = []
"""
REVERSE = (
    NODE
    + """
def reverse_list(h):
    prev = None
    while h:
        h.next, prev, h = prev, h, h.next
    return prev
"""
)
# The test built its expected list first (ListNode(1), ListNode(2, ...), ListNode(3, ...)):
# the cheat hands that very object back without reversing anything.
RETURN_EXPECTED = NODE + "def reverse_list(h):\n    return MADE[2]"
BUILT_EXPECTED = (
    "expected = ListNode(3, ListNode(2, ListNode(1)))",
    "head = ListNode(1, ListNode(2, ListNode(3)))",
    "assert reverse_list(head) == expected",
)
# A name the tests use to compare (``Counter``, left to the program's import) that hands
# back one object whatever it is given: both sides of the comparison are that object.
SAME_COUNTER = "class Counter:\n    pass\nONE = Counter()\ndef Counter(*a):\n    return ONE\n"


@needs_full
def test_returning_the_tests_own_object_does_not_make_it_equal() -> None:
    """Issue example: ``expected = ListNode(3, ListNode(2, ListNode(1)))`` then ``assert
    reverse_list(head) == expected``. The expected list is the program's object (the
    test built it with the program's class), and a handle equalled itself, so a
    ``reverse_list`` that returned the test's ``expected`` node unchanged scored 1,
    where the right one (a new list, equal by its own ``__eq__``, which the check side
    never asks) scored 0. Likewise ``Counter(f(x)) == Counter([...])`` with a program
    ``Counter`` that returns one object for everything. ``==`` on a handle now fails,
    itself included: both cheats score 0. ``is`` still compares identity, so a stack
    that gives back the node pushed scores 1, and the right ``reverse_list`` scores 1
    where the test reads the values."""
    cheats = {
        "return_expected": check_code(list(BUILT_EXPECTED), fenced(RETURN_EXPECTED)),
        "same_counter": check_code(
            ["assert Counter(words('a b a')) == Counter(['a', 'a', 'b'])"],
            fenced(SAME_COUNTER + "def words(s):\n    return 0"),
        ),
    }
    held = [n for n, (score, _) in cheats.items() if score == 0.0]
    record("code sandbox: the test's own object returned", len(cheats), len(held))
    assert len(held) == len(cheats), cheats
    read = [
        *BUILT_EXPECTED[1:2],
        "r = reverse_list(head)",
        "assert (r.val, r.next.val, r.next.next.val, r.next.next.next) == (3, 2, 1, None)",
    ]
    assert check_code(read, fenced(REVERSE)) == (1.0, "passed 1/1")
    stack = (
        "class Stack:\n    def __init__(self): self.xs = []\n"
        "    def push(self, x): self.xs.append(x)\n    def pop(self): return self.xs.pop()\n"
    )
    pushed = ["s = Stack()", "n = ListNode(7)", "s.push(n)", "assert s.pop() is n"]
    assert check_code(pushed, fenced(NODE + stack)) == (1.0, "passed 1/1")
