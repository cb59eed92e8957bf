"""Charts declared in a spec: each draws what it names, and its alt text says the plotted numbers.

The results are written by hand here (two measured figures, a set value, a table), so each
expected sentence is worked out from them, not read back from the chart."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import charts
from engine.errors import UserError

SOURCE = "measured on Test box"


def fig(value: float, unit: str, label: str, source: str = SOURCE) -> dict:
    return {"value": value, "unit": unit, "label": label, "about": label, "source": source}


def results_with(*declared: dict) -> dict:
    return {
        "day": 9,
        "title": "T",
        "inputs": {"charts": list(declared)},
        "lab": {
            "figures": {"rr": fig(4, "count", "Round robin"), "lc": fig(1, "count", "Least conn")},
            "tables": {
                "depth": {
                    "columns": [["depth", "count"], ["p50", "us"], ["p99", "ms"]],
                    "rows": [[1, 4.5, 0.009], [2, 7.9, 0.0155], [4, 12.25, 0.0301]],
                    "source": SOURCE,
                },
                "by_strategy": {
                    "columns": [["strategy", "text"], ["errors", "count"]],
                    "rows": [["round robin", 4], ["least conn", 1]],
                    "source": SOURCE,
                },
            },
        },
        "given": {"clients": fig(20, "count", "Clients", "set")},
    }


def draw(entry: dict, tmp_path: Path) -> str:
    name = next(iter(entry.values()))["name"]
    return charts.draw(name, results_with(entry), tmp_path).alt_text


def test_a_bar_chart_says_each_bar(tmp_path):
    alt = draw(
        {"bar": {"name": "errors", "title": "Failed requests", "figures": ["rr", "lc", "clients"]}}, tmp_path
    )
    assert alt == (
        "Bar chart: Failed requests. Round robin: 4. Least conn: 1. Clients: 20. "
        "Source: Measured on Test box; Set."
    )
    assert (tmp_path / "errors.png").is_file() and (tmp_path / "errors.alt.txt").read_text() == alt + "\n"


def test_a_line_chart_converts_its_columns_to_one_unit(tmp_path):
    """p99 is recorded in ms and p50 in µs: both are plotted, and said, in the first y column's."""
    alt = draw(
        {
            "line": {
                "name": "by_depth",
                "title": "By depth",
                "table": "depth",
                "x": "depth",
                "y": ["p50", "p99"],
            }
        },
        tmp_path,
    )
    assert "p50: 4.5 µs at depth 1, 7.9 µs at depth 2, 12 µs at depth 4." in alt
    assert "p99: 9.0 µs at depth 1, 16 µs at depth 2, 30 µs at depth 4." in alt


def test_a_grouped_bar_chart_names_each_group(tmp_path):
    alt = draw(
        {
            "grouped_bar": {
                "name": "s",
                "title": "Errors",
                "table": "by_strategy",
                "x": "strategy",
                "y": ["errors"],
            }
        },
        tmp_path,
    )
    assert "round robin: errors 4. least conn: errors 1." in alt


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        (
            {"bar": {"name": "e", "title": "E", "figures": ["rr", "nope"]}},
            "charts.e.figures.1",
            "no figure or set value 'nope'",
        ),
        (
            {"line": {"name": "l", "title": "L", "table": "nope", "x": "depth", "y": ["p50"]}},
            "charts.l.table",
            "no table 'nope'",
        ),
        (
            {"line": {"name": "l", "title": "L", "table": "depth", "x": "depth", "y": ["p90"]}},
            "charts.l",
            "no column 'p90'",
        ),
        (
            {"line": {"name": "l", "title": "L", "table": "by_strategy", "x": "strategy", "y": ["errors"]}},
            "charts.l.x",
            "numbers along x",
        ),
    ],
)
def test_a_name_the_results_do_not_have_is_one_error_naming_the_field(entry, field, words, tmp_path):
    with pytest.raises(UserError) as err:
        draw(entry, tmp_path)
    assert err.value.field == field and words in err.value.message


def _wide(columns: int, rows: int) -> dict:
    """A table of `rows` sizes and `columns` series, series k at size n being (k + 1) · n µs."""
    names = [f"series_{k}" for k in range(columns)]
    return {
        "columns": [["size", "count"], *([name, "us"] for name in names)],
        "rows": [[n, *((k + 1) * n for k in range(columns))] for n in range(1, rows + 1)],
        "source": SOURCE,
    }


def _drawn_alt(table: dict, columns: int, tmp_path: Path) -> str:
    """The alt text a line chart of ``table`` is drawn with (its figure built, not rasterised:
    the text is the point here)."""
    from engine.charts import style

    results = results_with()
    results["lab"]["tables"]["wide"] = table
    entry = {"line": {"name": "w", "title": "Wide", "table": "wide", "x": "size", "y": []}}
    entry["line"]["y"] = [f"series_{k}" for k in range(columns)]
    results["inputs"]["charts"] = [entry]
    with style.theme():
        return charts.figure("w", "x", results)[1]


def test_a_long_series_is_said_by_its_lowest_and_highest_and_the_source_stays(tmp_path):
    """Twelve points of two series do not fit 250 characters: each series is said in brief."""
    alt = _drawn_alt(_wide(2, 12), 2, tmp_path)
    assert alt == (
        "Line chart: Wide. series_0: lowest 1.0 µs at size 1, highest 12 µs at size 12. "
        "series_1: lowest 2.0 µs at size 1, highest 24 µs at size 12. Source: Measured on Test box."
    )


def test_series_past_the_briefs_room_are_still_named(tmp_path):
    """Six series: the briefs that fit, then the others by name; the source always last."""
    alt = _drawn_alt(_wide(6, 12), 6, tmp_path)
    assert len(alt) <= 250 and alt.endswith("Source: Measured on Test box.")
    assert "series_0: lowest 1.0 µs at size 1, highest 12 µs at size 12." in alt
    shown = alt.split("Also shown: ")[1].split(".")[0].split(", ")
    briefed = [f"series_{k}" for k in range(6) if f"series_{k}: lowest" in alt]
    assert briefed + shown == [f"series_{k}" for k in range(6)]


def _tick_labels(entry: dict, table: dict) -> tuple[list[str], list[str]]:
    """The x and y tick labels of a declared chart of ``table``, as drawn."""
    from engine.charts import style

    results = results_with()
    results["lab"]["tables"]["t"] = table
    results["inputs"]["charts"] = [entry]
    name = next(iter(entry.values()))["name"]
    with style.theme():
        fig, _ = charts.figure(name, "x", results)
        fig.canvas.draw()
    (ax,) = fig.axes
    shown = [t for t in ax.get_xticklabels() if t.get_text()]
    return [t.get_text() for t in shown], [t.get_text() for t in ax.get_yticklabels() if t.get_text()]


SIZES = {
    "columns": [["size", "count"], ["lookup", "us"]],
    "rows": [[10, 0.5], [100, 0.75], [1_000, 2.5], [5_000, 250_000]],
    "source": SOURCE,
}


def test_points_bunched_along_x_take_the_axis_ticks_and_spread_ones_a_tick_each():
    """10, 100, 1,000 and 5,000 on a linear axis: the first three are within 2% of the axis, so
    their labels would overlap; the axis's own ticks are used, written as the posts write
    numbers. On a log axis the same points are spread: a tick each, as the posts print them."""
    line = {"name": "l", "title": "L", "table": "t", "x": "size", "y": ["lookup"]}
    xs, ys = _tick_labels({"line": line}, SIZES)
    assert xs != ["10", "100", "1,000", "5,000"] and "1,000" in xs and "5,000" in xs
    assert all("e" not in label and "^" not in label for label in xs + ys)
    assert "250 ms" in ys or "200 ms" in ys  # a time axis: each tick in its own unit (250,000 µs)
    xs, _ = _tick_labels({"line": {**line, "log_x": True}}, SIZES)
    assert xs == ["10", "100", "1,000", "5,000"]


def test_a_value_axis_from_nanoseconds_to_milliseconds_is_written_in_units_and_stays_inside():
    """A lab's dict and list lookups, 34 ns to 5.4 ms on a log axis: in one unit the ticks would
    read 100 to 1,000,000 (ns) and the widest was cut at the picture's left edge. Each tick is
    written in its own unit (100 ns, 1 µs, … 1 ms), and every tick label and axis title lies
    inside the picture's margins."""
    from engine.charts import style
    from engine.charts.declared import MARGIN

    table = {
        "columns": [["size", "count"], ["dict", "ns"], ["list", "us"]],
        "rows": [[100, 34.0, 0.49], [10_000, 49.0, 46.0], [1_000_000, 1_200.0, 5_400.0]],
        "source": SOURCE,
    }
    entry = {"line": {"name": "l", "title": "L", "table": "t", "x": "size", "y": ["dict", "list"]}}
    entry["line"].update(log_x=True, log_y=True)
    xs, ys = _tick_labels(entry, table)
    assert {"100 ns", "1 µs", "10 µs", "100 µs", "1 ms"} <= set(ys)
    assert xs == ["100", "10,000", "1,000,000"]
    # on a linear axis the ticks fall at steps of 250 ns: each reads its own value, not a
    # measurement's rounding of it (1,250 ns is 1.25 µs, not "1.3 µs")
    linear = {
        "columns": [["size", "count"], ["dict", "ns"]],
        "rows": [[1, 100.0], [3, 1_900.0]],
        "source": SOURCE,
    }
    _, ys = _tick_labels(
        {"line": {"name": "l", "title": "L", "table": "t", "x": "size", "y": ["dict"]}}, linear
    )
    assert ys == ["0", "250 ns", "500 ns", "750 ns", "1 µs", "1.25 µs", "1.5 µs", "1.75 µs", "2 µs"]
    results = results_with()
    results["lab"]["tables"]["t"] = table
    results["inputs"]["charts"] = [entry]
    for size in ("x", "linkedin", "linkedin_portrait"):
        with style.theme():
            fig, _ = charts.figure("l", size, results)
            renderer = fig.canvas.get_renderer()
            (ax,) = fig.axes
            box = ax.get_tightbbox(renderer)
        inside = (MARGIN * fig.bbox.width - 0.5, (1 - MARGIN) * fig.bbox.width + 0.5)  # half a pixel
        assert inside[0] <= box.x0 and box.x1 <= inside[1], size


def test_a_scaffolded_line_chart_of_a_wide_table_takes_log_axes():
    """A lab printing sizes from 10 to 100,000 and lookups from 0.05 to 557 µs: both spans are
    over a hundredfold, so the chart it is given has log axes; a narrow span keeps linear ones."""
    from engine.scaffold import detect, drafts

    wide = "size  dict_us  list_us\n10  0.05  0.4\n1000  0.06  5.6\n100000  0.07  557\n"
    (chart,) = drafts.declared_charts(detect.read_output(wide))
    assert chart["line"]["log_x"] is True and chart["line"]["log_y"] is True
    narrow = "size  dict_us  list_us\n10  5  6\n20  5.5  7\n30  6  9\n"
    (chart,) = drafts.declared_charts(detect.read_output(narrow))
    assert "log_x" not in chart["line"] and "log_y" not in chart["line"]


def test_an_alt_text_stays_within_the_limit_whatever_its_source_and_series():
    """A source joined from many figures' sources, and forty series whose names alone do not
    fit: the text is still within the strictest limit, says its kind, some names and how many
    more, and where the numbers came from."""
    from engine.charts.declared import _alt
    from engine.platforms.registry import strictest_alt_limit

    briefs = [(f"series_{k}", f"series_{k}: lowest 1 at 1, highest 2 at 2.") for k in range(40)]
    long_source = "; ".join(f"Measured on machine {k}" for k in range(30))
    for source in ("Measured on Test box.", long_source):
        alt = _alt("Line", "t", [], briefs, source)
        assert len(alt) <= strictest_alt_limit() and alt.startswith("Line chart: t.") and "Source: " in alt
        assert "series_0" in alt and "more." in alt
