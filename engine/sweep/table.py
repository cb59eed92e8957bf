"""Every point as a CSV row: the axes first, then the simulator's metrics, then cost.

Floats are written with ``repr`` (shortest round-trip form), so the same results give the same
bytes, and a table read back gives the very numbers that were simulated.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from engine.sweep.adapter import METRICS
from engine.sweep.grid import AXES

COST = (
    "gpus",
    "throughput_tok_s_per_gpu",
    "usd_per_gpu_hour",
    "usd_per_hour",
    "usd_per_million_tokens",
    "meets_targets",
)
COLUMNS = (*AXES, *METRICS, *COST)


def to_csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in COLUMNS])
    return buffer.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)
