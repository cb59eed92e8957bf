"""engine.outdir.opcodes: a word diff whose steps cover both lists in order, pair only equal words, turn
the old list into the new one, and keep at least the lists' common head and tail."""

from __future__ import annotations

import random

from engine.outdir.opcodes import opcodes


def _apply(a: list[str], b: list[str], steps: list[tuple[str, int, int, int, int]]) -> list[str]:
    """Walk the steps: they must tile a and b from start to end, equal steps over equal words."""
    out: list[str] = []
    i = j = 0
    for tag, i1, i2, j1, j2 in steps:
        assert (i1, j1) == (i, j), steps
        assert i1 <= i2 and j1 <= j2 and (i1 < i2 or j1 < j2), steps
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2], steps
        out += b[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(a), len(b)), steps
    return out


def _common_ends(a: list[str], b: list[str]) -> int:
    """How many words the lists share at their start and, not overlapping it, at their end."""
    for n in range(min(len(a), len(b)), -1, -1):  # the longest split that works, by brute force
        for head in range(n + 1):
            tail = n - head
            if a[:head] == b[:head] and a[len(a) - tail :] == b[len(b) - tail :]:
                return n
    return 0


def test_steps_tile_both_lists_and_turn_one_into_the_other() -> None:
    rng = random.Random(3)
    for _ in range(600):
        words = ["a", "b", " ", "the", "72.3%"][: rng.randint(1, 5)]
        a = [rng.choice(words) for _ in range(rng.randint(0, 14))]
        b = list(a)
        for _ in range(rng.randint(0, 4)):  # a few edits, as a rebuilt draft has
            k = rng.randint(0, len(b))
            roll = rng.random()
            if roll < 0.4 and k < len(b):
                b[k] = rng.choice(words + ["new"])
            elif roll < 0.7:
                b.insert(k, rng.choice(words))
            elif b:
                del b[min(k, len(b) - 1)]
        steps = opcodes(a, b)
        assert _apply(a, b, steps) == b
        kept = sum(i2 - i1 for tag, i1, i2, _, _ in steps if tag == "equal")
        assert kept >= _common_ends(a, b)
        if a == b:
            assert steps == ([("equal", 0, len(a), 0, len(b))] if a else [])


def test_one_changed_word_in_a_long_draft_is_one_step_between_two_equal_ones() -> None:
    a = ("The GPU is busy 72.3% of the time and the rest is idle . " * 40).split(" ")
    b = list(a)
    b[301] = "74.1%"
    steps = opcodes(a, b)
    assert steps == [
        ("equal", 0, 301, 0, 301),
        ("replace", 301, 302, 301, 302),
        ("equal", 302, len(a), 302, len(b)),
    ]
