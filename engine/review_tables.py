"""Cells of the review page's tables, shared by every section's ``review_tables``.

A section says which rows and columns its results deserve; the text of each cell (numbers with
thousands separators, sizes in GiB, a missing value as a dash) is decided here, once.
"""

from __future__ import annotations

from typing import Any

from engine.units import format_gib

SOURCE_KINDS = ("calculated", "simulated", "measured")


def source_kind(source: str) -> str:
    """'measured on NVIDIA H100' → 'measured': the CSS class of a source badge."""
    first = (source.split() or ["other"])[0].lower()
    return first if first in SOURCE_KINDS else "other"


def num_cell(value: Any) -> str:
    """A value as the page shows it: 1,234 · 0.1235 · yes/no · '—' for nothing."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else ("yes" if value else "no")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() and abs(value) >= 1 else f"{value:,.4g}"
    return str(value)


def gib_cell(num_bytes: Any) -> str:
    """A byte count in GiB, or '—' when there is none."""
    return format_gib(num_bytes, grouping=True) if isinstance(num_bytes, (int, float)) else "—"
