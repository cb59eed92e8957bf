"""labkit: record a lab's figures for the post engine. One file, standard library only.

Copy this file (engine/lab/kit/labkit.py) into your lab's folder (``days/dayNN.lab/labkit.py``;
``python -m engine new N --lab …`` does) and::

    from labkit import figure, given, table, note
    figure("ram_random", 92.4, "ns", about="one random read from RAM", label="RAM, random read")
    given("clients", 20, "count", about="concurrent clients the load generator runs")
    table("latency", {"depth": "count", "p50": "us"}, [[1, 4.1], [2, 7.9], [3, 12.2]])
    note("O_DIRECT refused by tmpfs: page cache dropped with fadvise instead")

``figure`` is what the lab measured; ``given`` a value the person chose (a probe interval, a
client count), posted as "set", never as a measurement; ``table`` rows of numbers with one unit
per column, which a day's spec can chart. Each figure is described where it is measured, so the
spec need not list it again.

Under ``python -m engine lab`` the engine sets LABKIT_FIGURES to a file path, and every call
rewrites that JSON file whole (``{"labkit": 2, "figures": {name: {"value", "unit", "about"?,
"label"?}}, "given": {...}, "tables": {name: {"columns": {column: unit}, "rows": [[...]]}},
"notes": [...]}``). Run as a plain script (no engine, no variable), the helper only prints what
it would have recorded, so the lab works anywhere its folder is copied: the public repository, a
colleague's laptop. A lab that prefers not to import anything may write that JSON file itself,
or just print its results and let the spec read them (``from_output``).
"""

from __future__ import annotations

import json
import math
import os
import sys

ENV = "LABKIT_FIGURES"
VERSION = 2
_figures: dict = {}
_given: dict = {}
_tables: dict = {}
_notes: list = []


def _name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not name.replace("_", "").isalnum() or not name[:1].isalpha():
        raise ValueError(f"{kind} name {name!r}: use letters, digits and underscores")
    return name


def _number(what: str, value: object) -> float:
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        raise ValueError(f"{what}: {value!r} is not a finite number")
    return number


def _entry(value: float, unit: str, about: str | None, label: str | None) -> dict:
    entry: dict = {"value": value, "unit": str(unit)}
    if about is not None:
        entry["about"] = str(about)
    if label is not None:
        entry["label"] = str(label)
    return entry


def figure(
    name: str, value: float, unit: str, *, about: str | None = None, label: str | None = None
) -> float:
    """Record measured figure ``name`` as ``value`` in ``unit``, with what it is (``about``, one
    line) and a short ``label`` for tables; returns the value so a lab can keep computing."""
    number = _number(f"figure {name}", value)
    _figures[_name("figure", name)] = _entry(number, unit, about, label)
    _save(f"{name} = {number:.6g} {unit}")
    return number


def given(name: str, value: float, unit: str, *, about: str | None = None, label: str | None = None) -> float:
    """Record a value the person set (not measured): posted as "set", with what it is
    (``about``) and a short ``label``, as a figure is; returns the value."""
    number = _number(f"given {name}", value)
    _given[_name("given", name)] = _entry(number, unit, about, label)
    _save(f"{name} = {number:.6g} {unit} (set)")
    return number


def table(name: str, columns: dict, rows: list) -> None:
    """Record table ``name``: ``columns`` maps each column's name to its unit, in order (unit
    "text" for a column of labels, such as a strategy's name), and every row holds one cell per
    column."""
    cols = {_name("column", str(c)): str(u) for c, u in dict(columns).items()}
    kept = []
    for i, row in enumerate(rows):
        cells = list(row)
        if len(cells) != len(cols):
            raise ValueError(f"table {name}: row {i + 1} has {len(cells)} cells for {len(cols)} columns")
        kept.append(
            [
                str(cell) if unit == "text" else _number(f"table {name} row {i + 1}", cell)
                for cell, unit in zip(cells, cols.values())
            ]
        )
    _tables[_name("table", name)] = {"columns": cols, "rows": kept}
    _save(f"table {name}: {len(kept)} rows of {', '.join(cols)}")


def note(text: str) -> None:
    """A sentence the engine keeps with the figures (how something was measured, a fallback)."""
    _notes.append(str(text))
    _save(f"note: {text}")


def _save(plain_line: str) -> None:
    path = os.environ.get(ENV)
    if not path:
        print(f"[labkit] {plain_line}", file=sys.stderr)
        return
    doc = {"labkit": VERSION, "figures": _figures, "given": _given, "tables": _tables, "notes": _notes}
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:  # a write, in the lab's process
        json.dump(doc, out, indent=1)
    os.replace(tmp, path)
