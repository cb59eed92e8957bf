"""The terminal screenshot: what a terminal would show of a transcript (escapes, carriage
returns, backspaces), which lines the spec picks, how the window fits them, and an alt text
that names the figures on it. Expected values are worked by hand from the inputs here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import ansi
from engine.ansi import BOLD_DEFAULT, PALETTE, render
from engine.charts import style
from engine.charts.terminal import (
    CHAR_WIDTH_EM,
    MIN_TERMINAL_FONT_PT,
    Row,
    alt_text,
    drawn_width,
    elide_rows,
    fit,
    selected_rows,
    shown_figures,
    transcript_lines,
    window,
    wrap_rows,
)
from engine.errors import UserError

from helpers import examples

REPO = Path(__file__).resolve().parent.parent
RED, GREEN, BRIGHT_RED, BRIGHT_GREEN = PALETTE[1], PALETTE[2], PALETTE[9], PALETTE[10]


def texts(text: str) -> list[str]:
    return [ansi.line_text(line) for line in render(text)]


# ---- what a terminal shows: carriage returns, backspaces, escapes -----------------------------


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("10%\r20%\r100%\n", ["100%"]),
        ("100%\r50%\n", ["50%%"]),  # the row is overwritten, not cleared: a terminal shows '50%%'
        ("100%\r\x1b[K50%\n", ["50%"]),  # unless the program erases it first (ESC[K)
        ("abcdef\rXY\n", ["XYcdef"]),
        ("done\r\n", ["done"]),  # CRLF: back to column 0, then the next row
        ("abc\b\bX\n", ["aXc"]),
        ("ab\b\n", ["ab"]),  # a backspace moves the cursor; it erases nothing
        ("\b\bx\n", ["x"]),  # and never left of column 0
        ("_\bA\n", ["A"]),  # overstrike: the last character written wins
        ("a\tb\n", ["a       b"]),
        ("abcdefgh\tX\n", ["abcdefgh        X"]),  # the next tab stop, 16
        ("abc\x1b[1Gx\n", ["xbc"]),  # to column 1
        ("a\x1b[3Cb\n", ["a   b"]),  # 3 to the right
        ("abcd\x1b[2Dx\n", ["abxd"]),  # 2 to the left
        ("abcd\x1b[3G\x1b[1Kx\n", ["  xd"]),  # erase to the start, cursor included
        ("abcd\x1b[2Kx\n", ["    x"]),  # erase the row; the cursor stays at column 4
        ("a\x07b\x00c\x7fd\n", ["abcd"]),  # BEL, NUL, DEL: nothing on the screen
        ("trail   \n", ["trail"]),
        ("a\nb", ["a", "b"]),  # an unfinished last row still shows
        ("a\n\n", ["a", ""]),
        ("", []),
    ],
)
def test_rows_are_what_a_terminal_finally_shows(written: str, shown: list[str]) -> None:
    assert texts(written) == shown


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("\x1b]0;lab: running\x07hello\n", ["hello"]),  # a window title ended by BEL
        ("\x1b]2;title\x1b\\hi\n", ["hi"]),  # ... or by ESC \
        ("\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\ here\n", ["link here"]),  # hyperlink
        ("\x1b]0;never ended\nnext\n", ["", "next"]),  # an unended OSC stops at its row's end
        ("\x1bPq#0;2;0;0;0\x1b\\x\n", ["x"]),  # a DCS string (sixel) is dropped too
        ("\x1b[2J\x1b[Hx\x1b[?25l\x1b[3A\n", ["x"]),  # other CSI: clear, home, cursor, up
        ("\x1b(Bok\x1b7\x1b=\n", ["ok"]),  # a charset, a saved cursor, keypad mode
        ("x\x1b", ["x"]),  # a lone ESC at the end
        ("\x9b31mc1\x9b0m\n", ["c1"]),  # the one-byte C1 CSI
        ("a\x1b[31", ["a"]),  # a sequence cut off by the end of the text
    ],
)
def test_escapes_are_never_drawn(written: str, shown: list[str]) -> None:
    assert texts(written) == shown


def test_no_control_character_survives_any_mix() -> None:
    nasty = "".join(chr(c) for c in range(0, 0xA0)) + "\x1b[31;1;38;5;9;48;2;1;2;3mX\x1b]0;t\x07Y\x1b[Z"
    for line in render(nasty * 3):
        for text, _ in line:
            assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text), repr(text)
    assert "[31" not in ansi.plain("\x1b[31mred\x1b[0m")


PIECES = st.sampled_from(
    ["\x1b", "[", "]", "\\", ";", ":", "m", "K", "C", "G", "0", "1", "38", "5", "2", "255", "99999999"]
    + ["\x07", "\x9b", "\x9d", "\x9c", "\r", "\b", "\t", "\n", "\x00", "a", "é", " ", "P", "("]
)


@settings(max_examples=examples(120, 5000), deadline=None)
@given(st.lists(PIECES, max_size=60).map("".join))
def test_any_bytes_give_printable_rows_one_per_newline(written: str) -> None:
    rows = render(written)
    for line in rows:
        for text, colour in line:
            assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text), repr(text)
            assert colour is None or (len(colour) == 7 and colour.startswith("#"))
        assert len(ansi.line_text(line)) <= ansi.MAX_CURSOR + len(written)  # a move is capped
    # One row per newline, and one more for an unfinished last row with something on it.
    assert written.count("\n") <= len(rows) <= written.count("\n") + 1


def test_sgr_colours_basic_bright_bold_and_extended() -> None:
    assert render("\x1b[31mred\x1b[0m plain\n") == [[("red", RED), (" plain", None)]]
    assert render("\x1b[1;32mok\x1b[22mok\x1b[m\n") == [[("ok", BRIGHT_GREEN), ("ok", GREEN)]]
    assert render("\x1b[91mx\x1b[39my\n") == [[("x", BRIGHT_RED), ("y", None)]]
    assert render("\x1b[1mbold\n") == [[("bold", BOLD_DEFAULT)]]
    # 256 colours: 196 = 16 + 36·5 is the cube's pure red; 244 = 232 + 12 the grey 8 + 10·12.
    assert render("\x1b[38;5;196mx\x1b[38;5;244my\x1b[38;5;1mz\n") == [
        [("x", "#FF0000"), ("y", "#808080"), ("z", RED)]
    ]
    # bold brightens the 8 basic colours only, not a 256-colour pick of the same index
    assert render("\x1b[1;38;5;1mz\n") == [[("z", RED)]]
    assert render("\x1b[38;2;1;2;3mx\x1b[38:2::16:32:48my\n") == [[("x", "#010203"), ("y", "#102030")]]
    # backgrounds are not drawn, and their arguments are not read as further codes
    assert render("\x1b[41mx\x1b[48;5;31my\x1b[48;2;255;0;0;32mz\n") == [[("xy", None), ("z", GREEN)]]
    # the pen carries over to the next row, as on a terminal
    assert render("\x1b[31ma\nb\x1b[0mc\n") == [[("a", RED)], [("b", RED), ("c", None)]]


def test_overwriting_keeps_each_cells_own_colour() -> None:
    assert render("\x1b[31m10%\r\x1b[32m2\n") == [[("2", GREEN), ("0%", RED)]]


# ---- which lines: ranges, the old single range, the elision between --------------------------


def lab_with(text: str, terminal: dict, **more: object) -> dict:
    return {
        "command": "python lab.py",
        "lab_folder": "day02.lab",
        "source": "measured on Test CPU, 2 cores",
        "file": "day02.measured/test-cpu.json",
        "transcript": {"text": text},
        "terminal": terminal,
        **more,
    }


EIGHT = "".join(f"l{i}\n" for i in range(1, 9))


def test_several_ranges_with_a_line_saying_how_many_between() -> None:
    lab = lab_with(EIGHT, {"lines": [[2, 3], [6, 7]]})
    assert transcript_lines(lab) == ["l2", "l3", "⋯ 2 lines not shown ⋯", "l6", "l7"]
    lab = lab_with(EIGHT, {"lines": [[1, 1], [3, 3], [8, 8]]})
    assert transcript_lines(lab) == ["l1", "⋯ 1 line not shown ⋯", "l3", "⋯ 4 lines not shown ⋯", "l8"]


def test_first_and_last_line_are_still_one_range() -> None:
    assert transcript_lines(lab_with(EIGHT, {"first_line": 7})) == ["l7", "l8"]
    assert transcript_lines(lab_with(EIGHT, {"first_line": 2, "last_line": 4, "lines": None})) == [
        "l2",
        "l3",
        "l4",
    ]
    assert transcript_lines(lab_with(EIGHT, {})) == [f"l{i}" for i in range(1, 9)]
    assert transcript_lines(lab_with("", {})) == []


@pytest.mark.parametrize(
    ("terminal", "field", "message"),
    [
        ({"lines": [[2, 3], [6, 9]]}, "lab.terminal.lines", "range [6, 9] reaches past the end"),
        ({"first_line": 9}, "lab.terminal.first_line", "first_line 9 is past the end"),
        ({"first_line": 1, "last_line": 12}, "lab.terminal.last_line", "last_line 12 is past the end"),
    ],
)
def test_ranges_past_the_transcript_name_the_field(terminal: dict, field: str, message: str) -> None:
    with pytest.raises(UserError) as caught:
        selected_rows(lab_with(EIGHT, terminal))
    assert caught.value.field == field
    assert message in caught.value.message
    assert "the stored transcript (day02.measured/test-cpu.json) has 8 lines" in caught.value.message


def output_rows(*lines: str) -> list[Row]:
    return [Row(((line, None),), "output", i) for i, line in enumerate(lines)]


def test_elision_counts_transcript_lines_and_never_splits_a_wrapped_one() -> None:
    prompt = Row((("$ python lab.py", None),), "prompt")
    # Line 3 wraps onto three rows: rows 0..9 are prompt, l0, l1, l2, l3a, l3b, l3c, l4, l5, l6.
    rows = [prompt, *output_rows("l0", "l1", "l2"), *[Row(((p, None),), "output", 3) for p in "abc"]]
    rows += [Row(((f"l{i}", None),), "output", i) for i in (4, 5, 6)]
    shown = elide_rows(rows, 6)
    # keep 5 = 2 ahead + 3 behind: the cut is rows 2..6 (l1, l2, l3a, l3b), then widened to l3c
    # so line 3 is not split, leaving the tail l4, l5, l6; lines 1, 2, 3 are left out.
    assert [r.text for r in shown] == ["$ python lab.py", "l0", "⋯ 3 lines not shown ⋯", "l4", "l5", "l6"]
    assert shown[2].hidden == 3


def test_elision_takes_in_a_range_elision_beside_it() -> None:
    lab = lab_with("".join(f"l{i}\n" for i in range(1, 41)), {"lines": [[1, 10], [31, 40]]})
    rows = [Row((("$ python lab.py", None),), "prompt"), *selected_rows(lab)]
    assert len(rows) == 22 and rows[11].text == "⋯ 20 lines not shown ⋯"
    shown = elide_rows(rows, 10)
    # keep 9: 3 ahead (prompt, l1, l2), 6 behind (l35..l40); cut l3..l10, the 20, l31..l34.
    assert [r.text for r in shown] == ["$ python lab.py", "l1", "l2", "⋯ 32 lines not shown ⋯"] + [
        f"l{i}" for i in range(35, 41)
    ]
    assert sum(r.kind == "elided" for r in shown) == 1


# ---- fitting the window: 100 columns never wrap ------------------------------------------------


@pytest.mark.parametrize("size", list(style.SIZES))
def test_a_100_column_line_fits_unwrapped_at_every_size(size: str) -> None:
    fig = style.new_figure(size)
    width_pt, height_pt = (v * 72 for v in fig.get_size_inches())
    win = window(width_pt, height_pt)
    measure = drawn_width(fig)
    font, cols, _ = fit(win.body_width, win.body_height, [15, 100, 40], measure, win.pad / 2)
    assert cols >= 100
    assert font * CHAR_WIDTH_EM * 100 <= win.body_width  # by the font's own advance
    assert measure(font, 100) <= win.body_width + win.pad  # as drawn: inside the window
    assert font >= MIN_TERMINAL_FONT_PT


def test_the_floor_is_no_smaller_than_some_size_needs() -> None:
    """Half a point above MIN_TERMINAL_FONT_PT, a 100-column line would not fit at some size."""
    too_big = []
    for size in style.SIZES:
        fig = style.new_figure(size)
        win = window(*(v * 72 for v in fig.get_size_inches()))
        too_big.append(drawn_width(fig)(MIN_TERMINAL_FONT_PT + 0.5, 100) > win.body_width + win.pad / 2)
    assert any(too_big)


def test_narrow_output_keeps_the_legible_sizes() -> None:
    """Output that fits at MIN_FONT_PT or above is never shrunk further: short rows, big font."""
    win = window(576, 324)
    assert fit(win.body_width, win.body_height, [40] * 5)[0] == 17  # MAX_FONT_PT
    font, _, rows = fit(win.body_width, win.body_height, [40] * 200)  # too many rows: elided
    assert font == style.MIN_FONT_PT and rows < 200


def test_a_78_column_ruler_is_one_row_and_wider_lines_wrap(tmp_path: Path) -> None:
    ruler = "=" * 78
    text = f"{ruler}\nname        value\n{ruler}\n" + "x" * 130 + " end\n"
    fig, _ = draw(lab_with(text, {}))
    drawn = [t.get_text() for t in fig.texts]
    assert drawn.count(ruler) == 2 and "=" not in drawn
    # Past 100 columns the line wraps: its first row is the window's width, the rest follows.
    first, rest = [t for t in drawn if t.startswith("x")]
    assert 100 <= len(first) < 130 and first == "x" * len(first)
    assert rest == "x" * (130 - len(first)) + " end"


def test_wrapping_keeps_colours_and_the_line_it_came_from() -> None:
    (line,) = render("  \x1b[31mred words\x1b[0m and plain ones\n")
    rows = wrap_rows([Row(tuple(line), "output", 7)], 14)
    assert [r.text for r in rows] == ["  red words", "  and plain", "  ones"]
    assert rows[0].runs == (("  ", None), ("red words", RED))
    assert {r.source for r in rows} == {7}


def test_colour_runs_are_drawn_where_the_row_puts_them() -> None:
    fig, _ = draw(lab_with("\x1b[32mok\x1b[0m   12.5 ms\n", {}))
    by_text = {t.get_text(): t for t in fig.texts}
    assert by_text["ok"].get_color().upper() == GREEN
    assert "     12.5 ms" in by_text  # after two spaces for 'ok', from the row's start
    assert by_text["ok"].get_position()[0] == by_text["     12.5 ms"].get_position()[0]


# ---- alt text: the figures on the screen -----------------------------------------------------


def fig_(value: float, unit: str, label: str) -> dict:
    return {"value": value, "unit": unit, "about": f"about {label}", "label": label}


DAY1_LIKE = (
    "RAM   C pointer chase over 128 MiB (cc -O2),\n"  # line 1
    "on Linux 6.18.44\n"  # 2
    "\n"  # 3
    "RAM, random dependent load        \x1b[1m237.6\x1b[0m ns\n"  # 4
    "disk, 1 MiB sequential read     1,216.6 µs\n"  # 5
    "1 loopback round trip    = 77 RAM reads\n"  # 6
    "random / sequential 4 KiB read = 0.97x\n"  # 7
)
FIGURES = {
    "ram_array": fig_(128, "MiB", "RAM array"),
    "ram_random": fig_(237.618, "ns", "RAM, random read"),
    "disk_1mib": fig_(1216.6105, "us", "Disk, 1 MiB sequential read"),
    "in_ram_reads": fig_(77.157, "x", "RAM reads in a round trip"),
    "ratio": fig_(0.97154, "x", "Random over sequential"),
    "kernel": fig_(6.18, "x", "not a figure the lab printed"),
}


def test_a_figure_is_found_where_its_value_is_printed() -> None:
    lines = [ansi.line_text(line) for line in render(DAY1_LIKE)]
    names = [shown.name for shown in shown_figures(FIGURES, lines)]
    # 128 MiB on line 1; '6.18.44' is a version, not 6.18; the rest in the order printed.
    assert names == ["ram_array", "ram_random", "disk_1mib", "in_ram_reads", "ratio"]
    assert [shown.name for shown in shown_figures(FIGURES, lines[3:])] == names[1:]


@pytest.mark.parametrize(
    ("line", "figure", "found"),
    [
        ("took 1.2 ms", fig_(1216.6, "us", "t"), True),  # printed in another unit of its dimension
        ("took 1.3 ms", fig_(1216.6, "us", "t"), False),
        ("took 237.6 ms", fig_(237.618, "ns", "t"), False),  # the right digits, the wrong unit
        ("size 128 ns", fig_(128, "MiB", "s"), False),  # a unit of another dimension
        ("x 4 KiB", fig_(4, "KiB", "s"), False),  # one significant digit: a coincidence
        ("rate 45.2%", fig_(45.2, "%", "r"), True),
        ("v45.2 build", fig_(45.2, "x", "r"), False),  # part of a word
        ("2,000 reads", fig_(2000, "count", "n"), True),
        ("2000.4 reads", fig_(2000.44, "count", "n"), True),
        ("2000.4 reads", fig_(2000.46, "count", "n"), False),  # rounds to 2000.5
    ],
)
def test_a_printed_number_is_a_figure_only_when_it_rounds_to_it(line: str, figure: dict, found: bool) -> None:
    assert bool(shown_figures({"f": figure}, [line])) is found


def test_alt_text_names_the_shown_figures_in_whole_sentences() -> None:
    lab = lab_with(
        DAY1_LIKE, {"lines": [[1, 1], [4, 7]]}, figures=FIGURES, command="python \x1b[1mlab.py\x1b[0m"
    )
    fig, alt = draw(lab)
    intro = 'Terminal output of "python lab.py" in day02.lab, measured on Test CPU, 2 cores.'
    sentences = [
        intro,
        "RAM array: 128 MiB.",
        "RAM, random read: 237.6 ns.",  # as the window prints it (a post says 238 ns)
        "Disk, 1 MiB sequential read: 1,216.6 µs.",
        "RAM reads in a round trip: 77x.",  # '77 RAM reads': the figure's own unit
        "Random over sequential: 0.97x.",
    ]
    assert alt == " ".join(sentences)  # 231 characters: all fit under 250
    assert "\x1b" not in alt and "[1m" not in alt
    # Under a tighter limit, whole sentences from the start, as many as fit; never half of one.
    for limit in (len(intro), 120, 150, 178):
        cut = alt_text(lab, rows_of(lab), limit=limit)
        kept = max(k for k in range(1, len(sentences) + 1) if len(" ".join(sentences[:k])) <= limit)
        assert cut == " ".join(sentences[:kept]) and cut.endswith(".")


def rows_of(lab: dict) -> list[Row]:
    return [Row((("$ cmd", None),), "prompt"), *selected_rows(lab)]


def test_alt_text_leaves_out_figures_the_window_does_not_show() -> None:
    lab = lab_with(DAY1_LIKE, {"first_line": 4, "last_line": 5}, figures=FIGURES)
    _, alt = draw(lab)
    assert "RAM, random read: 237.6 ns." in alt and "Disk, 1 MiB sequential read: 1,216.6 µs." in alt
    assert "128 MiB" not in alt and "77x" not in alt


def test_a_table_too_long_for_the_alt_text_keeps_its_header_and_drops_its_rulers() -> None:
    """A lab of one table and no figure is read out by its last lines; twenty rows do not fit,
    so the header goes first, then '…' and the last rows that fit, and the ruler under the
    header (a line of dashes says nothing) is never read out."""
    text = (
        "Membership test\n\n size  dict_ns\n--------------\n"
        + "".join(f" {10**k}  {k}.5\n" for k in range(1, 21))
        + "done\n"
    )
    table = {"line": " size  dict_ns", "columns": [["size", "count"], ["dict", "ns"]]}
    lab = lab_with(text, {}, figures={}, tables={"t": table})
    alt = alt_text(lab, rows_of(lab), limit=250)
    intro = 'Terminal output of "python lab.py" in day02.lab, measured on Test CPU, 2 cores:'
    rows = "; ".join(f"{10**k} {k}.5" for k in range(16, 21))  # the five that fit under 250
    assert alt == f"{intro} size dict_ns; …; {rows}; done"
    assert "---" not in alt and len(alt) <= 250
    short = lab_with(
        "size  dict_ns\n======\n10  1.5\n", {}, figures={}, tables={"t": {"line": "size  dict_ns"}}
    )
    assert alt_text(short, rows_of(short), limit=250) == f"{intro} size dict_ns; 10 1.5"


def test_a_long_command_is_shortened_inside_its_quotes() -> None:
    lab = lab_with(EIGHT, {}, command="python lab.py " + "--flag " * 60, figures={})
    alt = alt_text(lab, rows_of(lab), limit=120)
    assert alt.startswith('Terminal output of "python lab.py --flag') and len(alt) <= 120
    assert '…" in day02.lab, measured on Test CPU, 2 cores:' in alt


def draw(lab: dict) -> tuple[object, str]:
    from engine.charts import terminal as chart

    lab = {"when": "2026-01-31 12:00 UTC", **lab}
    with style.theme():
        return chart.terminal({"day": 2, "title": "t", "lab": lab}, size=style.SIZES["x"])


# ---- the spec: both forms, order, the cap; and the build's one line ---------------------------


@pytest.fixture
def day01_copy(tmp_path: Path) -> Path:
    """Day 1's spec, lab and measurement in a folder of their own, for a test to change."""
    root = tmp_path / "days"
    for name in ("day01.lab", "day01.measured"):
        shutil.copytree(REPO / "days" / name, root / name)
    shutil.copy(REPO / "days" / "day01.yaml", root / "day01.yaml")
    return root / "day01.yaml"


def with_terminal(spec: Path, terminal: str) -> Path:
    text = spec.read_text()
    assert "terminal: {first_line: 11}" in text
    spec.write_text(text.replace("terminal: {first_line: 11}", f"terminal: {terminal}"))
    return spec


@pytest.mark.parametrize(
    ("terminal", "field", "words"),
    [
        ("{lines: [[11, 14], [12, 20]]}", "lab.terminal.lines", "overlap or are out of order"),
        ("{lines: [[16, 20], [11, 14]]}", "lab.terminal.lines", "overlap or are out of order"),
        ("{lines: [[11, 14], [15, 20]]}", "lab.terminal.lines", "write them as one, [11, 20]"),
        ("{lines: [[14, 11]]}", "lab.terminal.lines", "ends before it starts"),
        (
            "{lines: [" + ", ".join(f"[{2 * i + 1}, {2 * i + 1}]" for i in range(9)) + "]}",
            "lab.terminal.lines",
            "8",
        ),
        ("{lines: []}", "lab.terminal.lines", "1"),
        ("{lines: [[11, 14]], first_line: 11}", "lab.terminal", "not both"),
        ("{lines: [[11, 14, 15]]}", "lab.terminal.lines.0", "2"),
        ("{lines: [[0, 4]]}", "lab.terminal.lines.0.0", "1"),
        ("{last_line: 3, first_line: 11}", "lab.terminal", "before first_line"),
    ],
)
def test_spec_mistakes_in_the_ranges_are_one_line_naming_the_field(
    day01_copy: Path, terminal: str, field: str, words: str
) -> None:
    from engine.spec import load_spec

    with pytest.raises(UserError) as caught:
        load_spec(with_terminal(day01_copy, terminal))
    assert caught.value.field == field
    assert words in caught.value.message and "\n" not in caught.value.line()


def test_ranges_load_and_past_the_transcript_the_build_says_which_field(
    day01_copy: Path, tmp_path: Path
) -> None:
    from engine.pipeline import build
    from engine.spec import load_spec

    spec = with_terminal(day01_copy, "{lines: [[11, 16], [18, 30]]}")
    assert load_spec(spec).lab is not None
    with pytest.raises(UserError) as caught:
        build(spec, tmp_path / "out")
    assert (caught.value.file, caught.value.field) == (str(spec), "lab.terminal.lines")
    assert "range [18, 30] reaches past the end" in caught.value.message
    assert not (tmp_path / "out" / "day01").exists()
