"""How numbers are written (engine.numbers), held to cases worked by hand: counts are integers,
a figure keeps the unit system it was recorded in, rounding goes half away from zero from the
number's decimal spelling, and a draft, the figures table and its alt text say the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine import numbers, pipeline
from engine.errors import UserError
from engine.lab import labfiles
from engine.render import posts

from helpers import syntax_tree

REPO = Path(__file__).resolve().parent.parent


def fig(value: float, unit: str) -> dict:
    return {"value": value, "unit": unit}


# ---- counts ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        (4, "4"),
        (4.0, "4"),  # a count recorded as a float is still a count
        (1234, "1,234"),
        (1234.0, "1,234"),
        (0, "0"),
        (-3.0, "-3"),
        (2.5, "2.5"),  # an average of counts: a measurement, one decimal below 10
        (12.5, "13"),  # from 10 a whole number, half rounded up as by hand
        (9.96, "10"),
        (np.int64(4), "4"),
        (np.float64(4.0), "4"),
    ],
)
def test_a_count_prints_as_an_integer(value: float, expected: str) -> None:
    assert numbers.count(value) == expected


@pytest.mark.parametrize(
    "figure, expected",
    [
        (fig(4.0, "count"), "4"),
        (fig(5, "count"), "5"),
        (fig(1234.0, "count"), "1,234"),
        (fig(2.5, "count"), "2.5"),
        (fig(2.0, "x"), "2x"),  # a whole ratio is a count of one in the other
        (fig(3.44, "x"), "3.4x"),
        (fig(0.9715, "x"), "0.97x"),  # below 1: two significant figures
        (fig(110.0, "x"), "110x"),
        (fig(5.0, "ops/s"), "5 ops/s"),  # its unit, not a bare "/s"
        (fig(1234.5, "ops/s"), "1,235 ops/s"),
        (fig(4, "B"), "4 B"),  # bytes in B are counted
        (fig(4.5, "B"), "4.5 B"),
        (fig(5, "%"), "5.0%"),  # a percentage is a measurement, not a count
        (fig(14.3, "%"), "14%"),
        (fig(99.95, "%"), "99.95%"),  # short of all never reads as 100%
        (fig(99.4, "%"), "99%"),
        (fig(100.0, "%"), "100%"),
    ],
)
def test_figures_of_counting_units_are_integers_when_whole(figure: dict, expected: str) -> None:
    assert numbers.figure_text(figure) == expected
    assert posts.figure(figure) == expected


def test_a_ratio_of_two_figures_is_a_count() -> None:
    assert posts.ratio(fig(200, "ns"), fig(100, "ns")) == "2"
    assert posts.ratio(fig(11, "us"), fig(100, "ns")) == "110"
    assert posts.ratio(fig(250, "ns"), fig(100, "ns")) == "2.5"


# ---- unit systems -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "figure, expected",
    [
        (fig(8.192, "MB"), "8.2 MB"),  # decimal stays decimal: not "7.8 MiB"
        (fig(8192, "kB"), "8.2 MB"),  # 8,192 kB = 8.192 MB
        (fig(999.5, "kB"), "1.0 MB"),  # "1,000 kB" would be the wrong unit
        (fig(2048, "GB"), "2.0 TB"),
        (fig(512, "B"), "512 B"),
        (fig(128, "MiB"), "128 MiB"),
        (fig(4096, "KiB"), "4.0 MiB"),
        (fig(1500, "GiB"), "1.5 TiB"),  # 1500 / 1024 = 1.46
        (fig(4, "KiB"), "4.0 KiB"),
        (fig(1700, "MiB/s"), "1.7 GiB/s"),
        (fig(1700, "MB/s"), "1.7 GB/s"),
        (fig(0.25, "GB/s"), "250 MB/s"),
    ],
)
def test_sizes_and_rates_stay_in_the_system_they_were_recorded_in(figure: dict, expected: str) -> None:
    assert numbers.figure_text(figure) == expected


def test_a_bare_byte_count_is_binary() -> None:
    assert posts.bytesize(8_192_000) == "7.8 MiB"  # 8,192,000 / 2**20 = 7.8125
    assert posts.bytesize(fig(8.192, "MB")) == "8.2 MB"
    with pytest.raises(ValueError, match="time figure"):
        posts.bytesize(fig(1, "ms"))


@pytest.mark.parametrize(
    "figure, expected",
    [
        (fig(0.9995, "us"), "1.0 µs"),
        (fig(999.7, "ns"), "1.0 µs"),  # 999.7 rounds to 1,000: a microsecond then
        (fig(999.4, "ns"), "999 ns"),
        (fig(92, "ns"), "92 ns"),
        (fig(1216.6105, "us"), "1.2 ms"),  # Day 1's 1 MiB read
        (fig(1, "ms"), "1.0 ms"),  # a time is a measurement even when whole
        (fig(7200, "s"), "7,200 s"),
        (fig(9.95, "ns"), "10 ns"),
        (fig(9.94, "ns"), "9.9 ns"),
        (fig(-3.25, "ms"), "-3.3 ms"),  # half away from zero, as for a positive value
        (fig(-999.7, "ns"), "-1.0 µs"),
        (fig(-0.04, "ns"), "-0.04 ns"),  # not zero, so not written as one
    ],
)
def test_time_scales_to_its_best_unit(figure: dict, expected: str) -> None:
    assert numbers.figure_text(figure) == expected


def test_plain_seconds_and_bytes() -> None:
    assert numbers.seconds_text(8.3e-08) == "83 ns"
    assert numbers.seconds_text(0.15) == "150 ms"
    assert numbers.bytes_text(2**28) == "256 MiB"
    assert posts.duration(0.9997e-6) == "1.0 µs"


# ---- asking for a unit ------------------------------------------------------------------------------


def test_a_template_may_ask_for_a_unit_of_the_same_dimension() -> None:
    disk = fig(1216.6105, "us")
    assert posts.figure(disk, "us") == "1,217 µs"
    assert posts.figure(disk, "ms") == "1.2 ms"
    assert posts.figure(disk, "ns") == "1,216,611 ns"  # 1,216,610.5 rounded half up
    assert posts.figure(disk, "s") == "0.0012 s"  # two significant figures, never "0 s"
    assert posts.figure(fig(8.192, "MB"), "MiB") == "7.8 MiB"  # 8,192,000 / 1,048,576 = 7.8125
    assert posts.figure(fig(8.192, "MB"), "kB") == "8,192 kB"
    assert posts.figure(fig(4.0, "count"), "count") == "4"
    assert posts.duration(fig(1, "ms"), "us") == "1,000 µs"
    assert posts.FILTERS["figure"](disk, as_unit="us") == "1,217 µs"  # by name, as Jinja passes it
    with pytest.raises(ValueError, match="us is a time, not a bytes like MiB"):
        posts.figure(disk, "MiB")
    with pytest.raises(ValueError, match="unknown unit 'parsecs'"):
        posts.figure(disk, "parsecs")


def test_a_template_asking_across_dimensions_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "day02").mkdir()
    (tmp_path / "day02" / "post.md.j2").write_text('{{ f | figure("us") }} and {{ f | figure("MiB") }}\n')
    env = posts.environment(tmp_path)
    with pytest.raises(UserError) as caught:
        posts.render(env, "day02/post.md.j2", {"f": fig(1216.6105, "us")})
    assert caught.value.file == "templates/day02/post.md.j2" and caught.value.field == "line 1"
    assert "us is a time, not a bytes like MiB" in caught.value.message


def test_template_filters_write_counts_and_units(tmp_path: Path) -> None:
    (tmp_path / "day02").mkdir()
    (tmp_path / "day02" / "post.md.j2").write_text(
        "{{ f.failed | figure }} failed requests, {{ f.places | figure }} places, "
        '{{ f.page | figure }}, {{ f.disk | figure("us") }}, {{ f.disk | figure }}\n'
    )
    env = posts.environment(tmp_path)
    f = {
        "failed": fig(4.0, "count"),
        "places": fig(5.0, "count"),
        "page": fig(8.192, "MB"),
        "disk": fig(1216.6105, "us"),
    }
    assert posts.render(env, "day02/post.md.j2", {"f": f}) == (
        "4 failed requests, 5 places, 8.2 MB, 1,217 µs, 1.2 ms\n"
    )


# ---- rounding, said once ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        (9.95, "10"),  # 9.95 to one decimal is 10.0: a whole number from 10
        (9.949, "9.9"),
        (1.25, "1.3"),  # half up from the decimal spelling, not to even
        (0.0, "0"),
        (-0.0, "0"),  # never a signed zero
        (0.04, "0.04"),  # one decimal would say 0: two significant figures
        (-0.0012166, "-0.0012"),
        (0.00996, "0.01"),
        (0.05, "0.05"),  # below 1, one decimal would be one significant figure
        (0.084, "0.084"),
        (0.45, "0.45"),
        (-0.45, "-0.45"),
        (0.996, "1.0"),  # two figures round it to 1.0: from 1, one decimal
        (0.0996, "0.1"),  # 0.10, its trailing zero dropped
        (1234.5, "1,235"),
        (-1234.5, "-1,235"),
        (92.347, "92"),
    ],
)
def test_a_measurement_gets_two_or_three_significant_figures(value: float, expected: str) -> None:
    assert numbers.number(value) == expected


def test_fixed_digit_filters_round_half_up_from_the_written_number() -> None:
    # 2.675 is 2.67499999999999982236431605997495353221893310546875 in binary: a person
    # rounding the 2.675 a results file shows writes 2.68.
    assert numbers.fixed(2.675, 2) == "2.68"
    assert numbers.fixed(1124.23) == "1,124.2"
    assert numbers.fixed(-0.04) == "0.0"
    assert numbers.pct(0.145, 0) == "15%"  # 0.145 × 100 in floats is 14.499999999999998
    assert numbers.pct(13280 / (16 * 5797)) == "14.3%"
    assert numbers.pct(0.99996) == "99.996%" and numbers.pct(0.9996, 0) == "99.96%"  # not "100%"
    assert numbers.pct(1.0) == "100.0%" and numbers.pct(0.5, 0) == "50%"
    assert numbers.multiple(5797 / 1148) == "5.0x"
    assert numbers.multiple(5797 / 1148, 2) == "5.05x"
    assert numbers.thousands(2.25) == "2.3" and numbers.thousands(2048.0) == "2,048"
    assert numbers.ms(0.0125) == "13 ms"
    assert numbers.gib(2**27) == "0.13 GiB"  # 0.125 GiB exactly
    assert numbers.gib(2048 * 2**30, 0) == "2,048 GiB"
    assert numbers.gib_short(80 * 2**30) == "80 GiB" and numbers.gib_short(1.5 * 2**30) == "1.5 GiB"
    assert numbers.gib_short(9.96 * 2**30) == "10 GiB"


@pytest.mark.parametrize(
    "value, expected",
    [
        (12345.6, "12,346"),  # never "1.235e+04"
        (0.123456, "0.1235"),
        (2.5, "2.5"),
        (5.0, "5"),
        (0, "0"),
        (0.000012345, "0.00001235"),
        (99999.9, "100,000"),
        (123456, "123,456"),  # an integer keeps every digit
    ],
)
def test_the_review_pages_four_significant_figures(value: float, expected: str) -> None:
    assert numbers.precise(value) == expected


def test_review_cells() -> None:
    from engine.render.review_tables import gib_cell, num_cell, pct_cell

    assert num_cell(1234) == "1,234" and num_cell(1148.0) == "1,148" and num_cell(5.0) == "5"
    assert num_cell(0.123456) == "0.1235" and num_cell(12345.6) == "12,346"
    assert (num_cell(None), num_cell(True), num_cell("x")) == ("—", "yes", "x")
    assert gib_cell(2**27) == "0.13 GiB" and gib_cell(1536 * 2**30) == "1,536.00 GiB"
    assert gib_cell(None) == "—"
    assert pct_cell(0.723) == "72.3%" and pct_cell(0.85, 0) == "85%" and pct_cell(None) == "—"


def test_a_setting_prints_as_typed() -> None:
    assert [numbers.setting(v) for v in (0.9, 2.5, 16.0, 1e-06)] == ["0.9", "2.5", "16", "1e-06"]


def test_what_is_not_a_number_is_refused() -> None:
    for not_a_number in ("4", None, [4]):
        with pytest.raises(TypeError, match="not a number"):
            numbers.count(not_a_number)  # type: ignore[arg-type]


def test_a_figure_given_to_a_plain_number_filter_is_told_to_use_figure() -> None:
    """A lab's figure carries its unit; pct, thousands or fixed take a plain number. The error
    says which filter prints it, quoting the figure as the posts write it (not the whole dict)."""
    disk = {"value": 18.0, "unit": "%", "text": "18%", "label": "disk used", "about": "x" * 500}
    for plain in (numbers.pct, numbers.thousands, numbers.fixed, numbers.number):
        with pytest.raises(TypeError) as err:
            plain(disk)  # type: ignore[arg-type]
        assert str(err.value).startswith("a figure with its unit (18%): print it with the figure filter")
        assert "about" not in str(err.value)


def test_a_number_that_is_not_finite_is_refused() -> None:
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="cannot print"):
            numbers.number(bad)
        with pytest.raises(ValueError, match="cannot print"):
            numbers.figure_text(fig(bad, "ns"))


# ---- the figures table and a built lab day ------------------------------------------------------------


def count_lab() -> dict:
    """A lab's results with two counts and a decimal size, and no text of their own: the chart
    must write each value from its value and unit."""
    source = "measured on Test CPU, 2 cores"
    figures = {
        "failed": {**fig(4.0, "count"), "label": "failed requests", "about": "requests that failed"},
        "places": {**fig(5.0, "count"), "label": "places", "about": "places visited"},
        "page": {**fig(8.192, "MB"), "label": "page", "about": "one page"},
    }
    return {
        "source": source,
        "when": "2026-01-31 12:00 UTC",
        "stale": False,
        "machine": {"name": "Test CPU, 2 cores", "os": "Linux", "kernel": "6.1.0"},
        "table": list(figures),
        "figures": figures,
        "reference": None,
    }


def test_the_figures_table_and_its_alt_text_write_a_count_as_an_integer() -> None:
    from engine.charts.figures_table import figures_table

    drawn, alt = figures_table({"day": 2, "title": "Counting", "lab": count_lab()})
    assert alt == (
        "Table of figures measured on Test CPU, 2 cores: failed requests, 4; places, 5; page, 8.2 MB."
    )
    shown = {t.get_text() for t in drawn.texts}
    assert {"4", "5", "8.2 MB"} <= shown and not {"4.0", "5.0", "7.8 MiB"} & shown


SPEC = """\
day: 2
series: {name: 60 days of system design, length: 60}
title: Counting what failed
repository: github.com/example/repo
hashtags: [SystemDesign, Testing, LearningInPublic]
lab:
  script: day02.lab/lab.py
  figures:
    failed: {unit: count, label: failed requests, about: requests that failed}
    places: {unit: count, label: places, about: places the lab wrote to}
    page: {unit: MB, label: page, about: one page}
charts: [figures_table]
measured: latest
"""
POST = """{% import "_macros.j2" as m %}
{% set f = lab.figures %}
{{ f.failed | figure }} failed requests in {{ f.places | figure }} places, pages of {{ f.page | figure }}.
"""
HASHTAGS = """
{{ m.hashtags(hashtags) }}
"""


def write_lab_day(root: Path) -> tuple[Path, Path]:
    """A lab day with its measurement written by hand (the lab is never run by a build)."""
    days, templates = root / "days", root / "templates"
    (days / "day02.lab").mkdir(parents=True)
    (days / "day02.lab" / "lab.py").write_text("print('counting')\n")
    (days / "day02.yaml").write_text(SPEC)
    (days / "day02.measured").mkdir()
    measurement = {
        "schema": "lab/1",
        "day": 2,
        "date": "2026-01-31T12:00:00Z",
        "machine": {
            "name": "Test CPU, 2 cores",
            "slug": "test-cpu-2-cores",
            "cpu": "Test CPU",
            "cores": 2,
            "memory_bytes": 8 * 2**30,
            "os": "Linux",
            "kernel": "6.1.0",
            "arch": "x86_64",
            "python": "3.11.7",
        },
        "command": "python lab.py",
        "lab": {
            "script": "day02.lab/lab.py",
            "files_sha256": labfiles.content_hash(days / "day02.lab"),
            "files": ["lab.py"],
        },
        "wall_seconds": 1.5,
        "figures": {
            "failed": {"value": 4.0, "unit": "count", "about": "requests that failed"},
            "places": {"value": 5, "unit": "count", "about": "places the lab wrote to"},
            # Recorded in bytes: the spec's MB is what it prints in.
            "page": {"value": 8_192_000, "unit": "B", "about": "one page"},
        },
        "notes": [],
        "transcript": {"text": "counting\n", "lines": 1, "truncated": False},
    }
    (days / "day02.measured" / "test-cpu-2-cores.json").write_text(json.dumps(measurement))
    (templates / "day02").mkdir(parents=True)
    shutil.copy(REPO / "templates" / "_macros.j2", templates / "_macros.j2")
    (templates / "day02" / "linkedin.md.j2").write_text(POST + HASHTAGS)
    (templates / "day02" / "x-thread.md.j2").write_text(POST)
    return days / "day02.yaml", templates


def test_a_built_lab_day_writes_counts_as_integers_everywhere(tmp_path: Path) -> None:
    spec, templates = write_lab_day(tmp_path)
    folder = pipeline.build(spec, tmp_path / "out", templates_root=templates).folder
    said = "4 failed requests in 5 places, pages of 8.2 MB."
    assert (folder / "linkedin.md").read_text() == f"{said}\n\n#SystemDesign #Testing #LearningInPublic\n"
    assert (folder / "x-thread.md").read_text() == f"{said}\n"
    assert (folder / "figures_table.alt.txt").read_text() == (
        "Table of figures measured on Test CPU, 2 cores: failed requests, 4; places, 5; page, 8.2 MB.\n"
    )
    results = json.loads((folder / "results.json").read_text())
    texts = {name: f["text"] for name, f in results["lab"]["figures"].items()}
    assert texts == {"failed": "4", "places": "5", "page": "8.2 MB"}
    page = (folder / "index.html").read_text()  # the review page's figures table
    assert '<tr><td class="num">failed</td><td class="num">4</td>' in page
    assert '<tr><td class="num">places</td><td class="num">5</td>' in page
    assert '<tr><td class="num">page</td><td class="num">8.2 MB</td>' in page


# ---- one place rounds ---------------------------------------------------------------------------------

# Every module whose text reaches a post, a chart, an alt text or the review page.
PRINTING = [
    *sorted((REPO / "engine" / "charts").glob("*.py")),
    *(  # the lab's judge and measure speak to the terminal (errors, the run's status), not a post
        p
        for p in sorted((REPO / "engine" / "experiments").rglob("*.py"))
        if p.parent.name != "lab" or p.stem not in ("judge", "measure")
    ),
    *(  # the sandbox's and the template cache's text is error messages, not what a post says
        p
        for p in sorted((REPO / "engine" / "render").glob("*.py"))
        if p.stem not in ("render_env", "template_cache")
    ),
    REPO / "engine" / "outdir" / "changes.py",
    REPO / "engine" / "kvcache.py",
    REPO / "engine" / "given.py",
    REPO / "engine" / "quotable.py",
    REPO / "engine" / "sweep" / "analysis.py",
]


def rounding_format_specs(path: Path) -> list[str]:
    """'line: spec' for each f-string field formatted as a float (.1f, ,.0f, g, .0%) in ``path``."""
    import ast
    import re

    found = []
    for node in ast.walk(syntax_tree(path)):
        if isinstance(node, ast.FormattedValue) and isinstance(node.format_spec, ast.JoinedStr):
            spec = "".join(str(v.value) for v in node.format_spec.values if isinstance(v, ast.Constant))
            if re.search(r"[eEfFgG%]$", spec):
                found.append(f"{node.lineno}: {spec}")
    return found


def test_the_rule_finds_a_float_format(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('x = 1.25\ny = f"{x:.1f} and {x:,} and {x:>8} and {x:.0%}"\n', encoding="utf-8")
    assert rounding_format_specs(probe) == ["2: .1f", "2: .0%"]


@pytest.mark.parametrize("path", PRINTING, ids=lambda p: str(p.relative_to(REPO)))
def test_no_printing_module_rounds_a_number_itself(path: Path) -> None:
    assert path.is_file()
    assert rounding_format_specs(path) == [], f"{path.name}: round through engine.numbers instead"
