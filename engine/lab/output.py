"""Figures and tables read from what a lab printed, for labs that import nothing of ours.

A figure in the spec may say ``from_output: REGEX``: a regular expression with exactly one
capture group, which must match exactly one line of the transcript; the captured text is the
figure's value. A table may say ``from_output: REGEX`` too: the regular expression finds its
header line (exactly one), and the rows are the lines below it, down to the first blank line or
the first line that is not a row; a ruler line (``-----``, ``=====``, ``|---|---|``) is skipped.

Why exactly one line: a pattern that matches two lines (a warm-up run and the real one, a value
repeated in a summary) would pick one silently; an error that quotes the lines lets the person
tighten the pattern instead. Errors are ValueErrors with the message a person reads; the caller
names the spec's field.
"""

from __future__ import annotations

import difflib
import re
import time
from dataclasses import dataclass
from typing import Any

from engine import ansi

MAX_QUOTED_LINES = 3  # lines an error quotes, each cut short
MAX_ROWS = 1000  # rows a table may have, printed or recorded
MAX_LINE_CHARS = 200  # a printed line kept beside what was read from it
MAX_CELL_CHARS = 60  # a table's label cell, as kept
# A spec's pattern may backtrack without end on a long line ("(a+)+$"): matched with the regex
# module, which can stop, within this many seconds for the whole transcript.
MAX_MATCH_SECONDS = 2.0
_NUMBER = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?$|^[+-]?\.\d+$")
_RULER = re.compile(r"^[\s\-=+|:_]+$")


@dataclass(frozen=True)
class Found:
    """A value read off one line of the transcript, and that line (1-based) as printed."""

    value: float
    line: str
    line_number: int


def lines_of(transcript: str) -> list[str]:
    """The transcript's lines as a terminal shows them (engine.ansi, the replay the terminal
    screenshot draws): progress lines at their last state, escapes gone, so a pattern matches
    the text a person saw, and the line a figure was read from is the line the picture shows."""
    return [ansi.line_text(line) for line in ansi.render(transcript)]


def compile_pattern(pattern: str) -> Any:
    """The spec's pattern, checked to have exactly one capture group. (``regex`` is imported
    here, not with the module: every build reads the lab section's model, few have a lab.)"""
    import regex

    try:
        compiled = regex.compile(pattern)
    except regex.error as err:
        raise ValueError(f"not a regular expression ({err})") from None
    if compiled.groups != 1:
        raise ValueError(f"needs exactly one capture group (the number), has {compiled.groups}")
    return compiled


def compile_header(pattern: str) -> Any:
    """A table's header pattern: any regular expression (its groups are not read)."""
    import regex

    try:
        return regex.compile(pattern)
    except regex.error as err:
        raise ValueError(f"not a regular expression ({err})") from None


def parse_number(text: str) -> float:
    """'1,234.5' → 1234.5; '4' → 4.0; '-0.25' → -0.25; '1e-3' → 0.001. Commas must group
    thousands ('12,34' is refused: a locale's decimal comma would be read wrong)."""
    cleaned = text.strip()
    if not _NUMBER.match(cleaned):
        raise ValueError(f"{text.strip()[:40]!r} is not a number")
    return float(cleaned.replace(",", ""))


def _quote(lines: list[tuple[int, str]]) -> str:
    shown = [f"line {n}: {text.strip()[:80]!r}" for n, text in lines[:MAX_QUOTED_LINES]]
    more = len(lines) - MAX_QUOTED_LINES
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def _one_line(lines: list[str], pattern: Any) -> tuple[int, str, Any]:
    deadline = time.monotonic() + MAX_MATCH_SECONDS
    hits = []
    for n, line in enumerate(lines, start=1):
        try:
            match = pattern.search(line, timeout=max(deadline - time.monotonic(), 0.001))
        except TimeoutError:
            raise ValueError(
                f"{pattern.pattern!r} took over {MAX_MATCH_SECONDS:g} s to match the lab's output, "
                "the stated limit: write it without nested repeats such as (a+)+"
            ) from None
        if match:
            hits.append((n, line, match))
    if not hits:
        near = _nearest(lines, pattern.pattern)
        hint = f"; the nearest is {_quote([near])}" if near is not None else ""
        raise ValueError(f"{pattern.pattern!r} matches no line of the lab's output{hint}")
    if len(hits) > 1:
        quoted = _quote([(n, line) for n, line, _ in hits])
        raise ValueError(f"{pattern.pattern!r} matches {len(hits)} lines, it must match one: {quoted}")
    return hits[0]


def _nearest(lines: list[str], pattern: str) -> tuple[int, str] | None:
    """The output line most like the words a pattern spells (its escapes and classes dropped):
    a label the lab now prints differently ("p50 lookups:") is quoted beside the error."""
    words = re.sub(r"\\[a-zA-Z]|\[[^\]]*\]|[()^$*+?{}|.\\]", " ", pattern)
    words = " ".join(re.sub(r"\b\d+\b", " ", words).split())
    stripped = [line.strip()[:200] for line in lines[:10_000]]  # bounded: an output is long
    found = difflib.get_close_matches(words, stripped, n=1, cutoff=0.5) if words else []
    if not found:
        return None
    number = stripped.index(found[0]) + 1
    return number, lines[number - 1]


def figure_from_output(transcript: str, pattern: str) -> Found:
    """The one number ``pattern`` captures in the transcript, with its line."""
    compiled = compile_pattern(pattern)
    number, line, match = _one_line(lines_of(transcript), compiled)
    captured = match.group(1)
    if captured is None:
        raise ValueError(f"the capture group matched nothing on line {number}: {line.strip()[:80]!r}")
    try:
        return Found(parse_number(captured), line, number)
    except ValueError as err:
        raise ValueError(f"line {number} ({line.strip()[:80]!r}): {err}") from None


TEXT = "text"  # a table column of labels (a strategy's name), not numbers


def split_row(line: str, columns: int) -> list[str]:
    """A printed row's cells: split on '|' when the row uses it; else on runs of two or more
    spaces when that gives one cell per column (labels with a space in them); else on spaces."""
    text = line.strip()
    if "|" in text:
        return [cell.strip() for cell in text.strip("|").split("|")]
    wide = re.split(r"\s{2,}", text)
    return wide if len(wide) == columns else text.split()


Cell = float | str


def parse_row(cells: list[str], units: list[str]) -> list[Cell]:
    """Each cell as its column's unit wants it: text as printed, anything else a number."""
    return [cell if unit == TEXT else parse_number(cell) for cell, unit in zip(cells, units)]


def table_from_output(transcript: str, pattern: str, units: list[str]) -> tuple[list[list[Cell]], Found]:
    """The rows below the one header line ``pattern`` finds, one cell per column of ``units``.
    Returns the rows and the header line (its value is the row count)."""
    lines = lines_of(transcript)
    number, header, _ = _one_line(lines, compile_header(pattern))
    rows: list[list[Cell]] = []
    for n in range(number, len(lines)):  # lines[number] is the line after the header
        line = lines[n]
        if not line.strip():
            break
        if _RULER.match(line):
            continue
        cells = split_row(line, len(units))
        if len(cells) != len(units):
            break
        try:
            rows.append(parse_row(cells, units))
        except ValueError:
            if rows:
                break
            raise ValueError(
                f"line {n + 1} under the header is not a row of {len(units)} cells as the columns say"
            ) from None
        if len(rows) > MAX_ROWS:
            raise ValueError(f"the table runs past {MAX_ROWS} rows, the stated limit")
    if not rows:
        raise ValueError(
            f"no row of {len(units)} cells under the header on line {number} ({header.strip()[:80]!r})"
        )
    return rows, Found(float(len(rows)), header, number)
