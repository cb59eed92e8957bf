"""Word diffs' opcodes: difflib's, with the lists' common head and tail lined up first.

Why: a draft rebuilt after one number changed differs from the one before in a few words, and
difflib.SequenceMatcher (without its junk heuristic, which would drop the spaces and common
words a word diff needs) costs time that grows with the square of the lists where the same
token comes back often, as spaces and "the" do. Matching the equal head and tail first, as diff
tools do, leaves it the few changed words in the middle. The opcodes still cover both lists in
order, and equal words stay paired with equal words.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

Opcode = tuple[str, int, int, int, int]


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """(tag, i1, i2, j1, j2) steps that turn ``a`` into ``b``, as SequenceMatcher.get_opcodes."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    middle = difflib.SequenceMatcher(None, a[head : len(a) - tail], b[head : len(b) - tail], autojunk=False)
    steps: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    for tag, i1, i2, j1, j2 in middle.get_opcodes():
        if tag == "equal" and steps and steps[-1][0] == "equal":  # only at the head's edge
            steps[-1] = ("equal", steps[-1][1], head + i2, steps[-1][3], head + j2)
        else:
            steps.append((tag, head + i1, head + i2, head + j1, head + j2))
    if tail:
        end_a, end_b = len(a) - tail, len(b) - tail
        if steps and steps[-1][0] == "equal":
            steps[-1] = ("equal", steps[-1][1], len(a), steps[-1][3], len(b))
        else:
            steps.append(("equal", end_a, len(a), end_b, len(b)))
    return steps
