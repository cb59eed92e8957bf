"""What a lab will report, found before it has a spec: read off its labkit calls, or off what it
printed when run once.

Two kinds of lab, two readings:

- A lab that records with labkit names its figures in the code: ``figure("p50", …, "us",
  about="…")``. Its calls are read from the source (never run), wherever a name and a unit are
  written as plain strings; the spec then lists nothing, since the run's figures are the
  contract.
- A lab that imports nothing prints its results. It is run once, and its output is read the way
  a person reads it: ``label: 12.5 ms`` (or ``label = 12.5 ms``) is a figure when the unit is one
  the engine knows, and a line of column names above rows of numbers is a table. Each becomes a
  ``from_output`` pattern in the spec that matches exactly that line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Container
from dataclasses import dataclass, field

from engine import units
from engine.lab import output

MAX_FOUND = 40  # figures a scaffold lists (the spec's limit is higher; a post quotes fewer)


@dataclass(frozen=True)
class FoundFigure:
    name: str
    unit: str
    about: str
    label: str | None = None
    pattern: str | None = None  # from_output, for a printed figure


@dataclass(frozen=True)
class FoundTable:
    name: str
    columns: dict[str, str]  # column → unit ('text' for labels)
    pattern: str | None = None
    rows: int = 0
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)  # column → (lowest, highest)


@dataclass
class Found:
    """Everything a scaffold can quote: figures, values the person set, tables."""

    figures: list[FoundFigure] = field(default_factory=list)
    given: list[FoundFigure] = field(default_factory=list)
    tables: list[FoundTable] = field(default_factory=list)
    title: str | None = None
    # printed 'name: number word' lines whose word is no unit the engine writes: left out, and said
    unknown_units: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.figures or self.tables)


# ---- a labkit lab: its calls, read from the source ------------------------------------------


def uses_labkit(source: str) -> bool:
    return bool(re.search(r"^\s*(from\s+labkit\s+import|import\s+labkit)\b", source, re.M))


def _literal(node: ast.AST | None) -> object:
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None


def _call_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
        return call.func.attr if call.func.value.id == "labkit" else None
    return None


def _slug(text: str) -> str:
    """'p50 latency (µs)' → 'p50_latency': a figure name from printed words."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    name = "_".join(words)[:40].strip("_") or "value"
    return name if name[0].isalpha() else f"n_{name}"[:40]


def _unique(name: str, taken: Container[str]) -> str:
    """``name``, or ``name_2``, ``name_3`` … (cut to 40 characters) when it is taken: two
    printed labels can share a slug ("… step number 0" and "… step number 1" cut at 40)."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        suffix = f"_{n}"
        candidate = name[: 40 - len(suffix)].rstrip("_") + suffix
    return candidate


def read_calls(source: str) -> Found:
    """The figures, set values and tables a labkit lab's source records with plain-string names."""
    found = Found()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return found
    doc = ast.get_docstring(tree)
    if doc:
        found.title = doc.strip().splitlines()[0].strip().rstrip(".")[:120] or None
    seen: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        kind = _call_name(node)
        if kind not in ("figure", "given", "table") or not node.args:
            continue
        name = _literal(node.args[0])
        if not isinstance(name, str) or name in seen or not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", name):
            continue
        keywords = {k.arg: _literal(k.value) for k in node.keywords if k.arg}
        if kind == "table":
            columns = _literal(node.args[1]) if len(node.args) > 1 else keywords.get("columns")
            if isinstance(columns, dict) and all(isinstance(v, str) for v in columns.values()):
                found.tables.append(FoundTable(name, {str(k): str(v) for k, v in columns.items()}))
                seen.add(name)
            continue
        unit = _literal(node.args[2]) if len(node.args) > 2 else keywords.get("unit")
        if not isinstance(unit, str) or unit not in units.UNITS:
            continue
        about = keywords.get("about")
        label = keywords.get("label")
        figure = FoundFigure(
            name,
            unit,
            about if isinstance(about, str) else name.replace("_", " "),
            label if isinstance(label, str) else None,
        )
        (found.given if kind == "given" else found.figures).append(figure)
        seen.add(name)
    return found


# ---- a lab that prints: its output, read as a person reads it --------------------------------

_FIGURE_LINE = re.compile(
    r"^(?P<lead>\s*)(?P<label>[A-Za-z][^:=\n]{0,60}?)\s*(?P<sep>[:=])\s*"
    r"(?P<number>[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(?P<unit>[^\s\d][^\s]*)?\s*$"
)
_UNIT_IN_HEADER = re.compile(r"^(?P<base>.+?)(?:[_ (\[](?P<unit>[A-Za-zµ/%]+)[)\]]?)$")
# A printed figure's name says its unit only as a suffix ('miss_pct') or in brackets after a
# space ('latency (ms)'): a word of the name is no unit ('variant B', 'worker(s)').
_UNIT_IN_NAME = re.compile(r"_([A-Za-zµ/%]+)$|\s[(\[]([A-Za-zµ/%]+)[)\]]$")


# How labs spell units the engine writes otherwise: a Greek mu, and a share as a suffix
# ("hit_pct", "miss (percent)").
_SPELLED = {"μs": "µs", "pct": "%", "percent": "%"}


def _unit_of(token: str | None) -> str | None:
    if not token:
        return None
    token = token.strip("()[],.;")
    token = _SPELLED.get(token, token)
    return token if token in units.UNITS else None


def _figure_pattern(lead: str, label: str, sep: str, unit: str | None) -> str:
    """A pattern for exactly this line: its label and separator, the number captured."""
    unit_part = rf"\s*{re.escape(unit)}" if unit else ""
    return rf"^{re.escape(lead)}{re.escape(label)}\s*{re.escape(sep)}\s*([-+0-9.,eE]+){unit_part}\s*$"


def _header_columns(tokens: list[str], first_row: list[str]) -> dict[str, str]:
    """Column names and units from a printed header ('depth  p50_us  p99(ms)')."""
    columns: dict[str, str] = {}
    for token, cell in zip(tokens, first_row):
        match = _UNIT_IN_HEADER.match(token)
        unit = _unit_of(match.group("unit")) if match and match.group("unit") else None
        base = match.group("base") if match and unit else token
        try:
            output.parse_number(cell)
            kind = unit or "count"
        except ValueError:
            kind = output.TEXT
        columns[_unique(_slug(base), columns)] = kind
    return columns


def read_output(transcript: str) -> Found:
    """The figures and tables a lab's printed output holds, each with a pattern that matches
    exactly its line (lines that repeat are left out: no pattern could pick one)."""
    lines = output.lines_of(transcript)
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    found = Found()
    names: set[str] = set()
    for line in lines:
        match = _FIGURE_LINE.match(line)
        if not match or counts[line] > 1 or len(found.figures) >= MAX_FOUND:
            continue
        raw_unit = match.group("unit")
        unit = _unit_of(raw_unit)
        if raw_unit and unit is None:  # a word after the number: not a unit the engine can type
            if len(found.unknown_units) < MAX_FOUND:
                found.unknown_units.append(line.strip()[:80])
            continue
        if unit is None:  # the unit in the name: 'miss_pct: 5', 'latency (ms): 12'
            named = _UNIT_IN_NAME.search(match.group("label").strip())
            unit = _unit_of(named.group(1) or named.group(2)) if named else None
        number = match.group("number")
        if unit is None and not re.fullmatch(r"[-+]?[\d,]+", number):
            continue  # a fraction with no unit: a ratio? a share? not guessed
        label = match.group("label").strip()
        name = _unique(_slug(label), names)
        names.add(name)
        pattern = _figure_pattern(match.group("lead"), match.group("label"), match.group("sep"), raw_unit)
        found.figures.append(
            FoundFigure(name, unit or "count", f"{label}, as the lab prints it", label[:40].rstrip(), pattern)
        )
    found.tables = _tables(lines, counts, names)
    return found


_HEADER_CELL = re.compile(r"[A-Za-z][\w()\[\]/%µ. -]*")  # a column's name: words, a unit in brackets


def _header_cells(header: str, first_row: str) -> list[str] | None:
    """The column names of a printed header, split the way its first row splits under the
    build's reader (output.split_row: on '|', on runs of two or more spaces, or on spaces), so a
    column named in two words ('p99 latency') and a row labelled in two ('token bucket') are
    each one cell; None for a line that is no header of that row."""
    text = header.strip()
    ways = [text.strip("|").split("|")] if "|" in text else []
    ways += [re.split(r"\s{2,}", text), text.split()]
    for way in ways:
        names = [cell.strip() for cell in way]
        if len(names) >= 2 and all(_HEADER_CELL.fullmatch(n) for n in names):
            if len(output.split_row(first_row, len(names))) == len(names):
                return names
    return None


def _tables(lines: list[str], counts: dict[str, int], taken: set[str]) -> list[FoundTable]:
    tables = []
    i = 0
    while i < len(lines) - 2:
        j = i + 1
        while j < len(lines) and re.fullmatch(r"[\s\-=+|:_]+", lines[j] or "x"):
            j += 1  # a ruler under the header
        names = _header_cells(lines[i], lines[j]) if counts[lines[i]] == 1 and j < len(lines) else None
        if names is None:
            i += 1
            continue
        rows = []
        while j < len(lines) and lines[j].strip():
            cells = output.split_row(lines[j], len(names))
            if len(cells) != len(names):
                break
            rows.append(cells)
            j += 1
        numeric = rows and all(_all_numbers(r[1:]) for r in rows)
        if len(rows) >= 2 and numeric:
            columns = _header_columns(names, rows[0])
            name = _unique(_slug("_".join(list(columns)[:2]) + "_table"), taken)
            taken.add(name)
            pattern = r"^\s*" + r"\s+".join(re.escape(word) for word in lines[i].split()) + r"\s*$"
            spans = {
                column: (min(values), max(values))
                for k, (column, kind) in enumerate(columns.items())
                if kind != output.TEXT and (values := [output.parse_number(r[k]) for r in rows])
            }
            tables.append(FoundTable(name, columns, pattern, len(rows), spans))
            i = j
        else:
            i += 1
    return tables


def _all_numbers(cells: list[str]) -> bool:
    try:
        for cell in cells:
            output.parse_number(cell)
    except ValueError:
        return False
    return True
