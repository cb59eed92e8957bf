"""Charts a day's spec declares, with no engine code: a bar per figure, grouped bars or lines
over one of the lab's tables.

``charts:`` in a spec takes registered chart names and, beside them, one-key mappings::

    charts:
      - terminal
      - bar: {name: errors, title: "Failed requests per strategy", figures: [rr_errors, lc_errors]}
      - grouped_bar: {name: by_strategy, title: "…", table: results, x: strategy, y: [p50, p99]}
      - line: {name: depth, title: "…", table: latency, x: depth, y: [p50], log_y: true}

Each declared chart's ``name`` is its file name (``errors.png``); it is drawn in the house
style at the platform's size, with the unit on the value axis, a where-from footer naming each
number's provenance ("measured on <machine>", "set") and alt text written from the plotted
numbers, and it can be placed on a carousel slide or attached to a post like any chart. The
names it reads (figures, a table, its columns) are checked against the day's results when the
build draws it: a lab's figures are only known once it has run.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Discriminator, Field, Tag

from engine import numbers, quotable, units
from engine.charts import style
from engine.charts.registry import CHARTS, Chart
from engine.charts.style import FONT, OKABE_ITO, Size
from engine.errors import UserError
from engine.platforms import registry
from engine.validation import Name, Strict

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# One line of text, drawn as written ("$" and "\\" too: the theme turns mathtext off).
ChartTitle = Annotated[str, Field(min_length=1, max_length=120, pattern=r"^[^\x00-\x1f\x7f-\x9f]*$")]
MAX_BARS = 12
MAX_SERIES = 6
COLOURS = [OKABE_ITO[k] for k in ("blue", "vermillion", "green", "orange", "purple", "sky_blue")]


class BarChart(Strict):
    """One bar per named figure (a lab's figures, the values the person set)."""

    name: Name
    title: ChartTitle
    figures: Annotated[list[Name], Field(min_length=1, max_length=MAX_BARS)]


class TableChart(Strict):
    """Columns of one of the lab's tables: ``x`` the column along the bottom, ``y`` the ones drawn."""

    name: Name
    title: ChartTitle
    table: Name
    x: Name
    y: Annotated[list[Name], Field(min_length=1, max_length=MAX_SERIES)]


class LineChart(TableChart):
    log_x: bool = False
    log_y: bool = False


class BarEntry(Strict):
    bar: BarChart


class GroupedBarEntry(Strict):
    grouped_bar: TableChart


class LineEntry(Strict):
    line: LineChart


KINDS = ("bar", "grouped_bar", "line")


def _kind(value: Any) -> str | None:
    """Which declared kind a mapping is: its one key (None lets pydantic name the choices)."""
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        return key if key in KINDS else None
    return getattr(value, "kind", None)


Declared = Annotated[
    Annotated[BarEntry, Tag("bar")]
    | Annotated[GroupedBarEntry, Tag("grouped_bar")]
    | Annotated[LineEntry, Tag("line")],
    Discriminator(_kind),
]


def check_shape(value: Any) -> Any:
    """A mapping in ``charts:`` is a declared chart: one key, the kind (a clear error otherwise,
    rather than the union's 'must be text')."""
    if isinstance(value, dict) and _kind(value) is None:
        keys = ", ".join(repr(k) for k in value) or "nothing"
        raise ValueError(f"a declared chart is one key, {', '.join(KINDS)}; got {keys}")
    return value


def spec_of(entry: Any) -> tuple[str, BarChart | TableChart]:
    """(kind, its settings) of a declared chart, as validated or as results.json keeps it."""
    if isinstance(entry, BarEntry):
        return "bar", entry.bar
    if isinstance(entry, GroupedBarEntry):
        return "grouped_bar", entry.grouped_bar
    if isinstance(entry, LineEntry):
        return "line", entry.line
    kind = _kind(entry)
    if kind == "bar":
        return "bar", BarChart.model_validate(entry[kind])
    if kind == "line":
        return "line", LineChart.model_validate(entry[kind])
    return str(kind), TableChart.model_validate(entry[kind])


def names_in(spec_data: Any) -> list[str]:
    """The names of the charts a spec's raw data declares (before it is validated)."""
    entries = spec_data.get("charts") if isinstance(spec_data, dict) else None
    found = []
    for entry in entries if isinstance(entries, list) else []:
        kind = _kind(entry)
        settings = entry.get(kind) if kind is not None else None
        if isinstance(settings, dict) and isinstance(settings.get("name"), str):
            found.append(settings["name"])
    return found


def entry_name(entry: Any) -> str:
    """The name a ``charts:`` entry draws under: a registered chart's own, a declared one's
    ``name`` (its file name)."""
    return entry if isinstance(entry, str) else name_of(entry)


def name_of(entry: Any) -> str:
    return spec_of(entry)[1].name


def chart(entry: Any) -> Chart:
    """The Chart that draws a declared entry; its identity is the declaration itself, so a
    changed declaration is a different drawing."""
    kind, settings = spec_of(entry)
    draw = _DRAW[kind]

    def drawn(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
        return draw(settings, results, size)

    digest = hashlib.sha256(json.dumps([kind, settings.model_dump()], sort_keys=True).encode()).hexdigest()
    drawn.__module__ = __name__
    drawn.__qualname__ = f"declared.{kind}.{digest[:16]}"
    return Chart(settings.name, drawn, needs=(), size="x")


# ---- what a declared chart reads ------------------------------------------------------------


def _field(settings: BarChart | TableChart) -> str:
    return f"charts.{settings.name}"


def _figures(settings: BarChart, results: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        figures = quotable.pick(results, list(settings.figures), "figures")
    except UserError as err:
        raise UserError(err.message, field=f"{_field(settings)}.{err.field}") from None
    dims = {units.unit(f["unit"]).dimension for f in figures}
    if len(dims) > 1:
        raise UserError(
            f"its figures are of different kinds ({', '.join(sorted(dims))}): one axis shows one unit",
            field=f"{_field(settings)}.figures",
        )
    return figures


def _table(settings: TableChart, results: dict[str, Any]) -> dict[str, Any]:
    tables = quotable.tables(results)
    table = tables.get(settings.table)
    if table is None:
        known = ", ".join(sorted(tables)) or "none: the lab recorded no table"
        raise UserError(f"no table {settings.table!r} (known: {known})", field=f"{_field(settings)}.table")
    columns = dict(table["columns"])
    for column in [settings.x, *settings.y]:
        if column not in columns:
            raise UserError(
                f"table {settings.table!r} has no column {column!r} (columns: {', '.join(columns)})",
                field=_field(settings),
            )
    y_units = {columns[c] for c in settings.y}
    if "text" in y_units:
        raise UserError("a column of labels cannot be drawn as values", field=f"{_field(settings)}.y")
    dims = {units.unit(u).dimension for u in y_units}
    if len(dims) > 1:
        raise UserError(
            f"its y columns are of different kinds ({', '.join(sorted(dims))}): one axis shows one unit",
            field=f"{_field(settings)}.y",
        )
    return table


def axis_unit(unit: str) -> str:
    """How an axis names a unit: '(µs)'; a count or a plain ratio needs none."""
    shown = "µs" if unit == "us" else unit
    return "" if units.unit(unit).dimension == "count" else f" ({shown})"


def value_text(value: float, unit: str) -> str:
    """One plotted value as the posts print it (engine.units)."""
    return numbers.figure_text({"value": value, "unit": unit})


def _footer(sources: list[str]) -> str:
    return "; ".join(dict.fromkeys(s[:1].upper() + s[1:] for s in sources)) + "."


def _alt(kind: str, title: str, parts: list[str], briefs: list[tuple[str, str]], source: str) -> str:
    """The chart's alt text, within the strictest platform's limit: what it shows, its numbers,
    and where they came from. The source is always said (a lab's numbers never go out without
    it), and so is every series or bar where the limit allows: each point where they all fit
    (``parts``), else each series in brief (``briefs``: its name and its lowest and highest),
    else as many briefs as fit and the names of the rest."""
    limit = registry.strictest_alt_limit()
    tail = f"Source: {source}"
    if len(tail) > limit // 2:  # sources joined from many figures: cut, the kind still said
        tail = tail[: limit // 2 - 1] + "…"
    room = limit - len(tail) - 1
    head = f"{kind} chart: {title}."
    if len(head) > room:  # a title as long as the limit: cut, the source still said
        head = head[: room - 1] + "…"
    candidates = [[*parts], [brief for _, brief in briefs]]
    for shown in range(len(briefs) - 1, -1, -1):
        rest = ", ".join(name for name, _ in briefs[shown:])
        candidates.append([*(brief for _, brief in briefs[:shown]), f"Also shown: {rest}."])
    for body in (c for c in candidates if c):  # a chart says at least its series or bars
        text = " ".join([head, *body])
        if len(text) <= room:
            return f"{text} {tail}"
    # Not even the names fit: as many as do, and how many more.
    names = [name for name, _ in briefs]
    for count in range(len(names) - 1, 0, -1):
        text = f"{head} Shown: {', '.join(names[:count])} and {len(names) - count} more."
        if len(text) <= room:
            return f"{text} {tail}"
    return f"{head} {tail}"


def _extremes(name: str, values: list[float], places: list[str], unit: str) -> tuple[str, str]:
    """One series in brief, with its name: 'p50: lowest 4.5 µs at depth 1, highest 12 µs at
    depth 4.'"""
    low = min(range(len(values)), key=values.__getitem__)
    high = max(range(len(values)), key=values.__getitem__)
    return name, (
        f"{name}: lowest {value_text(values[low], unit)}{places[low]}, "
        f"highest {value_text(values[high], unit)}{places[high]}."
    )


# ---- drawing ----------------------------------------------------------------------------------


def _axes(fig: Figure, settings: BarChart | TableChart) -> Any:
    portrait = style.size_of(fig).portrait
    ax = fig.add_axes((0.1, 0.2, 0.86, 0.62) if not portrait else (0.14, 0.16, 0.8, 0.68))
    ax.grid(True, axis="y", color=style.LIGHT_GREY)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    style.heading(fig, settings.title)
    return ax


def draw_bar(
    settings: BarChart | TableChart, results: dict[str, Any], size: Size | None
) -> tuple[Figure, str]:
    assert isinstance(settings, BarChart)
    figures = _figures(settings, results)
    unit = figures[0]["unit"]
    values = [units.convert(float(f["value"]), f["unit"], unit) for f in figures]
    labels = [str(f.get("label") or name) for f, name in zip(figures, settings.figures)]
    fig = style.new_figure(size or "x")
    ax = _axes(fig, settings)
    positions = list(range(len(values)))
    ax.bar(positions, values, color=COLOURS[0], width=0.62)
    ax.set_xticks(positions, labels, fontsize=FONT["small"])
    ax.set_ylim(0, max(max(values), 0) * 1.18 or 1)
    ax.set_ylabel(f"value{_value_ticks(ax.yaxis, unit)}".strip())
    texts = [value_text(v, unit) for v in values]
    for x, v, text in zip(positions, values, texts):
        ax.annotate(
            text,
            (x, v),
            xytext=(0, 5),
            textcoords="offset points",
            ha="center",
            fontsize=FONT["base"],
            fontweight="bold",
        )
    source = _footer([f["source"] for f in figures])
    style.source_note(fig, source)
    _keep_inside(fig, ax)
    parts = [f"{label}: {text}." for label, text in zip(labels, texts)]
    return fig, _alt("Bar", settings.title, parts, list(zip(labels, parts)), source)


def _series(settings: TableChart, table: dict[str, Any]) -> tuple[list[Any], dict[str, list[float]], str]:
    units_of = dict(table["columns"])
    columns = list(units_of)
    xi = columns.index(settings.x)
    unit = units_of[settings.y[0]]
    xs = [row[xi] for row in table["rows"]]
    ys = {
        c: [units.convert(float(row[columns.index(c)]), units_of[c], unit) for row in table["rows"]]
        for c in settings.y
    }
    return xs, ys, unit


def _x_text(x: Any, unit: str) -> str:
    return str(x) if unit == "text" else value_text(float(x), unit)


def draw_grouped_bar(
    settings: BarChart | TableChart, results: dict[str, Any], size: Size | None
) -> tuple[Figure, str]:
    assert isinstance(settings, TableChart)
    table = _table(settings, results)
    xs, ys, unit = _series(settings, table)
    x_unit = dict(table["columns"])[settings.x]
    fig = style.new_figure(size or "x")
    ax = _axes(fig, settings)
    width = 0.8 / len(ys)
    groups = list(range(len(xs)))
    for k, (column, values) in enumerate(ys.items()):
        offset = (k - (len(ys) - 1) / 2) * width
        spots = [g + offset for g in groups]
        ax.bar(spots, values, width=width * 0.92, color=COLOURS[k % len(COLOURS)], label=column)
        for x, v in zip(spots, values):
            ax.annotate(
                value_text(v, unit),
                (x, v),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                fontsize=FONT["small"],
            )
    ax.set_xticks(groups, [_x_text(x, x_unit) for x in xs], fontsize=FONT["small"])
    ax.set_xlabel(settings.x + _point_unit(x_unit))
    top = max(max(v) for v in ys.values())
    ax.set_ylim(0, top * 1.15 if top > 0 else 1)
    ax.set_ylabel(_value_label(settings, ys, _value_ticks(ax.yaxis, unit)))
    if len(ys) > 1:
        ax.legend(frameon=False, fontsize=FONT["small"], loc="upper left", ncols=min(len(ys), 3))
    source = _footer([table["source"]])
    style.source_note(fig, source)
    _keep_inside(fig, ax)
    parts = [
        f"{_x_text(x, x_unit)}: " + ", ".join(f"{c} {value_text(ys[c][i], unit)}" for c in ys) + "."
        for i, x in enumerate(xs)
    ]
    places = [f" ({_x_text(x, x_unit)})" for x in xs]
    briefs = [_extremes(c, vals, places, unit) for c, vals in ys.items()]
    return fig, _alt("Grouped bar", settings.title, parts, briefs, source)


def draw_line(
    settings: BarChart | TableChart, results: dict[str, Any], size: Size | None
) -> tuple[Figure, str]:
    assert isinstance(settings, LineChart)
    table = _table(settings, results)
    x_unit = dict(table["columns"])[settings.x]
    if x_unit == "text":
        raise UserError(
            "a line needs numbers along x, not labels: use grouped_bar", field=f"{_field(settings)}.x"
        )
    xs, ys, unit = _series(settings, table)
    order = sorted(range(len(xs)), key=lambda i: float(xs[i]))
    xs = [float(xs[i]) for i in order]
    ys = {c: [v[i] for i in order] for c, v in ys.items()}
    if settings.log_x and min(xs) <= 0 or settings.log_y and min(min(v) for v in ys.values()) <= 0:
        raise UserError("a log axis needs values above zero", field=_field(settings))
    fig = style.new_figure(size or "x")
    ax = _axes(fig, settings)
    ax.grid(True, axis="both", color=style.LIGHT_GREY)
    markers = style.VIEW_MARKERS
    for k, (column, values) in enumerate(ys.items()):
        ax.plot(
            xs,
            values,
            color=COLOURS[k % len(COLOURS)],
            linewidth=3,
            marker=markers[k % len(markers)],
            markersize=7,
            label=column,
        )
    if settings.log_x:
        ax.set_xscale("log")
    if len(xs) <= MAX_BARS and _apart(xs, settings.log_x):
        # few points, far enough apart: a tick at each, labelled as the posts print it
        ax.set_xticks(xs, [value_text(x, x_unit) for x in xs])
        ax.minorticks_off()
        ax.set_xlabel(settings.x + _point_unit(x_unit))
    else:
        ax.set_xlabel(settings.x + _value_ticks(ax.xaxis, x_unit))
    if settings.log_y:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_ylabel(_value_label(settings, ys, _value_ticks(ax.yaxis, unit)))
    if len(ys) > 1:
        ax.legend(frameon=False, fontsize=FONT["small"], loc="best")
    source = _footer([table["source"]])
    style.source_note(fig, source)
    _keep_inside(fig, ax)
    parts = [
        f"{c}: "
        + ", ".join(f"{value_text(v, unit)} at {settings.x} {_x_text(x, x_unit)}" for x, v in zip(xs, vals))
        + "."
        for c, vals in ys.items()
    ]
    places = [f" at {settings.x} {_x_text(x, x_unit)}" for x in xs]
    briefs = [_extremes(c, vals, places, unit) for c, vals in ys.items()]
    return fig, _alt("Line", settings.title, parts, briefs, source)


# A tick label is about 7% of the axis wide (100,000 at the small size on an X chart): points
# closer than that along x are labelled by the axis's own ticks, not one each.
MIN_TICK_GAP = 0.08


def _apart(xs: list[float], log: bool) -> bool:
    """Whether the sorted points along x are far enough apart for a labelled tick at each."""
    places = [math.log10(x) for x in xs] if log else xs
    span = places[-1] - places[0]
    return span == 0 or min(b - a for a, b in zip(places, places[1:])) >= MIN_TICK_GAP * span


def _plain_ticks(axis: Any) -> None:
    """The axis's own tick labels written as the posts write numbers (200,000; 0.25), not as
    matplotlib does (200000, 2.5e-01, 10^3)."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _pos: numbers.precise(value)))


def _value_ticks(axis: Any, unit: str) -> str:
    """Label the axis's own ticks and return what its title adds for the unit. A unit that
    scales gives each tick its own, as the posts write values (100 ns, 10 µs, 1.5 ms): short
    labels where one unit would need 1,000,000 ns, and nothing to add. Any other unit's ticks
    are plain numbers (200,000; 0.25) and the title names it: ' (%)', or nothing for a count."""
    if not numbers.scales(unit):
        _plain_ticks(axis)
        return axis_unit(unit)
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(
        FuncFormatter(lambda value, _pos: numbers.tick_text(value, unit) if value else "0")
    )
    return ""


def _point_unit(unit: str) -> str:
    """What an axis title adds for a unit when each point's tick is written as the posts write
    it (value_text): nothing for a unit that scales, whose ticks say it, else its name."""
    return "" if unit == "text" or numbers.scales(unit) else axis_unit(unit)


def _value_label(settings: TableChart, ys: dict[str, list[float]], unit_title: str) -> str:
    """The value axis's title: the one series' name, or 'value' beside a legend of several."""
    return (f"value{unit_title}" if len(ys) > 1 else settings.y[0] + unit_title).strip()


def _keep_inside(fig: Figure, ax: Any) -> None:
    """Narrow the plot until its tick labels and axis titles sit inside the picture's margins:
    the value axis's widest label (1,000,000) must not be cut at the left edge, nor the last
    point's label at the right."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg (style.new_figure)
    box, picture = ax.get_tightbbox(renderer), fig.bbox.width
    left = max(0.0, MARGIN * picture - box.x0) / picture
    right = max(0.0, box.x1 - (1 - MARGIN) * picture) / picture
    if left or right:
        x0, y0, width, height = ax.get_position().bounds
        ax.set_position((x0 + left, y0, width - left - right, height))


MARGIN = 0.012  # of the picture's width, as its heading and source line keep


_DRAW = {"bar": draw_bar, "grouped_bar": draw_grouped_bar, "line": draw_line}


# ---- finding a chart by name -------------------------------------------------------------


def declared_entries(results: dict[str, Any]) -> list[Any]:
    """The charts the day's spec declares (engine.charts.declared), as results keep them."""
    return [c for c in (results.get("inputs") or {}).get("charts", []) if isinstance(c, dict)]


def resolve(name: str, results: dict[str, Any]) -> Chart:
    """Chart ``name``: a registered one, or one the day's spec declares."""
    found = CHARTS.find(name)
    if found is not None:
        return found
    for entry in declared_entries(results):
        if name_of(entry) == name:
            return chart(entry)
    raise KeyError(f"unknown chart {name!r}; known: {', '.join(CHARTS.names())}")
