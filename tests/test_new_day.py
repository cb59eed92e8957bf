"""A day in minutes: a lab the project has never seen becomes a day with no hand edit.

Two toy labs stand for the two kinds a person brings (tests/data/newday_kit records with labkit:
figures with their descriptions, values the person set, a table; tests/data/newday_print
imports nothing and prints its results). Each is scaffolded with ``engine new``, measured with
``engine lab`` and built, in a scratch copy of the project, and the drafts are held to what the
labs recorded: every figure quoted, set values labelled "set", a declared chart of the lab's
table whose alt text holds the plotted numbers, every platform check passing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import UserError
from engine.lab import output
from engine.pipeline import build
from engine.platforms.day_dir import check_day_dir

from helpers import DAYS, REPO

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A scratch project: the real days/ specs (for the series) and templates/ (for the macros)."""
    root = tmp_path / "project"
    (root / "days").mkdir(parents=True)
    for spec in DAYS.glob("day*.yaml"):
        shutil.copy(spec, root / "days" / spec.name)
    shutil.copytree(REPO / "templates", root / "templates")
    return root


def scaffold_and_build(root: Path, day: int, lab: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    days, templates = root / "days", root / "templates"
    assert main(["new", str(day), "--lab", str(lab), "--days", str(days), "--templates", str(templates)]) == 0
    printed = capsys.readouterr().out
    assert f"next: make lab-day{day:02d}" in printed
    spec = days / f"day{day:02d}.yaml"
    assert main(["lab", str(spec), "--quiet"]) == 0
    build(spec, root / "out", templates_root=templates)
    return root / "out" / f"day{day:02d}"


def recorded(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


def test_a_labkit_lab_becomes_a_day_with_no_edit(project, capsys):
    folder = scaffold_and_build(project, 12, DATA / "newday_kit" / "lab.py", capsys)
    assert check_day_dir(folder).ok
    results = recorded(folder)
    lab = results["lab"]
    # Declared once, in the lab: the spec lists no figures, the run's are the contract.
    assert "figures" not in (project / "days" / "day12.yaml").read_text().split("lab:")[1].split("charts:")[0]
    assert lab["table"] == ["rr_failed", "lc_failed", "page_cache"]  # the lab's own order
    assert lab["figures"]["rr_failed"]["about"] == "requests that failed under round robin"
    post = (folder / "linkedin.md").read_text()
    for fig in lab["figures"].values():
        assert f"{fig['label']}: {fig['text']}" in post
    # Set values are quoted and labelled as set, never as measured.
    for value in results["given"].values():
        assert value["source"] == "set"
        assert f"{value['label']}: {value['text']} (set)" in post
    assert results["given"]["probe_interval"]["text"] == "200 ms"
    assert results["given"]["probe_interval"]["label"] == "Probe every"  # labkit.given(label=...)
    # The table is quoted row by row, and drawn by a declared chart whose alt text holds its numbers.
    assert "round robin · " in post and "least conn · " in post
    chart = next(c for c in results["charts"] if c["name"] == "latency_chart")
    alt = chart["alt_text"]
    for row in lab["tables"]["latency"]["records"]:
        assert row["strategy"] in alt and row["p50"]["text"] in alt and row["p99"]["text"] in alt
    assert "Measured on" in alt
    thread = (folder / "x-thread.md").read_text()
    # it fits in one post, so it is that post: no '---', no "1/1" label
    assert thread.startswith("Day 12 of 60 days") and "\n---\n" not in thread
    assert "![the lab's output](terminal.png)" in thread


def test_a_lab_that_only_prints_becomes_a_day_with_no_edit(project, capsys):
    folder = scaffold_and_build(project, 13, DATA / "newday_print", capsys)
    assert check_day_dir(folder).ok
    spec = (project / "days" / "day13.yaml").read_text()
    assert "from_output" in spec
    lab = recorded(folder)["lab"]
    # Read off the printed lines: '1,234 ns' with its comma, '12.5 x', a count with no unit.
    assert lab["figures"]["p50_lookup"]["value"] == 1234 and lab["figures"]["p50_lookup"]["unit"] == "ns"
    assert lab["figures"]["p50_lookup"]["line"] == "p50 lookup: 1,234 ns"
    page = (folder / "index.html").read_text()
    assert "printed as" in page and "p50 lookup: 1,234 ns" in page  # the review page shows the line
    assert lab["figures"]["write_amplification_lsm"]["value"] == 12.5
    assert lab["figures"]["reads_per_lookup_btree"]["value"] == 3
    assert lab["figures"]["keys"]["value"] == 10_000  # quoted by the drafts as f.keys
    assert "10,000" in (folder / "linkedin.md").read_text()
    (table,) = lab["tables"].values()
    assert dict(table["columns"]) == {"depth": "count", "btree": "us", "lsm": "us"}
    assert table["rows"] == [[d, 1.5 * d, 2.5 * d + 1] for d in range(1, 10)]
    # The post quotes the first and last three rows of a table that long, around an ellipsis.
    post = (folder / "linkedin.md").read_text()
    quoted = [line for line in post.splitlines() if " · " in line]
    assert [line.split(" · ")[0] for line in quoted] == ["1", "2", "3", "7", "8", "9"]
    assert "\n…\n" in post
    line = next(
        c for c in recorded(folder)["charts"] if c["name"].endswith("_chart") and c["name"] != "figures_chart"
    )
    for row in table["rows"]:
        assert output.parse_number(f"{row[1]}") == row[1]
    # Nine points a series do not fit the alt text: each series is said by its lowest and
    # highest point (1.5 × 1 and 1.5 × 9 = 13.5; 2.5 × 1 + 1 and 2.5 × 9 + 1 = 23.5, each to two
    # significant figures, half away from zero), and the source stays.
    alt = line["alt_text"]
    assert alt.startswith("Line chart") and alt.endswith(".") and "Source: Measured on" in alt
    assert "btree: lowest 1.5 µs at depth 1, highest 14 µs at depth 9." in alt
    assert "lsm: lowest 3.5 µs at depth 1, highest 24 µs at depth 9." in alt
    # Its carousel slide is headed by the chart's title and says the chart's last point.
    (page,) = [p for p in recorded(folder)["carousel"]["pages"] if p["chart"] == line["name"]]
    assert page["headline"] == "Btree, lsm by depth."
    assert page["body"] == "At depth 9: btree 14 µs, lsm 24 µs."


PRINTS_A_TABLE = """\
print("Membership test: dict vs list")
print()
print(f"{'size':>10}  {'dict_ns':>10}  {'list_us':>10}")
print("-" * 34)
for n, dict_ns, list_us in [(100, 40.4, 0.43), (1000, 39.4, 3.51), (10000, 51.9, 46.59)]:
    print(f"{n:>10}  {dict_ns:>10.1f}  {list_us:>10.2f}")
"""
RECORDS_A_TABLE = """\
from labkit import table
table("lookups", {"size": "count", "dict": "ns"}, [[100, 40.4], [1000, 39.4], [10000, 51.9]])
"""


@pytest.mark.parametrize("script", [PRINTS_A_TABLE, RECORDS_A_TABLE], ids=["printed", "labkit"])
def test_a_lab_of_one_table_and_no_figure_becomes_a_day_with_no_edit(project, tmp_path, capsys, script):
    """A table is a lab's numbers too: the day measures, builds and passes every check, its post
    quotes the rows, and it lists no table of figures it does not have."""
    lab = tmp_path / "table-lab" / "lab.py"
    lab.parent.mkdir()
    lab.write_text(script)
    folder = scaffold_and_build(project, 14, lab, capsys)
    assert check_day_dir(folder).ok
    results = recorded(folder)
    assert results["lab"]["figures"] == {} and len(results["lab"]["tables"]) == 1
    (table,) = results["lab"]["tables"].values()
    assert [row[0] for row in table["rows"]] == [100, 1000, 10000]
    assert "figures_table" not in [c["name"] for c in results["charts"]]
    post = (folder / "linkedin.md").read_text()
    assert "1,000 · 39 ns" in post and "10,000 · 52 ns" in post  # the rows, as posts write them
    thread = (folder / "x-thread.md").read_text()
    assert "Measured on" in thread and not any(line.endswith(":") for line in thread.splitlines())


def test_new_copies_no_file_through_a_link(project, tmp_path, capsys):
    """`engine new` copies a lab's files, or an earlier day's templates and lab: one that is a
    link (to a private note, a secret) is refused by name, and nothing is written, so its
    target's text can never reach the new day's posts."""
    secret = tmp_path / "private.txt"
    secret.write_text("my private note: hunter two\n")
    days, templates = project / "days", project / "templates"
    lab = tmp_path / "linked-lab"
    lab.mkdir()
    (lab / "lab.py").write_text('print("p50 lookup: 1,234 ns")\n')
    (lab / "notes.txt").symlink_to(secret)
    code = main(["new", "12", "--lab", str(lab), "--days", str(days), "--templates", str(templates)])
    err = capsys.readouterr().err
    assert code == 2 and "is a symbolic link" in err and "hunter" not in err
    assert not (days / "day12.yaml").exists() and not (templates / "day12").exists()
    (templates / "day37" / "notes.j2").symlink_to(secret)
    code = main(["new", "58", "--from", "37", "--days", str(days), "--templates", str(templates)])
    err = capsys.readouterr().err
    assert code == 2 and "notes.j2" in err and "is a symbolic link" in err and "hunter" not in err
    assert not (days / "day58.yaml").exists() and not (templates / "day58").exists()


def test_new_prints_a_lab_files_name_as_one_line_of_text(project, tmp_path, capsys):
    """A lab folder's file named with a line feed and a terminal escape (one that sets the
    window's title) is copied, and its name printed as one line, each as its escape."""
    lab = tmp_path / "odd-lab"
    lab.mkdir()
    (lab / "lab.py").write_text('print("p50 lookup: 1,234 ns")\n')
    (lab / "evil\nline\x1b]0;TITLE\x07.txt").write_text("data\n")
    days, templates = project / "days", project / "templates"
    assert main(["new", "12", "--lab", str(lab), "--days", str(days), "--templates", str(templates)]) == 0
    out = capsys.readouterr().out
    assert "evil\\nline\\x1b]0;TITLE\\x07.txt" in out and "\x1b" not in out and "\x07" not in out
    assert all(line.startswith(("  wrote ", "next: ", "left out ")) for line in out.splitlines())


def test_new_never_overwrites_and_writes_nothing_when_refused(project, capsys):
    days, templates = project / "days", project / "templates"
    (templates / "day12").mkdir()
    (templates / "day12" / "linkedin.md.j2").write_text("mine\n")
    args = [
        "new",
        "12",
        "--lab",
        str(DATA / "newday_kit" / "lab.py"),
        "--days",
        str(days),
        "--templates",
        str(templates),
    ]
    assert main(args) == 2
    assert "already exists" in capsys.readouterr().err
    assert (templates / "day12" / "linkedin.md.j2").read_text() == "mine\n"
    assert not (days / "day12.yaml").exists() and not (days / "day12.lab").exists()


def test_new_over_an_existing_day_is_refused_before_its_lab_runs(project, capsys, tmp_path):
    """A lab that prints is run once to read it, which may take a minute: a day whose spec is
    there already is refused first (the lab here would leave a file behind had it run)."""
    lab = tmp_path / "lab.py"
    ran = tmp_path / "ran"
    lab.write_text(f"open({str(ran)!r}, 'w').close()\nprint('keys: 10,000')\n")
    days, templates = project / "days", project / "templates"
    args = ["new", "37", "--lab", str(lab), "--days", str(days), "--templates", str(templates)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "day37.yaml" in err and "already exists" in err
    assert not ran.exists()


def test_new_from_an_existing_day_copies_its_spec_and_templates(project, capsys):
    days, templates = project / "days", project / "templates"
    assert main(["new", "45", "--from", "4", "--days", str(days), "--templates", str(templates)]) == 0
    assert "next: make day45" in capsys.readouterr().out
    text = (days / "day45.yaml").read_text()
    assert "day: 45" in text and "day: 4\n" not in text
    for name in ("linkedin.md.j2", "x-thread.md.j2", "carousel/slides.md.j2"):
        assert (templates / "day45" / name).read_bytes() == (templates / "day04" / name).read_bytes()
    # The copy is a valid spec of its own day (building it is Day 4's build, tested there).
    from engine.spec import load_spec

    assert load_spec(days / "day45.yaml").day == 45


def test_a_print_lab_with_nothing_to_read_is_one_clear_error(project, capsys, tmp_path):
    lab = tmp_path / "quiet.py"
    lab.write_text('print("hello")\n')
    args = [
        "new",
        "14",
        "--lab",
        str(lab),
        "--days",
        str(project / "days"),
        "--templates",
        str(project / "templates"),
    ]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("--lab: found no figures")
    assert not (project / "days" / "day14.yaml").exists()


# ---- from_output, by hand ----------------------------------------------------------------------

TRANSCRIPT = "warm-up p50: 9 us\np50: 1,234.5 us\np99: 2,000 us\nrounds: 3\n"


def test_from_output_reads_the_one_matching_line_with_commas():
    found = output.figure_from_output(TRANSCRIPT, r"^p50: ([\d,.]+) us$")
    assert (found.value, found.line, found.line_number) == (1234.5, "p50: 1,234.5 us", 2)


def test_from_output_with_no_match_names_the_pattern_and_quotes_the_nearest_line():
    """A label the lab now prints differently: the line it most likely meant is quoted beside
    the error; a pattern like no line quotes none."""
    with pytest.raises(ValueError, match="matches no line") as err:
        output.figure_from_output(
            TRANSCRIPT.replace("p50: 1", "p50 lookups: 1"), r"^p50 lookup: ([\d,.]+) us$"
        )
    assert str(err.value).endswith("; the nearest is line 2: 'p50 lookups: 1,234.5 us'")
    with pytest.raises(ValueError) as err:
        output.figure_from_output(TRANSCRIPT, r"^zzz qqq: ([\d,.]+)$")
    assert str(err.value).endswith("matches no line of the lab's output")


def test_from_output_with_two_matches_quotes_both_lines():
    with pytest.raises(ValueError) as err:
        output.figure_from_output(TRANSCRIPT, r"p50: ([\d,.]+) us")
    assert "matches 2 lines" in str(err.value)
    assert "line 1: 'warm-up p50: 9 us'" in str(err.value) and "line 2: 'p50: 1,234.5 us'" in str(err.value)


@pytest.mark.parametrize(
    ("text", "value"),
    [("4", 4.0), ("1,234", 1234.0), ("-0.25", -0.25), ("1e-3", 0.001), ("12,345,678.5", 12345678.5)],
)
def test_numbers_read_as_people_print_them(text, value):
    assert output.parse_number(text) == value


@pytest.mark.parametrize("text", ["12,34", "1.2.3", "abc", "", "1,2345"])
def test_what_is_not_a_number_is_refused(text):
    with pytest.raises(ValueError):
        output.parse_number(text)


def test_a_pattern_needs_exactly_one_group():
    with pytest.raises(ValueError, match="exactly one capture group"):
        output.compile_pattern(r"p50: \d+")
    with pytest.raises(ValueError, match="exactly one capture group"):
        output.compile_pattern(r"(p50): (\d+)")


def test_a_printed_table_is_read_below_its_header_past_a_ruler():
    printed = "noise\nstrategy      p50  p99\n------------  ---  ---\nround robin   12   80\nleast conn    9.8  31\n\nafter\n"
    rows, header = output.table_from_output(printed, r"^strategy\s+p50", ["text", "ms", "ms"])
    assert rows == [["round robin", 12.0, 80.0], ["least conn", 9.8, 31.0]]
    assert header.line_number == 2


def test_progress_lines_and_colour_are_read_as_a_terminal_shows_them():
    printed = "10%\r50%\r\x1b[32mp50: 7 ms\x1b[0m\n"
    assert output.figure_from_output(printed, r"^p50: (\d+) ms$").value == 7


# ---- the run's contract ---------------------------------------------------------------------


def _run(tmp_path: Path, script: str, spec_lab: str = "") -> Path:
    lab = tmp_path / "days" / "day09.lab"
    lab.mkdir(parents=True)
    (lab / "lab.py").write_text(script)
    spec = tmp_path / "days" / "day09.yaml"
    spec.write_text(
        "day: 9\nseries: {name: s, length: 60}\ntitle: T\nrepository: r\n"
        "hashtags: [SystemDesign, Labs, LearningInPublic]\n"
        f"lab:\n  script: day09.lab/lab.py\n{spec_lab}"
    )
    return spec


def test_a_figure_described_nowhere_is_one_error_naming_it(tmp_path):
    from engine.experiments.lab.measure import measure

    spec = _run(tmp_path, 'from labkit import figure\nfigure("hits", 3, "count")\n')
    with pytest.raises(UserError) as err:
        measure(spec)
    assert err.value.field == "lab.figures.hits" and "no description" in err.value.message
    assert not (tmp_path / "days" / "day09.measured").exists()


def test_a_spec_list_stays_the_contract(tmp_path):
    from engine.experiments.lab.measure import measure

    spec = _run(
        tmp_path,
        'from labkit import figure\nfigure("hits", 3, "count", about="cache hits")\nfigure("extra", 1, "count", about="x")\n',
        "  figures:\n    hits: {unit: count}\n",
    )
    with pytest.raises(UserError, match="reported 'extra', which the spec does not list"):
        measure(spec)


def test_a_spec_given_block_is_quoted_as_set(tmp_path):
    from engine.pipeline import compute
    from engine.sections import SpecLocation
    from engine.spec import load_spec

    spec = tmp_path / "day05.yaml"
    spec.write_text(
        "day: 5\nseries: {name: s, length: 60}\ntitle: T\nrepository: r\n"
        "hashtags: [SystemDesign, Labs, LearningInPublic]\n"
        "given:\n  clients: {value: 20, unit: count, about: clients at once}\n"
        "  interval: {value: 0.2, unit: s, label: Probe interval}\n"
        "headline: [interval]\n"
    )
    results = compute(load_spec(spec), SpecLocation(spec))
    assert results["given"]["interval"]["text"] == "200 ms"
    assert results["given"]["interval"]["source"] == "set"
    assert results["given"]["clients"]["label"] == "Clients"


def test_a_pattern_that_backtracks_without_end_is_stopped_within_its_limit(monkeypatch):
    """`((?:a+)+$)` over a long line of a's takes Python's re minutes; the reader stops it at
    the limit (lowered here, so the test spends a tenth of the real one spinning)."""
    import time

    monkeypatch.setattr(output, "MAX_MATCH_SECONDS", 0.2)
    printed = "a" * 5000 + "b\n"
    start = time.monotonic()
    with pytest.raises(ValueError, match="took over 0.2 s to match"):
        output.figure_from_output(printed, r"((?:a+)+$)")
    assert time.monotonic() - start < 0.2 + 1


def test_a_unit_in_a_printed_name_is_read_and_an_unknown_unit_is_said(project, tmp_path, capsys):
    """'miss_pct: 5' is 5%, 'latency (ms): 12' is 12 ms, as a table's header is read; a line
    whose word after the number is no unit the engine writes ('42 requests', '3.5 Gbit/s') is
    left out, and `engine new` says which lines it left out rather than dropping them silently."""
    import re

    from engine.scaffold import detect

    printed = "miss_pct: 5\nhits: 42 requests\nlatency (ms): 12\nrate: 3.5 Gbit/s\np50: 12 ms\n"
    found = detect.read_output(printed)
    assert [(f.name, f.unit) for f in found.figures] == [
        ("miss_pct", "%"),
        ("latency_ms", "ms"),
        ("p50", "ms"),
    ]
    assert found.unknown_units == ["hits: 42 requests", "rate: 3.5 Gbit/s"]
    # a word of the name is no unit: 'variant B' is no size in bytes, 'worker(s)' no seconds
    words = detect.read_output("variant B: 7\nworker(s): 4\n")
    assert [(f.name, f.unit) for f in words.figures] == [("variant_b", "count"), ("worker_s", "count")]
    latency = found.figures[1].pattern
    assert latency is not None and re.match(latency, "latency (ms): 12").group(1) == "12"
    lab = tmp_path / "units-lab" / "lab.py"
    lab.parent.mkdir()
    lab.write_text("".join(f"print({line!r})\n" for line in printed.splitlines()))
    days, templates = project / "days", project / "templates"
    assert main(["new", "15", "--lab", str(lab), "--days", str(days), "--templates", str(templates)]) == 0
    said = capsys.readouterr().out
    assert "left out (no unit the engine knows): hits: 42 requests" in said
    assert "left out (no unit the engine knows): rate: 3.5 Gbit/s" in said


def test_printed_labels_that_share_a_name_each_become_a_figure():
    """Fourteen labels that differ only in their last word are cut to one 40-character name:
    each still becomes a figure, under a name of its own, read off its own line only."""
    import re

    from engine.scaffold import detect

    lines = [f"probe length at load factor step number {i}: {1.5 + i} x" for i in range(14)]
    found = detect.read_output("\n".join(lines) + "\n")
    names = [f.name for f in found.figures]
    assert len(names) == 14 and len(set(names)) == 14 and all(len(n) <= 40 for n in names)
    for line, figure in zip(lines, found.figures):
        assert figure.pattern is not None and figure.label is not None
        assert [x for x in lines if re.match(figure.pattern, x)] == [line]
        assert figure.label == figure.label.strip()


def test_a_table_whose_long_column_names_repeat_is_read_and_ends():
    """Two header words that are the same past 40 characters (their names used to be extended
    for ever, each cut back to the name it had)."""
    from engine.scaffold import detect

    word = "a_really_long_column_name_that_goes_past_forty_characters"
    (table,) = detect.read_output(f"{word} {word}\n1 2\n3 4\n").tables
    assert len(table.columns) == 2 and all(len(c) <= 40 for c in table.columns)


@pytest.mark.parametrize(
    ("printed", "columns", "rows"),
    [
        (  # columns between bars, as many labs print a comparison
            "cache_size | lru_hit_pct | lru_mean_ms\n"
            "-----------+-------------+------------\n"
            "       100 |        18.1 |        8.23\n"
            "     1,000 |        39.1 |        6.17\n",
            {"cache_size": "count", "lru_hit": "%", "lru_mean": "ms"},
            [[100.0, 18.1, 8.23], [1000.0, 39.1, 6.17]],
        ),
        (  # a label of two words, the columns two spaces apart or more
            "limiter          accepted  p99_ms\n"
            "token bucket          310     4.2\n"
            "sliding window        300     7.9\n",
            {"limiter": "text", "accepted": "count", "p99": "ms"},
            [["token bucket", 310.0, 4.2], ["sliding window", 300.0, 7.9]],
        ),
        (  # a column named in two words
            "depth  p99 latency (ms)\n1  2.5\n2  3.5\n",
            {"depth": "count", "p99_latency": "ms"},
            [[1.0, 2.5], [2.0, 3.5]],
        ),
    ],
)
def test_a_table_split_on_bars_or_wide_spaces_is_found_as_the_build_reads_it(printed, columns, rows):
    """The scaffolder finds a table the way the build's reader splits its rows (on '|', on runs
    of two spaces, or on spaces, as the README says): its pattern, read back by the build, gives
    the rows as printed."""
    from engine.lab import output
    from engine.scaffold import detect

    (table,) = detect.read_output(printed).tables
    assert table.columns == columns
    assert table.pattern is not None
    read, _ = output.table_from_output(printed, table.pattern, list(table.columns.values()))
    assert read == rows


def test_a_share_printed_as_pct_or_percent_is_a_percentage():
    from engine.scaffold import detect

    found = detect.read_output("size  hit_pct  miss(percent)\n10  22.76  77.24\n100  61.5  38.5\n")
    (table,) = found.tables
    assert table.columns == {"size": "count", "hit": "%", "miss": "%"}
    found = detect.read_output("hit rate: 22.76 pct\nlatency: 1.5 μs\n")
    assert [(f.name, f.unit) for f in found.figures] == [("hit_rate", "%"), ("latency", "µs")]


@pytest.mark.parametrize(
    ("title", "shown"),
    [("C:\\path and \\g<0>", "C:\\path and \\g<0>"), ("Queues: 50% & more", "Queues: 50% & more")],
)
def test_a_title_is_taken_as_written(project, capsys, title, shown):
    """Backslashes in --title are text (they were read as a regular expression's replacement)."""
    from engine.spec import load_spec

    days, templates = project / "days", project / "templates"
    args = ["new", "46", "--from", "4", "--title", title, "--days", str(days), "--templates", str(templates)]
    assert main(args) == 0
    assert load_spec(days / "day46.yaml").title == shown


def test_a_title_of_two_lines_or_a_huge_lab_folder_is_one_line_naming_the_flag(project, capsys, tmp_path):
    days, templates = project / "days", project / "templates"
    args = ["new", "46", "--from", "4", "--title", "a\nb", "--days", str(days), "--templates", str(templates)]
    assert main(args) == 2
    assert capsys.readouterr().err.startswith("--title: ")
    lab = tmp_path / "big"
    lab.mkdir()
    (lab / "lab.py").write_text("print('x: 1 ms')\n")
    for k in range(520):  # past the scaffolder's 200 and the engine's 500 for any lab folder
        (lab / f"data{k}.txt").write_text("")
    args = ["new", "47", "--lab", str(lab), "--days", str(days), "--templates", str(templates)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--lab: the lab folder has over 200 files" in err and "Traceback" not in err
    assert not (days / "day46.yaml").exists() and not (days / "day47.yaml").exists()
