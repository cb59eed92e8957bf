"""Trace files: a CSV of requests to replay (output_tokens; prompt_tokens, arrival_time optional).

Two readers, one answer. A trace of millions of rows is read by numpy's C parser
(``np.loadtxt``, C-implemented since numpy 1.23): a million rows in a fraction of the seconds a
row-by-row Python loop costs. When it refuses the file (quotes, a bad cell, too few cells), or a
value breaks a rule, the careful row-by-row reader (``_parse_trace``) reads it again, and its
only extra job is to name the file, row and column of the first mistake. Both accept the same
numbers: ASCII digits with an optional sign, point and exponent (no ``1_000``, no Arabic-Indic
digits, no hexadecimal), and both convert a cell as Python's ``float`` does.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import UserError
from engine.limits import (
    MAX_ARRIVAL_SECONDS,
    MAX_REQUESTS,
    MAX_TOKENS,
    MAX_TRACE_BYTES,
    decode_utf8,
    read_bytes_limited,
)
from engine.workload.core import Workload

# A number as a person writes it in a CSV: ASCII digits only (re.ASCII keeps \d from matching
# Arabic-Indic or full-width digits, which int() and float() would silently accept).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)

REQUIRED_COLUMN = "output_tokens"
OPTIONAL_COLUMNS = ("prompt_tokens", "arrival_time")
COLUMNS = (REQUIRED_COLUMN, *OPTIONAL_COLUMNS)


def load_trace(path: str | Path) -> Workload:
    """Read a CSV trace. Every mistake is a UserError naming the file, the row (the file's line
    number, header = row 1) and the column: a wrong length silently replayed is a wrong post."""
    path = Path(path)
    data = read_bytes_limited(path, MAX_TRACE_BYTES, "workload")
    fast = _fast_trace(data, path)
    if fast is not None:
        return fast
    text = decode_utf8(data, path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        return _parse_trace(reader, path)
    except csv.Error as exc:
        raise UserError(f"malformed CSV: {exc}", file=path, field=f"row {reader.line_num}") from None


def _fast_trace(data: bytes, path: Path) -> Workload | None:
    """The workload, read by numpy's C parser, or None when the careful reader must look (an
    unusual file, or a value that breaks a rule: the careful reader names its row)."""
    if data.startswith(b"\xef\xbb\xbf"):  # a byte-order mark, as spreadsheets save
        data = data[3:]
    start, skip = 0, 1
    while True:  # leading blank lines
        end = data.find(b"\n", start)
        if end < 0 or data[start:end].strip():
            break
        start, skip = end + 1, skip + 1
    if end < 0 or not data[start:end].isascii():
        return None
    names = [c.strip() for c in data[start:end].decode("ascii").split(",")]
    if REQUIRED_COLUMN not in names or len(set(names)) != len(names) or not set(names) <= set(COLUMNS):
        return None  # the careful reader names the mistake
    wanted = [name for name in (REQUIRED_COLUMN, *OPTIONAL_COLUMNS) if name in names]
    if b'"' in data or not data.isascii():
        return None  # quoted cells, or digits numpy would not read as the careful reader does
    # Lengths as int64 (numpy's integer parser is the fastest, and refuses '5.0' and '1e3',
    # which the careful reader then accepts), arrival times as float64.
    dtype = [(name, np.float64 if name == "arrival_time" else np.int64) for name in wanted]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "no data" (the careful reader says it) and blank lines
            table = np.loadtxt(
                io.BytesIO(data),
                delimiter=",",
                skiprows=skip,
                comments=None,
                usecols=[names.index(n) for n in wanted],
                dtype=dtype,
                ndmin=1,
                max_rows=MAX_REQUESTS + 1,
                encoding=None,
            )
    except (ValueError, OverflowError):
        return None
    if len(table) > MAX_REQUESTS:
        raise UserError(
            f"more than {MAX_REQUESTS:,} requests: the limit of one trace", file=path, field="rows"
        )
    if not len(table):
        return None
    if data.count(b",", end) != len(table) * (len(names) - 1):
        return None  # a row of more cells than the header names (usecols skips them): named there
    arrays: list[np.ndarray | None] = []
    for name, least in ((REQUIRED_COLUMN, 1), ("prompt_tokens", 0)):
        column = np.ascontiguousarray(table[name]) if name in wanted else None
        if column is not None and not (column.min() >= least and column.max() <= MAX_TOKENS):
            return None
        arrays.append(column)
    arrival = np.ascontiguousarray(table["arrival_time"]) if "arrival_time" in wanted else None
    if arrival is not None:
        if not (arrival.min() >= 0 and arrival.max() <= MAX_ARRIVAL_SECONDS):  # also NaN
            return None
        if len(arrival) > 1 and np.any(arrival[1:] < arrival[:-1]):
            return None
    return Workload.of(arrays[0], arrays[1], arrival, source=f"trace {path}")


def _unknown_column(name: str, number: int) -> str:
    if not name:
        return f"a column with no name; the columns are {', '.join(COLUMNS)}"
    close = difflib.get_close_matches(name, COLUMNS, n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"the columns are {', '.join(COLUMNS)}"
    return f"unknown column {name[:40]!r}; {hint}"


def _parse_trace(reader: Any, path: Path) -> Workload:
    header = next(reader, None)
    while header is not None and not any(cell.strip() for cell in header):
        header = next(reader, None)  # tolerate leading blank lines
    if header is None:
        raise UserError(
            f"empty file: needs a header row naming the '{REQUIRED_COLUMN}' column",
            file=path,
            field="row 1",
        )
    names = [cell.strip().lstrip("\ufeff") for cell in header]
    header_row = reader.line_num
    for name in (REQUIRED_COLUMN, *OPTIONAL_COLUMNS):
        if names.count(name) > 1:
            first, second = [i + 1 for i, n in enumerate(names) if n == name][:2]
            raise UserError(
                f"the column is given twice (columns {first} and {second}): which one is meant?",
                file=path,
                field=f"row {header_row}, column {name}",
            )
    for number, name in enumerate(names, start=1):
        if name not in COLUMNS:  # a misspelt column ignored would replay the wrong lengths
            raise UserError(
                _unknown_column(name, number), file=path, field=f"row {header_row}, column {number}"
            )
    if REQUIRED_COLUMN not in names:
        raise UserError(
            f"missing required column (found: {', '.join(n for n in names if n) or 'none'})",
            file=path,
            field=f"row {header_row}, column {REQUIRED_COLUMN}",
        )
    index = {name: names.index(name) for name in (REQUIRED_COLUMN, *OPTIONAL_COLUMNS) if name in names}
    columns: dict[str, list[Any]] = {name: [] for name in index}
    last_arrival = 0.0
    rows = 0
    for row in reader:
        if not any(cell.strip() for cell in row):
            continue
        line = reader.line_num
        rows += 1
        if rows > MAX_REQUESTS:
            raise UserError(
                f"more than {MAX_REQUESTS:,} requests: the limit of one trace", file=path, field=f"row {line}"
            )
        if len(row) > len(names):  # a cell no column names: a shifted row, or a value lost
            raise UserError(
                f"{len(row)} cells, but the header names {len(names)} column(s): a cell no column names",
                file=path,
                field=f"row {line}",
            )
        for name, col in index.items():
            where = f"row {line}, column {name}"
            cell = row[col].strip() if col < len(row) else ""
            if not cell:
                raise UserError("empty cell", file=path, field=where)
            if name == "arrival_time":
                value = _seconds(cell, path, where)
                if value < last_arrival:
                    raise UserError(
                        f"arrival times must not decrease ({value:g} after {last_arrival:g})",
                        file=path,
                        field=where,
                    )
                last_arrival = value
            else:
                value = _whole(cell, path, where, least=1 if name == REQUIRED_COLUMN else 0)
            columns[name].append(value)
    if not columns[REQUIRED_COLUMN]:
        raise UserError(
            "no requests: the file has a header but no rows",
            file=path,
            field=f"row {header_row + 1}, column {REQUIRED_COLUMN}",
        )
    return Workload.of(
        columns[REQUIRED_COLUMN],
        columns.get("prompt_tokens"),
        columns.get("arrival_time"),
        source=f"trace {path}",
    )


def _whole(cell: str, path: Path, where: str, least: int) -> int:
    if not _NUMBER.fullmatch(cell):
        raise UserError(f"must be a whole number, got {cell!r}", file=path, field=where)
    try:
        value = int(cell)
    except ValueError:
        try:
            number = float(cell)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number.is_integer()):
            raise UserError(f"must be a whole number, got {cell!r}", file=path, field=where) from None
        value = int(number)
    if value < least:
        raise UserError(f"must be at least {least}, got {cell!r}", file=path, field=where)
    if value > MAX_TOKENS:
        raise UserError(
            f"must be at most {MAX_TOKENS:,} tokens per request (more than any model's context), "
            f"got {cell!r}",
            file=path,
            field=where,
        )
    return value


def _seconds(cell: str, path: Path, where: str) -> float:
    if not _NUMBER.fullmatch(cell) and cell.lower().lstrip("+-") not in ("inf", "infinity", "nan"):
        raise UserError(f"must be a number of seconds, got {cell!r}", file=path, field=where)
    try:
        value = float(cell)
    except ValueError:
        raise UserError(f"must be a number of seconds, got {cell!r}", file=path, field=where) from None
    if not math.isfinite(value) or value < 0:
        raise UserError(f"must be a finite number ≥ 0, got {cell!r}", file=path, field=where)
    if value > MAX_ARRIVAL_SECONDS:
        raise UserError(
            f"must be at most {MAX_ARRIVAL_SECONDS:g} s (about 32 years), got {cell!r}",
            file=path,
            field=where,
        )
    return value
