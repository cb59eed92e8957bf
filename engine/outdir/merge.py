"""Carry new numbers into a draft a person edited: a three-way merge.

base is the render the person last saw, theirs is their file, new is the fresh render. Where only
one side changed a stretch of text, that side wins; where both changed it, it is a conflict.
The merging itself is merge3's (breezy's diff3), not ours.

Drafts are paragraphs on long lines, so a line-level merge alone would call "I tightened the
wording" plus "the number in that paragraph changed" a conflict. A line-level conflict is
therefore merged again word by word; only when
that also conflicts are standard conflict markers written, around whole lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import merge3

START, MIDDLE, END = "<<<<<<< your edit", "=======", ">>>>>>> new numbers"
# A word with the spaces after it; a line break on its own, so that it anchors the merge between
# a change at the end of one line and a change on the next.
_WORD = re.compile(r"\n|[^\S\n]+|\S+[^\S\n]*")


@dataclass
class Merged:
    text: str
    conflicts: list[tuple[int, int]] = field(default_factory=list)  # 1-based line spans in text

    @property
    def clean(self) -> bool:
        return not self.conflicts


def three_way(base: str, theirs: str, new: str, *, theirs_win: bool = False) -> Merged:
    """The person's text with the changes base → new applied, or the conflicts marked; with
    ``theirs_win``, a conflict is settled by the person's side (they answered it already)."""
    out: list[str] = []
    conflicts: list[tuple[int, int]] = []
    lines = merge3.Merge3(_lines(base), _lines(theirs), _lines(new))
    for group in lines.merge_groups():
        if group[0] != "conflict":
            out.extend(group[1])
            continue
        _, base_part, their_part, new_part = group
        words = _merge_words("".join(base_part), "".join(their_part), "".join(new_part))
        if words is not None:
            out.extend(_lines(words))
            continue
        if theirs_win:
            out.extend(_settled(base_part, their_part, new_part))
            continue
        first = len(out) + 1
        out.append(START + "\n")
        out.extend(_ending(their_part))
        out.append(MIDDLE + "\n")
        out.extend(_ending(new_part))
        out.append(END + "\n")
        conflicts.append((first, len(out)))
    return Merged(text="".join(out), conflicts=conflicts)


def _settled(base: Sequence[str], theirs: Sequence[str], new: Sequence[str]) -> list[str]:
    """A conflicting stretch settled for the person, line by line where the three sides have
    as many lines (a render changes numbers in place): a line only the new render changed takes
    it, a line only they changed stays theirs, a line both changed is merged word by word, their
    words winning. Otherwise their stretch whole."""
    if not len(base) == len(theirs) == len(new):
        return list(theirs)
    settled = []
    for b, t, n in zip(base, theirs, new):
        if t == b:
            settled.append(n)
        elif n == b:
            settled.append(t)
        else:
            words = _merge_words(b, t, n)
            settled.append(t if words is None else words)
    return settled


def _merge_words(base: str, theirs: str, new: str) -> str | None:
    """The word-level merge of one conflicting stretch, or None if it conflicts word by word too."""
    words = merge3.Merge3(_WORD.findall(base), _WORD.findall(theirs), _WORD.findall(new))
    merged: list[str] = []
    for group in words.merge_groups():
        if group[0] == "conflict":
            return None
        merged.extend(group[1])
    return "".join(merged)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _ending(part: Sequence[str]) -> list[str]:
    """A conflict side whose last line had no newline (end of file) gets one before a marker."""
    if part and not part[-1].endswith("\n"):
        return [*part[:-1], part[-1] + "\n"]
    return list(part)


def describe(conflicts: list[tuple[int, int]]) -> str:
    """'lines 3-7, 12-15' for the build's message."""
    spans = [f"{a}-{b}" for a, b in conflicts]
    return ("line " if len(spans) == 1 else "lines ") + ", ".join(spans)
