"""The ``lab`` section of a day's spec: which script, how to run it, which figures it owes.

Each figure is declared once. A lab that records its figures with labkit describes them where
it measures them (``figure(name, value, unit, about=…)``), and the spec need not list them: the
run's figures are then the contract. A spec that lists ``figures`` makes that list the contract,
checked against the run, so a lab that reports something else, or forgets one, is caught when it
runs, not on a post. A lab that imports nothing is read through ``from_output``: the spec gives
each figure a regular expression over the lab's printed output (engine.lab.output).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from engine import units
from engine.lab import output
from engine.lab.store import MAX_COLUMNS
from engine.validation import Label, Name, OneLine, Strict

FigureName = Name
Arg = Annotated[str, Field(max_length=200, pattern=r"^[^\n\r\x00]*$")]
MAX_TIMEOUT_S = 1800  # half an hour: a lab is a short experiment, not a batch job


Pattern = Annotated[str, Field(min_length=1, max_length=300)]
MAX_FIGURES = 60
MAX_TABLES = 12


class LabFigure(Strict):
    """One figure the lab must record: its unit and what it is, in one line (here, or where the
    lab records it), or the regular expression that reads it off the lab's printed output."""

    unit: units.UnitName
    about: OneLine | None = None
    label: Label | None = None  # short, for tables
    from_output: Pattern | None = None

    @field_validator("from_output")
    @classmethod
    def _one_group(cls, value: str | None) -> str | None:
        if value is not None:
            output.compile_pattern(value)
        return value

    @model_validator(mode="after")
    def _described(self) -> LabFigure:
        if self.from_output is not None and self.about is None:
            raise ValueError("a figure read from the output needs 'about': the lab cannot say what it is")
        return self


class LabTable(Strict):
    """A table the lab owes: its columns, each with a unit ('text' for labels), in order, and
    optionally the regular expression that finds its header line in the printed output."""

    columns: Annotated[dict[FigureName, str], Field(min_length=1, max_length=MAX_COLUMNS)]
    about: OneLine | None = None
    from_output: Pattern | None = None

    @field_validator("columns")
    @classmethod
    def _known_units(cls, value: dict[str, str]) -> dict[str, str]:
        for unit in value.values():
            if unit != output.TEXT:
                units.unit(unit)
        return value

    @field_validator("from_output")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            output.compile_header(value)
        return value


LineNumber = Annotated[int, Field(ge=1, le=100_000, strict=True)]
MAX_TERMINAL_RANGES = 8  # more pieces than this is a different picture: a shorter transcript


class TerminalSpec(Strict):
    """Which transcript lines the terminal screenshot shows (1-based, inclusive): one range,
    ``first_line``..``last_line`` (to the end when last_line is left out), or several,
    ``lines: [[11, 24], [40, 52]]``, drawn with a line saying how many were left out between.
    That the lines exist is checked when the screenshot is drawn, against the measurement."""

    first_line: LineNumber = 1
    last_line: LineNumber | None = None
    lines: (
        Annotated[list[tuple[LineNumber, LineNumber]], Field(min_length=1, max_length=MAX_TERMINAL_RANGES)]
        | None
    ) = None

    @field_validator("lines")
    @classmethod
    def _ranges_in_order(cls, ranges: list[tuple[int, int]] | None) -> list[tuple[int, int]] | None:
        for first, last in ranges or []:
            if last < first:
                raise ValueError(f"range [{first}, {last}] ends before it starts")
        for (a, b), (c, d) in zip(ranges or [], (ranges or [])[1:]):
            if c <= b:
                raise ValueError(
                    f"ranges [{a}, {b}] and [{c}, {d}] overlap or are out of order: "
                    "list them top to bottom, each starting after the one before ends"
                )
            if c == b + 1:
                raise ValueError(f"ranges [{a}, {b}] and [{c}, {d}] touch: write them as one, [{a}, {d}]")
        return ranges

    @model_validator(mode="after")
    def _one_form(self) -> TerminalSpec:
        if self.lines is not None and {"first_line", "last_line"} & self.model_fields_set:
            raise ValueError("give either lines or first_line/last_line, not both")
        if self.last_line is not None and self.last_line < self.first_line:
            raise ValueError(f"last_line {self.last_line} is before first_line {self.first_line}")
        return self


class LabSection(Strict):
    """The day's own experiment. ``script`` is relative to the spec's folder and must sit in a
    folder of its own (``day01.lab/lab.py``): that folder is the lab, hashed for staleness."""

    script: Annotated[str, Field(min_length=1, max_length=300)]
    args: Annotated[list[Arg], Field(max_length=32)] = []
    timeout_s: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)] = 120
    # Absent: the figures the run records (with their labkit descriptions) are the contract.
    figures: Annotated[dict[FigureName, LabFigure], Field(max_length=MAX_FIGURES)] = {}
    tables: Annotated[dict[FigureName, LabTable], Field(max_length=MAX_TABLES)] = {}
    # Published figures to show beside measured ones: a file in engine/catalog/reference/
    # (name without .yaml), and which measured figure each reference entry sits beside.
    reference: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,60}$")] | None = None
    compare: dict[FigureName, Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,59}$")]] = {}
    table: list[FigureName] = []  # the headline figures: the build's summary and figures_table (default: all)
    terminal: TerminalSpec = TerminalSpec()

    @field_validator("script")
    @classmethod
    def _inside_a_folder(cls, value: str) -> str:
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts:
            raise ValueError(f"{value!r} must be a path inside the spec's folder, like day01.lab/lab.py")
        if len(path.parts) < 2:
            raise ValueError(f"{value!r} must sit in a folder of its own, like day01.lab/lab.py")
        return value

    @model_validator(mode="after")
    def _names_known(self) -> LabSection:
        # Without a figures list, the names are the run's: checked when the build reads it.
        for name in [*self.compare, *self.table] if self.figures else []:
            if name not in self.figures:
                raise ValueError(f"figure '{name}' is not among the lab's figures {sorted(self.figures)}")
        if self.compare and self.reference is None:
            raise ValueError("compare needs a reference file to compare with")
        if len(set(self.table)) != len(self.table):
            raise ValueError("table names a figure twice")
        return self
