"""A lab's measurement file: ``days/dayNN.measured/<machine>.json``, written once, read by builds.

Schema ``lab/1`` (times in seconds, sizes in bytes)::

    {"schema": "lab/1", "day": 1, "date": "2026-11-30T14:00:00Z" (UTC),
     "machine": {"name", "slug", "cpu", "cores", "memory_bytes", "os", "kernel", "arch", "python"},
     "command": "python day01.lab/lab.py --quick"  (as a person would type it, from days/),
     "lab": {"script": "day01.lab/lab.py", "files_sha256": hex, "files": [relative paths]},
     "wall_seconds": float,
     "figures": {name: {"value": float, "unit": str, "about": str, "label"?: str, "line"?: str}},
     "given": {name: {"value": float, "unit": str, "about": str, "label"?: str}},   (values set)
     "tables": {name: {"columns": [[column, unit]], "rows": [[cell]], "about": str, "line"?: str}},
     "notes": [str],
     "transcript": {"text": str, "lines": int, "truncated": bool}}

It sits in the same folder as a GPU bench's files and is picked by the same ``measured:`` rule
(engine.measured.resolve_measurement): ``latest`` is the newest by recorded date.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from engine import units, validation
from engine.errors import UserError
from engine.lab import output
from engine.measured import read_document
from engine.outdir.atomic import write_text
from engine.validation import Strict

SCHEMA = "lab/1"
MAX_COLUMNS = 12  # columns of one lab table, in the spec and in the measurement file alike
MAX_TRANSCRIPT_CHARS = 200_000


class Machine(Strict):
    name: validation.OneLine  # what the posts call the machine
    slug: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    cpu: validation.OneLine  # drawn on charts, shown on the review page: one plain line each
    cores: int = Field(ge=0)
    memory_bytes: int = Field(ge=0)
    os: validation.OneLine
    kernel: validation.OneLine
    arch: validation.OneLine
    python: validation.OneLine


class LabFiles(Strict):
    script: str
    files_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    files: list[str]


class Figure(Strict):
    value: float
    unit: units.UnitName
    about: str
    label: validation.Label | None = None
    line: str | None = Field(
        default=None, max_length=output.MAX_LINE_CHARS
    )  # the printed line it was read from

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def _plausible(self) -> Figure:
        units.check_plausible(self.value, self.unit)
        return self


class Given(Figure):
    """A value the person set (labkit.given): posted as set, never as measured."""


Cell = Annotated[str, Field(max_length=output.MAX_CELL_CHARS)] | float


class Table(Strict):
    columns: Annotated[
        list[tuple[str, str]], Field(min_length=1, max_length=MAX_COLUMNS)
    ]  # [name, unit], in order
    rows: Annotated[list[list[Cell]], Field(min_length=1, max_length=output.MAX_ROWS)]
    about: str = ""
    line: str | None = Field(default=None, max_length=output.MAX_LINE_CHARS)

    @field_validator("rows")
    @classmethod
    def _finite_cells(cls, rows: list[list[Cell]]) -> list[list[Cell]]:
        for row in rows:
            if any(isinstance(c, float) and not math.isfinite(c) for c in row):
                raise ValueError("a cell is not a finite number")
        return rows

    @model_validator(mode="after")
    def _plausible_cells(self) -> Table:
        for i, row in enumerate(self.rows):
            for (name, unit_name), cell in zip(self.columns, row, strict=False):
                if isinstance(cell, float) and unit_name in units.UNITS:
                    try:
                        units.check_plausible(cell, unit_name)
                    except ValueError as err:
                        raise ValueError(f"row {i + 1}, column {name}: {err}") from None
        return self


class Transcript(Strict):
    text: str = Field(max_length=MAX_TRANSCRIPT_CHARS)
    lines: int = Field(ge=0)
    truncated: bool


class LabMeasurement(Strict):
    schema_: Literal["lab/1"] = Field(alias="schema")
    day: int = Field(ge=1)
    date: str
    machine: Machine
    command: str
    lab: LabFiles
    wall_seconds: float = Field(ge=0)
    figures: dict[str, Figure]
    order: list[str] = []  # the figures in the order the lab reported them
    given: dict[str, Given] = {}
    tables: dict[str, Table] = {}
    notes: Annotated[list[validation.Sentence], Field(max_length=50)] = []  # the judge keeps 50
    transcript: Transcript

    _date = field_validator("date")(validation.recorded_date)

    @model_validator(mode="after")
    def _holds_numbers(self) -> LabMeasurement:
        if not holds_numbers(self.figures, self.tables):
            raise ValueError(NO_NUMBERS)
        return self


NO_NUMBERS = "no figures and no table: a lab's measurement holds its numbers"


def holds_numbers(figures: dict, tables: dict) -> bool:
    """A measurement's one rule of content: some figure, or a table (a table alone is a lab's
    numbers too)."""
    return bool(figures or tables)


def validate(doc: object, *, file: str | Path) -> dict:
    """The document as a plain dict if it is a valid lab measurement; else a UserError naming
    the first bad field (a file from the GPU bench is told apart by its schema)."""
    if isinstance(doc, dict) and doc.get("schema") != SCHEMA:
        raise UserError(
            f"schema {doc.get('schema')!r} is not {SCHEMA!r}: not a lab measurement "
            "(run make lab-dayNN, or pick the file with measured:)",
            file=file,
            field="schema",
        )
    return validation.validate(LabMeasurement, doc, file=file).model_dump(by_alias=True)


def load(path: Path, *, day: int) -> dict:
    return accept(read_document(path), file=path, day=day)


def accept(doc: object, *, file: str | Path, day: int) -> dict:
    """``doc`` as a build reads it back (``load``): valid, and measured for ``day``."""
    checked = validate(doc, file=file)
    if checked["day"] != day:
        raise UserError(f"measured for day {checked['day']}, not day {day}", file=file, field="day")
    return checked


def dumps(doc: dict) -> str:
    """The file's text: what ``write`` writes, and what a check before writing reads back."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write(doc: dict, path: Path) -> Path:
    """Validate, then write atomically (a temporary file renamed over the target): a reader, or
    a lab killed half-way, never leaves half a file, and a refused run leaves the old one."""
    validate(doc, file=path)
    return write_text(path, dumps(doc), what="measurement")
