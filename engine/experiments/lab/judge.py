"""Judging a lab's run: what it recorded and printed, checked against the spec, as the figures,
set values and tables a measurement keeps. One line, naming the spec's field, for every way a run
can go wrong; nothing here touches a process or a file.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import ansi, units
from engine.errors import UserError
from engine.experiments.lab.spec import LabFigure, LabSection
from engine.given import MAX_GIVEN
from engine.lab import output, store
from engine.lab.runner import LabRun
from engine.validation import MAX_LABEL_CHARS, MAX_ONE_LINE_CHARS, MAX_SENTENCE_CHARS


@dataclass(frozen=True)
class Judged:
    """What a good run leaves for the measurement file: every figure in the spec's units (with
    its description, and the printed line it was read from), the values the person set, the
    tables, and the lab's notes."""

    figures: dict[str, dict[str, Any]]
    given: dict[str, dict[str, Any]]
    tables: dict[str, dict[str, Any]]
    notes: list[str]


def judge(run: LabRun, section: LabSection, spec_path: Path) -> Judged:
    """The run's figures, checked against the spec; a UserError when the run failed, timed
    out, or reported figures that do not match the spec."""
    if run.exit_status is None:
        raise UserError(
            f"the lab ran past {section.timeout_s:g} s and was stopped; no file written "
            "(shorten the lab or raise timeout_s)",
            file=spec_path,
            field="lab.timeout_s",
        )
    if run.exit_status != 0:
        last = next((ln.strip() for ln in reversed(run.text.splitlines()) if ln.strip()), "no output")
        raise UserError(
            f"the lab failed with exit status {run.exit_status} ({last[:160]}); no file written",
            file=spec_path,
            field="lab.script",
        )

    def fail(message: str, field: str = "lab.figures") -> UserError:
        return UserError(f"{message}; no file written", file=spec_path, field=field)

    printed = {name: fig for name, fig in section.figures.items() if fig.from_output is not None}
    recorded = run.recorded
    if recorded is None and (printed or section.tables) and len(printed) == len(section.figures):
        recorded = {"labkit": VERSION, "figures": {}}  # a lab that imports nothing: all printed
    if (
        not isinstance(recorded, dict)
        or recorded.get("labkit") not in KNOWN_VERSIONS
        or not isinstance(recorded.get("figures"), dict)
    ):
        why = (
            "recorded no figures"
            if recorded is None
            else f"wrote a figures file that cannot be read ({recorded['error']})"
            if isinstance(recorded, dict) and set(recorded) == {"error"}
            else "wrote a figures file that is not labkit JSON"
        )
        raise fail(
            f"the lab {why} (from labkit import figure; figure(name, value, unit, about=...), "
            "or give each figure in the spec a from_output pattern)"
        )
    found = dict(recorded["figures"])
    for name, fig in printed.items():
        if name in found:
            raise fail(
                "the lab records this figure and the spec reads it from the output: choose one",
                f"lab.figures.{name}",
            )
        assert fig.from_output is not None
        try:
            hit = output.figure_from_output(run.text, fig.from_output)
        except ValueError as err:
            raise fail(str(err), f"lab.figures.{name}.from_output") from None
        found[name] = {
            "value": hit.value,
            "unit": fig.unit,
            "line": hit.line.strip()[: output.MAX_LINE_CHARS],
        }
    if section.figures:
        unknown = sorted(set(found) - set(section.figures))
        if unknown:
            raise fail(
                f"the lab reported {_shown(unknown[0])}, which the spec does not list "
                f"(listed: {', '.join(sorted(section.figures))})"
            )
    contract: dict[str, LabFigure | None] = dict(section.figures) or dict.fromkeys(found)
    figures: dict[str, dict] = {}
    for name, wanted in contract.items():
        got = found.get(name)
        field = f"lab.figures.{name}"
        if got is None:
            raise fail("the lab did not report this figure", field)
        value, unit = _value_unit(got)
        if unit is None:
            raise fail(f"the lab reported {_shown(got)}, not a finite value with a unit", field)
        spec_unit = wanted.unit if wanted is not None else unit
        try:
            in_spec_unit = units.convert(value, unit, spec_unit)
        except ValueError as err:
            raise fail(
                f"the spec says {spec_unit}, the lab reported {unit!r} ({err})", f"{field}.unit"
            ) from None
        about = (wanted.about if wanted is not None else None) or _text(got.get("about"))
        if not about:
            raise fail(
                "no description: say what it is where the lab records it "
                f"(figure({name!r}, …, about='…')) or in the spec (lab.figures.{name}.about)",
                field,
            )
        label = (wanted.label if wanted is not None else None) or _text(got.get("label"), MAX_LABEL_CHARS)
        figures[name] = {"value": in_spec_unit, "unit": spec_unit, "about": about}
        if label:
            figures[name]["label"] = label
        if "line" in got:
            figures[name]["line"] = got["line"]
    given = _given(recorded.get("given"), fail)
    tables = _tables(recorded.get("tables"), section, run.text, fail)
    if not store.holds_numbers(figures, tables):
        raise fail(f"the lab recorded {store.NO_NUMBERS}")
    for name in [*section.compare, *section.table]:
        if name not in figures:
            raise fail(
                f"'{name}' is not among the figures the lab reported ({', '.join(sorted(figures))})", "lab"
            )
    recorded_notes = recorded.get("notes", [])
    if not isinstance(recorded_notes, list):
        raise fail("the lab's 'notes' is not a list of lines", "lab")
    # Each note as a terminal shows it (escapes dropped), on one line, bounded: it is posted text.
    notes = [n for n in (_text(ansi.plain(str(n)), MAX_SENTENCE_CHARS) for n in recorded_notes[:50]) if n]
    return Judged(figures, given, tables, notes)


KNOWN_VERSIONS = (1, 2)  # labkit file formats a run may write: 1 has figures and notes alone
VERSION = 2


def _text(value: Any, limit: int = MAX_ONE_LINE_CHARS) -> str | None:
    """A recorded description or label: one line, bounded; None when absent or not text."""
    if not isinstance(value, str) or not value.strip():
        return None
    return " ".join(value.split())[:limit]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _given(recorded: Any, fail: Callable[..., UserError]) -> dict[str, dict[str, Any]]:
    """The values the lab says the person set (labkit.given), each with its unit."""
    if recorded is None:
        return {}
    if not isinstance(recorded, dict):
        raise fail("the lab's 'given' is not a mapping of names to values", "lab")
    given = {}
    for name, got in list(recorded.items())[:MAX_GIVEN]:
        value, unit = _value_unit(got)
        if unit is None:
            raise fail(f"the lab set {name!r} to {_shown(got)}, not a finite value with a unit", "lab")
        try:
            units.unit(unit)
        except ValueError as err:
            raise fail(f"the lab set {name!r} in {err}", "lab") from None
        given[str(name)] = {"value": value, "unit": unit, "about": _text(got.get("about")) or ""}
        label = _text(got.get("label"), MAX_LABEL_CHARS)
        if label:
            given[str(name)]["label"] = label
    return given


def _tables(
    recorded: Any, section: LabSection, transcript: str, fail: Callable[..., UserError]
) -> dict[str, dict[str, Any]]:
    """The lab's tables: recorded with labkit.table, or read from the printed output; a spec
    that lists tables makes that list the contract, columns and units included."""
    found: dict[str, Any] = dict(recorded) if isinstance(recorded, dict) else {}
    if recorded is not None and not isinstance(recorded, dict):
        raise fail("the lab's 'tables' is not a mapping of names to tables", "lab.tables")
    for name, wanted in section.tables.items():
        if wanted.from_output is None:
            continue
        if name in found:
            raise fail(
                "the lab records this table and the spec reads it from the output: choose one",
                f"lab.tables.{name}",
            )
        try:
            rows, header = output.table_from_output(
                transcript, wanted.from_output, list(wanted.columns.values())
            )
        except ValueError as err:
            raise fail(str(err), f"lab.tables.{name}.from_output") from None
        found[name] = {
            "columns": dict(wanted.columns),
            "rows": rows,
            "line": header.line.strip()[: output.MAX_LINE_CHARS],
        }
    if section.tables:
        unknown = sorted(set(found) - set(section.tables))
        if unknown:
            raise fail(
                f"the lab recorded table {_shown(unknown[0])}, which the spec does not list", "lab.tables"
            )
    tables = {}
    for name in section.tables or found:
        got = found.get(name)
        field = f"lab.tables.{name}"
        if (
            not isinstance(got, dict)
            or not isinstance(got.get("columns"), dict)
            or not isinstance(got.get("rows"), list)
        ):
            raise fail("the lab did not record this table (labkit.table(name, columns, rows))", field)
        wanted_table = section.tables.get(name)
        columns = (
            dict(wanted_table.columns)
            if wanted_table is not None
            else {str(k): str(v) for k, v in got["columns"].items()}
        )
        if list(got["columns"]) != list(columns):
            raise fail(
                f"the lab's columns are {_shown(list(got['columns']))}, the spec says {', '.join(columns)}",
                f"{field}.columns",
            )
        rows = []
        for i, row in enumerate(got["rows"][: output.MAX_ROWS + 1]):
            if not isinstance(row, list) or len(row) != len(columns):
                raise fail(f"row {i + 1} does not have {len(columns)} cells", field)
            rows.append(
                [
                    _cell(cell, str(got["columns"][col]), unit, f"{field} row {i + 1}", fail)
                    for cell, (col, unit) in zip(row, columns.items())
                ]
            )
        if len(rows) > output.MAX_ROWS:
            raise fail(f"more than {output.MAX_ROWS} rows, the stated limit", field)
        if not rows:
            raise fail("the table has no rows", field)
        about = (wanted_table.about if wanted_table is not None else None) or _text(got.get("about")) or ""
        # Columns as [name, unit] pairs: their order is the table's, and JSON files are written
        # with sorted keys.
        table = {"columns": [[c, u] for c, u in columns.items()], "rows": rows, "about": about}
        if "line" in got:
            table["line"] = got["line"]
        tables[name] = table
    return tables


def _cell(
    cell: Any, recorded_unit: str, unit: str, where: str, fail: Callable[..., UserError]
) -> float | str:
    """One table cell in its column's unit: a label kept as text, a number converted."""
    if unit == output.TEXT:
        return " ".join(str(cell).split())[: output.MAX_CELL_CHARS]
    if isinstance(cell, bool) or not isinstance(cell, (int, float)) or not math.isfinite(cell):
        raise fail(f"{_shown(cell)} is not a finite number", where)
    try:
        return units.convert(float(cell), recorded_unit, unit)
    except ValueError as err:
        raise fail(str(err), where) from None


def _value_unit(got: Any) -> tuple[float, str | None]:
    """(value, unit) from a recorded figure; unit None when either is missing or not finite."""
    if isinstance(got, dict):
        value, unit = got.get("value"), got.get("unit")
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and isinstance(unit, str)
            and math.isfinite(value)
        ):
            return float(value), unit
    return 0.0, None
