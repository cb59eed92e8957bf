"""Cells of the review page's tables, shared by every section's ``review_tables``.

A section says which rows and columns its results deserve; the text of each cell (a missing
value as a dash, yes/no) is decided here, once, and the text of a number by engine.numbers, as
on the posts.
"""

from __future__ import annotations

from typing import Any

from engine import numbers

SOURCE_KINDS = ("calculated", "simulated", "measured")


def source_kind(source: str) -> str:
    """'measured on NVIDIA H100' → 'measured': the CSS class of a source badge."""
    first = (source.split() or ["other"])[0].lower()
    return first if first in SOURCE_KINDS else "other"


def num_cell(value: Any) -> str:
    """A value as the page shows it: 1,234 · 0.1235 · yes/no · '—' for nothing. The page is
    where the detail lives, so a fraction keeps four significant figures, not a post's two."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else ("yes" if value else "no")
    if isinstance(value, (int, float)):
        return numbers.precise(value)
    return str(value)


def pct_cell(fraction: Any, digits: int = 1) -> str:
    """A share as a percentage, or '—' when there is none."""
    return numbers.pct(fraction, digits) if isinstance(fraction, (int, float)) else "—"


def gib_cell(num_bytes: Any) -> str:
    """A byte count in GiB, or '—' when there is none."""
    return numbers.gib(num_bytes) if isinstance(num_bytes, (int, float)) else "—"
