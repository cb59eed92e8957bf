"""Stated limits: every input file is a regular file within its size, read before work starts.

Each test reproduces a hostile input that used to hang, eat memory or end in a traceback, and
asserts the one line (file, field, the limit) and exit status 2 instead.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import limits
from engine.cli import main
from engine.errors import UserError
from engine.limits import read_bytes_limited, read_text_limited
from engine.workload import load_trace
from engine.workload import trace as trace_module

from helpers import LAB_TRACE, examples

DEV_ZERO = Path("/dev/zero")


def one_line(capsys) -> str:
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# ---- the reader -------------------------------------------------------------------------------


@pytest.mark.skipif(not DEV_ZERO.exists(), reason="needs /dev/zero")
def test_a_device_is_refused_without_reading_it():
    started = time.perf_counter()
    with pytest.raises(UserError, match="not a regular file") as caught:
        read_bytes_limited(DEV_ZERO, limits.MAX_TRACE_BYTES, "workload")
    assert caught.value.file == str(DEV_ZERO)
    assert time.perf_counter() - started < 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path):
    fifo = tmp_path / "trace.csv"
    os.mkfifo(fifo)
    result: list[BaseException] = []
    reader = threading.Thread(target=lambda: _catch(result, load_trace, fifo), daemon=True)
    reader.start()
    reader.join(timeout=5)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert isinstance(result[0], UserError) and "regular file" in result[0].message


def _catch(box: list[BaseException], fn, *args) -> None:
    try:
        fn(*args)
    except BaseException as err:  # noqa: BLE001 (handed to the test)
        box.append(err)


def test_a_folder_is_named_as_a_folder(tmp_path):
    with pytest.raises(UserError, match="is a folder, not a workload file"):
        load_trace(tmp_path)


def test_a_file_over_its_limit_is_refused_with_the_limit(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 2049)
    with pytest.raises(UserError) as caught:
        read_bytes_limited(path, 2048, "measurement")
    assert caught.value.message == "2,049 bytes, over the limit of 2 KiB for a measurement file"
    assert read_bytes_limited(path, 2049, "measurement") == b"x" * 2049


def test_not_utf8_names_the_byte_and_line(tmp_path):
    path = tmp_path / "day05.yaml"
    path.write_bytes(b"day: 5\ntitle: caf\xe9\n")
    with pytest.raises(UserError) as caught:
        read_text_limited(path, 1000, "spec")
    assert caught.value.line() == f"{path}: not UTF-8 text (byte 18, line 2): save the file as UTF-8"


# ---- the commands: one line, exit 2, fast ------------------------------------------------------


@pytest.mark.skipif(not DEV_ZERO.exists(), reason="needs /dev/zero")
@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--workload", str(LAB_TRACE), "--slots", "4", "--step-time", "measured:/dev/zero"],
        ["simulate", "--workload", "/dev/zero", "--slots", "4"],
        ["kv", "--model", "/dev/zero", "--gpu", "h100-80gb"],
        ["build", "/dev/zero"],
        ["check", "/dev/zero"],
    ],
)
def test_unbounded_inputs_are_one_line_and_exit_2(capsys, argv, tmp_path):
    started = time.perf_counter()
    code = main(argv + (["--out", str(tmp_path / "out")] if argv[0] == "build" else []))
    assert code == 2
    line = one_line(capsys)
    assert "/dev/zero" in line
    assert time.perf_counter() - started < 5


def test_a_spec_that_is_not_utf8_is_one_line(capsys, days_copy, tmp_path):
    spec = days_copy / "day37.yaml"
    spec.write_bytes(spec.read_bytes().replace(b"title: ", b"title: \xff", 1))
    assert main(["build", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert one_line(capsys).startswith(f"{spec}: not UTF-8 text")


def test_deep_yaml_nesting_is_one_line(capsys, tmp_path):
    spec = tmp_path / "day05.yaml"
    spec.write_text("day: " + "[" * 5000 + "]" * 5000 + "\n")
    assert main(["build", str(spec), "--out", str(tmp_path / "out")]) == 2
    line = one_line(capsys)
    assert line.startswith(f"{spec}: line 1, column ") and "nested more than 64 levels deep" in line


# ---- traces: the fast reader and the careful one agree ----------------------------------------


def write(tmp_path: Path, text: str | bytes, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


@pytest.mark.parametrize(
    "text, row, column, words",
    [
        ("output_tokens\n5\n1_000\n", 3, "output_tokens", "whole number"),
        ("output_tokens\n\u0661\u0662\n", 2, "output_tokens", "whole number"),  # Arabic-Indic 12
        ("output_tokens\n\uff11\n", 2, "output_tokens", "whole number"),  # full-width 1
        ("output_tokens,arrival_time\n5,1_0\n", 2, "arrival_time", "seconds"),
        ("output_tokens,arrival_time\n5,\u0661\n", 2, "arrival_time", "seconds"),
        ("output_tokens,prompt_tokens,output_tokens\n5,1,7\n", 1, "output_tokens", "given twice"),
    ],
)
def test_cells_python_would_accept_but_a_person_did_not_mean(tmp_path, text, row, column, words):
    path = write(tmp_path, text)
    with pytest.raises(UserError) as caught:
        load_trace(path)
    assert (caught.value.file, caught.value.field) == (str(path), f"row {row}, column {column}")
    assert words in caught.value.message


def test_the_fast_reader_takes_plain_traces(tmp_path, monkeypatch):
    """The lab trace and a three-column trace go through numpy, not the row-by-row reader."""

    def refuse(*_args):
        raise AssertionError("the careful reader was used for a plain trace")

    monkeypatch.setattr(trace_module, "_parse_trace", refuse)
    assert load_trace(LAB_TRACE).summary()["total_output_tokens"] == 13_280
    path = write(tmp_path, "\ufeffoutput_tokens, prompt_tokens ,arrival_time\r\n5,0,0\r\n\r\n7,3,0.1\r\n")
    w = load_trace(path)
    assert w.output_tokens.tolist() == [5, 7] and w.arrival_time.tolist() == [0.0, 0.1]


def test_a_trace_over_the_request_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_module, "MAX_REQUESTS", 3)
    with pytest.raises(UserError, match="more than 3 requests"):
        load_trace(write(tmp_path, "output_tokens\n1\n2\n3\n4\n"))
    with pytest.raises(UserError, match="more than 3 requests") as caught:
        load_trace(write(tmp_path, 'output_tokens\n1\n2\n3\n"4"\n'))  # the careful reader
    assert caught.value.field == "row 5"


_cell = st.one_of(
    st.integers(-3, 12_000_000).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", " 7 ", "1e3", "5.0", "1_000", "\u0661", "+4", ".5", "0x10", "nan", '"9"']),
)


@settings(max_examples=examples(30, 600), deadline=None)
@given(rows=st.lists(st.tuples(_cell, _cell, _cell), min_size=1, max_size=6))
def test_fast_and_careful_readers_agree(tmp_path_factory, rows):
    """On any table of cells, the two readers give the same workload or the same refusal."""
    import csv
    import io

    folder = tmp_path_factory.mktemp("t")
    text = "output_tokens,prompt_tokens,arrival_time\n" + "\n".join(",".join(r) for r in rows) + "\n"
    path = write(folder, text)
    try:
        got = load_trace(path)
    except UserError as err:
        got = err.line()
    try:
        want = trace_module._parse_trace(csv.reader(io.StringIO(text, newline="")), path)
    except UserError as err:
        want = err.line()
    except csv.Error:
        return
    if isinstance(want, str):
        assert got == want
    else:
        assert not isinstance(got, str), got
        for name in ("output_tokens", "prompt_tokens", "arrival_time"):
            assert np.array_equal(getattr(got, name), getattr(want, name))


def _levels(value: object) -> int:
    """Levels of lists and mappings, by recursion (the naive reference for yamlfile's walk)."""
    if isinstance(value, dict):
        return 1 + max((_levels(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_levels(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize("style", ["flow", "block"])
def test_yaml_nesting_is_counted_in_levels_of_lists_and_mappings(style):
    """64 levels read (counted by the recursion above), 65 are one line naming where the 65th
    opens; the same whether written in brackets or indented, where an indented list under a
    key opens no block of its own in the scanner's tokens."""
    from engine import yamlfile

    def text(levels: int) -> str:
        if style == "flow":
            return "[" * levels + "]" * levels
        value: object = 1  # mappings and lists in turn, dumped indented: k:\n- k:\n  - k: …
        for level in range(levels):
            value = {"k": value} if level % 2 else [value]
        return yaml.safe_dump(value, default_flow_style=False)

    assert _levels(yamlfile.parse(text(64), "f.yaml")) == 64
    with pytest.raises(UserError, match="nested more than 64 levels deep") as caught:
        yamlfile.parse(text(65), "f.yaml")
    if style == "flow":
        assert caught.value.field == "line 1, column 65"


def test_a_chain_of_aliases_nests_as_deep_as_it_is_long():
    """Each alias a list around the one before: two lines of text apart, 70 levels once followed."""
    from engine import yamlfile

    chain = "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 62))
    assert _levels(yamlfile.parse(chain, "f.yaml")) == 63
    with pytest.raises(UserError, match="nested more than 64 levels deep"):
        yamlfile.parse(chain + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(62, 70)), "f.yaml")


@pytest.mark.parametrize("text", ["x: &a [*a]\n", "a: &a {b: *a}\n", "a: &a [1, [2, *a]]\n"])
def test_an_alias_inside_its_own_anchor_is_one_line_not_a_walk_without_end(text):
    """A node that holds itself stands for a value without end: refused where it opens, in
    bounded time and memory, where a walk that follows aliases would never end."""
    from engine import yamlfile

    from helpers import bounded

    with pytest.raises(UserError) as caught, bounded(text):
        yamlfile.parse(text, "f.yaml")
    assert (
        caught.value.line()
        == "f.yaml: line 1, column 4: an alias inside its own anchor stands for a value without end"
    )
