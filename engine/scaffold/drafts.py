"""The first spec and templates of a new day, written from what its lab reports.

They are real, not placeholders: the spec validates, the templates quote every figure, set value
and table the day has through the engine's filters (no number is typed), and the day builds and
passes every platform check once its lab has run. Where the person's own voice belongs (the hook,
what surprised them, the lesson) a Jinja comment says so: comments never reach a post.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from engine import units
from engine.charts import declared, registry
from engine.scaffold.detect import Found, FoundFigure, FoundTable

VOICE = "{# YOUR VOICE: %s #}"
DEFAULT_TAGS = ["SystemDesign", "LearningInPublic", "BuildInPublic"]


def _voice(text: str) -> str:
    return VOICE % text


def declared_charts(found: Found) -> list[dict[str, Any]]:
    """A chart per table (lines over a numeric first column, grouped bars over labels), and a
    bar chart of the figures that share the commonest kind of unit, when there are two or more."""
    charts: list[dict[str, Any]] = []
    for table in found.tables:
        columns = list(table.columns.items())
        x, x_unit = columns[0]
        ys = [c for c, u in columns[1:] if u != "text"][:6]
        if not ys:
            continue
        y_dims = {units.unit(table.columns[c]).dimension for c in ys}
        if len(y_dims) > 1:
            ys = [
                c
                for c in ys
                if units.unit(table.columns[c]).dimension == units.unit(table.columns[ys[0]]).dimension
            ]
        kind = "grouped_bar" if x_unit == "text" or table.rows < 3 else "line"
        title = f"{', '.join(ys)} by {x}"
        entry: dict[str, Any] = {
            "name": _chart_name(table.name, charts),
            "title": title,
            "table": table.name,
            "x": x,
            "y": ys,
        }
        if kind == "line":
            if _wide([table.spans.get(x)]):
                entry["log_x"] = True
            if _wide([table.spans.get(c) for c in ys]):
                entry["log_y"] = True
        charts.append({kind: entry})
    by_dim: dict[str, list[FoundFigure]] = {}
    for fig in found.figures:
        by_dim.setdefault(units.unit(fig.unit).dimension, []).append(fig)
    group = max(by_dim.values(), key=len, default=[])
    if len(group) >= 2:
        charts.append(
            {
                "bar": {
                    "name": _chart_name("figures", charts),
                    "title": "What the lab measured",
                    "figures": [f.name for f in group[:12]],
                }
            }
        )
    return charts


# Values spanning this many times from lowest to highest go on a log axis: on a linear one the
# low end is squeezed into the first tick (10, 100 and 1,000 in the first fiftieth of 100,000).
WIDE_SPAN = 100


def _wide(spans: list[tuple[float, float] | None]) -> bool:
    """Whether printed values (lowest, highest) of one axis span WIDE_SPAN times or more, all
    above zero (a log axis has no zero). Spans not read (a labkit lab's table): no."""
    if not spans or any(span is None for span in spans):
        return False
    low = min(span[0] for span in spans if span is not None)
    high = max(span[1] for span in spans if span is not None)
    return low > 0 and high >= WIDE_SPAN * low


def _chart_name(base: str, charts: list[dict[str, Any]]) -> str:
    taken = {declared.entry_name(c) for c in charts} | set(registry.names())
    # No digits: the name is also a carousel section's heading in a template, where a digit
    # reads as a typed number.
    name = re.sub(r"_+", "_", re.sub(r"\d", "", f"{base}_chart")).strip("_")[:40]
    while name in taken:
        name = f"{name[:34]}_again"
    return name


def spec_data(
    day: int, title: str, found: Found, *, script: str, like: dict[str, Any] | None
) -> dict[str, Any]:
    """The new day's spec as YAML data. Series and repository follow the latest existing day
    (``like``), so a new day joins the same series."""
    series = (like or {}).get("series") or {"name": "60 days of system design", "length": 60}
    lab: dict[str, Any] = {"script": script, "timeout_s": 120}
    printed = [f for f in found.figures if f.pattern]
    if printed:
        lab["figures"] = {
            f.name: {
                k: v
                for k, v in (
                    ("unit", f.unit),
                    ("about", f.about),
                    ("label", f.label),
                    ("from_output", f.pattern),
                )
                if v
            }
            for f in printed
        }
    tables = [t for t in found.tables if t.pattern]
    if tables:
        lab["tables"] = {t.name: {"columns": dict(t.columns), "from_output": t.pattern} for t in tables}
    listed = ["figures_table"] if found.figures or found.given else []  # a table alone has none
    charts: list[Any] = ["terminal", *listed, *declared_charts(found)]
    spec: dict[str, Any] = {
        "day": day,
        "series": series,
        "title": title,
        "repository": (like or {}).get("repository") or "github.com/you/system-design-60-days",
        "hashtags": list(DEFAULT_TAGS),
        "lab": lab,
        "charts": charts,
        "linkedin_image": "terminal",
        "measured": "latest",
        "carousel": {"slides": ["cover", *({"chart": declared.entry_name(c)} for c in charts), "closing"]},
    }
    return spec


def spec_yaml(data: dict[str, Any], lab_name: str, printed: bool) -> str:
    how = (
        "Its figures are read from what it prints (from_output: one line each);"
        if printed
        else "It records its figures with labkit, described where it measures them;"
    )
    head = (
        f"# Day {data['day']}: scaffolded from the lab in {lab_name}/.\n"
        f"# {how} `make lab-day{data['day']:02d}`\n"
        f"# runs it once and keeps days/day{data['day']:02d}.measured/<machine>.json, which builds read.\n"
    )
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


# ---- the templates ----------------------------------------------------------------------------


def _figure_lines(found: Found, *, prefix: str = "") -> list[str]:
    lines = [f"{prefix}{{{{ f.{f.name}.label }}}}: {{{{ f.{f.name} | figure }}}}" for f in found.figures]
    lines += [
        f"{prefix}{{{{ given.{g.name}.label }}}}: {{{{ given.{g.name} | figure }}}} (set)"
        for g in found.given
    ]
    return lines


# A table of up to QUOTED_ROWS rows is quoted whole; a longer one by its first and last ENDS
# rows around an ellipsis: the lab's sweep may print a hundred rows, and the post must stay under
# LinkedIn's 3,000 characters (the whole table is on the review page and in the screenshot).
QUOTED_ROWS = 8
ENDS = 3


def _cell(column: str, unit: str | None) -> str:
    """A table row's cell as a template quotes it: a label as it is, a number through the
    figure filter."""
    return f"{{{{ row.{column} }}}}" if unit == "text" else f"{{{{ row.{column} | figure }}}}"


def _table_block(table: FoundTable) -> list[str]:
    cells = " · ".join(_cell(c, unit) for c, unit in table.columns.items())
    return [
        f"{{% set rows = lab.tables.{table.name}.records %}}",
        f"{{% for row in (rows if rows | length <= {QUOTED_ROWS} else rows[:{ENDS}]) %}}",
        cells,
        "{% endfor %}",
        f"{{% if rows | length > {QUOTED_ROWS} %}}",
        "…",
        f"{{% for row in rows[-{ENDS}:] %}}",
        cells,
        "{% endfor %}",
        "{% endif %}",
    ]


def linkedin(found: Found) -> str:
    out = [
        '{% import "_macros.j2" as m %}',
        "{% set f = lab.figures %}",
        _voice("the hook: one or two sentences on why this matters to someone building systems."),
        "{{ m.day_line(day, series) }}: {{ title }}.",
        "",
        _voice("what the lab does, in a sentence or two."),
        "I wrote a small lab and ran it on {{ lab.machine.name }}. What it measured:",
        "",
        *_figure_lines(found),
    ]
    for table in found.tables:
        # The column names come from results: a name such as p50 is no number typed here.
        heading = f"{{% for c in lab.tables.{table.name}.columns %}}{{{{ c[0] }}}}{{{{ ', ' if not loop.last }}}}{{% endfor %}}:"
        out += ["", heading, *_table_block(table)]
    out += [
        "",
        _voice("what surprised you, and the lesson you will carry into a design."),
        "",
        "Measured on {{ lab.machine.name }} ({{ lab.machine.os }}), {{ lab.when }}.",
        "",
        "Code is public: {{ repository }}",
        "",
        "{{ m.hashtags(hashtags) }}",
    ]
    return "\n".join(out) + "\n"


def x_thread(found: Found, charts: list[str]) -> str:
    """Plain paragraphs: the build packs them into posts under X's limit and numbers them."""
    out = [
        '{% import "_macros.j2" as m %}',
        "{% set f = lab.figures %}",
        _voice("the hook, short enough for the first post."),
        "{{ m.day_line(day, series) }}: {{ title }}.",
        '{% if "terminal" in charts %}',
        "",
        "![the lab's output](terminal.png)",
        "{% endif %}",
    ]
    lines = _figure_lines(found)
    out += ["", "Measured on {{ lab.machine.name }}" + (":" if lines else ".")]
    for line in lines:
        out += ["", line]
    for name in charts:
        if name == "terminal":
            continue  # attached to the first post
        out += [
            "",
            f'{{% if "{name}" in charts %}}',
            f"![a chart of the lab's numbers]({name}.png)",
            "{% endif %}",
        ]
    out += ["", _voice("the lesson, in one or two sentences."), "", "Code: {{ repository }}"]
    return "\n".join(out) + "\n"


def carousel(found: Found, slides: list[str], charts: list[Any]) -> str:
    """The slides' words: each chart slide headed by its chart's title and saying what the chart
    shows (a table's last row, the figures it compares), so the words match the picture."""
    out = [
        "{# The LinkedIn carousel's words: one \"## name\" section per slide of the spec's carousel.",
        "   The first line of a section is the slide's headline; the lines under it, its text. #}",
        "{% set f = lab.figures %}",
        "## cover",
        "{{ title }}.",
        "Measured on {{ lab.machine.name }}, {{ lab.when }}.",
    ]
    quotes = _figure_lines(found)
    declared_by_name = {declared.entry_name(c): c for c in charts if isinstance(c, dict)}
    units_of = {t.name: t.columns for t in found.tables}
    for i, name in enumerate(slides):
        entry = declared_by_name.get(name)
        settings = next(iter(entry.values())) if entry else None
        if settings is not None and "table" in settings:
            columns = units_of.get(settings["table"], {})
            out += [f"## {name}", settings["title"][:1].upper() + settings["title"][1:] + "."]
            out.append(_last_row(settings["table"], settings["x"], settings["y"], columns))
            continue
        headline = settings["title"] + "." if settings is not None else _slide_headline(name)
        out += [f"## {name}", headline]
        shown = quotes[i % len(quotes) :][:2] if quotes else []
        out.append("; ".join(shown) + "." if shown else "{{ lab.source }}.")
    out += ["## closing", "Run the lab on your machine.", "The code is public: {{ repository }}"]
    return "\n".join(out) + "\n"


def _last_row(table: str, x: str, ys: list[str], columns: dict[str, str]) -> str:
    """A sentence of a table chart's last point: 'At size 100,000: hit 61%, miss 39%.'"""
    values = ", ".join(f"{y} {_cell(y, columns.get(y))}" for y in ys)
    return f"{{% set row = lab.tables.{table}.records[-1] %}}At {x} {_cell(x, columns.get(x))}: {values}."


def _slide_headline(name: str) -> str:
    return {
        "terminal": "The lab's own output, as it ran.",
        "figures_table": "The figures, side by side.",
    }.get(name, re.sub(r"_chart$", "", name).replace("_", " ").capitalize() + ".")
