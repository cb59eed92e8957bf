"""The lab section: run a day's own script once, keep its figures with provenance, build from
them without rerunning, and flag a lab that changed since. Every lab here is the tiny one in
tests/data/tinylab (a subprocess of well under a second), never Day 1's real lab."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from engine import units
from engine.errors import UserError
from engine.experiments.lab import results as section
from engine.experiments.lab.measure import measure
from engine.sections import Inputs, SpecLocation
from engine.spec import load_spec

REPO = Path(__file__).resolve().parent.parent
TINY = Path(__file__).resolve().parent / "data" / "tinylab"

SPEC = """\
day: 2
series: {{name: 60 days of system design, length: 60}}
title: A tiny lab
repository: github.com/example/repo
hashtags: [SystemDesign, Testing, LearningInPublic]
lab:
  script: day02.lab/lab.py
  args: [{mode}]
  timeout_s: {timeout}
  figures:
    wait: {{unit: ns, about: how long the tiny lab says it waited}}
    size: {{unit: KiB, about: how much the tiny lab says it read}}
charts: [terminal]
measured: latest
"""


def make_day(root: Path, mode: str = "good", timeout: float = 10) -> Path:
    days = root / "days"
    (days / "day02.lab").mkdir(parents=True, exist_ok=True)
    shutil.copy(TINY / "lab.py", days / "day02.lab" / "lab.py")
    spec = days / "day02.yaml"
    spec.write_text(SPEC.format(mode=mode, timeout=timeout), encoding="utf-8")
    return spec


def run_lab(spec: Path) -> tuple[dict, Path]:
    return measure(spec, echo=io.StringIO(), status=io.StringIO())


def stored(spec: Path) -> list[Path]:
    return sorted((spec.parent / "day02.measured").glob("*.json"))


@pytest.fixture(scope="module")
def measured_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A day whose good lab ran once for the module: the days/ folder and the measurement."""
    root = tmp_path_factory.mktemp("measured")
    doc, _ = run_lab(make_day(root))
    return root / "days", doc


def measured_day(measured_once: tuple[Path, dict], root: Path) -> tuple[Path, dict, Path]:
    """A private copy of that day, for a test that needs an earlier measurement and may change
    the lab or the spec: (spec, measurement, its file). A copy holds the same lab files and
    arguments, so it is as fresh as the run itself (test_good_run… runs one of its own)."""
    days, doc = measured_once
    shutil.copytree(days, root / "days")
    spec = root / "days" / "day02.yaml"
    (path,) = stored(spec)
    return spec, doc, path


# ---- running a lab -----------------------------------------------------------------------------


def test_good_run_writes_figures_in_the_specs_units_with_provenance(tmp_path: Path) -> None:
    spec = make_day(tmp_path)
    doc, path = run_lab(spec)
    assert path.parent == spec.parent / "day02.measured" and path.is_file()
    assert json.loads(path.read_text()) == doc
    # Converted into the spec's units: 1.5 us = 1500 ns, 4096 B = 4 KiB.
    assert doc["figures"]["wait"] == {
        "value": pytest.approx(1500),
        "unit": "ns",
        "about": "how long the tiny lab says it waited",
    }
    assert doc["figures"]["size"]["value"] == pytest.approx(4.0)
    machine = doc["machine"]
    for key in ("name", "cpu", "cores", "memory_bytes", "os", "kernel", "python", "arch"):
        assert machine[key] not in (None, "")
    assert machine["cores"] == os.cpu_count()
    assert machine["python"] == ".".join(map(str, sys.version_info[:3]))
    assert datetime.fromisoformat(doc["date"]).utcoffset().total_seconds() == 0
    assert doc["command"] == "python lab.py good"
    assert 0 < doc["wall_seconds"] < 10
    assert "tiny lab: waiting and sizing" in doc["transcript"]["text"]
    assert doc["notes"] == ["tiny lab: nothing measured, two fixed figures", "a note on two lines, in red"]
    # The hash is sha256 over (length-prefixed) relative path and bytes of each file, sorted.
    data = (spec.parent / "day02.lab" / "lab.py").read_bytes()
    by_hand = hashlib.sha256()
    by_hand.update(len(b"lab.py").to_bytes(8, "big") + b"lab.py")
    by_hand.update(len(data).to_bytes(8, "big") + data)
    assert doc["lab"] == {
        "script": "day02.lab/lab.py",
        "files_sha256": by_hand.hexdigest(),
        "files": ["lab.py"],
    }


@pytest.mark.parametrize(
    ("mode", "field", "words"),
    [
        ("fail", "lab.script", "exit status 3 (boom: the lab fell over)"),
        ("none", "lab.figures", "recorded no figures"),
        ("missing", "lab.figures.size", "did not report"),
        ("wrong_unit", "lab.figures.wait.unit", "the spec says ns, the lab reported 'MiB'"),
        ("unknown", "lab.figures", "reported 'extra'"),
    ],
)
def test_a_bad_run_is_one_line_and_keeps_the_earlier_measurement(
    measured_once: tuple[Path, dict], tmp_path: Path, mode: str, field: str, words: str
) -> None:
    spec, _, earlier = measured_day(measured_once, tmp_path)
    before = earlier.read_bytes()
    make_day(tmp_path, mode=mode)
    with pytest.raises(UserError) as caught:
        run_lab(spec)
    assert caught.value.field == field and words in caught.value.message
    assert "\n" not in caught.value.line()
    assert stored(spec) == [earlier] and earlier.read_bytes() == before


def test_a_lab_past_its_timeout_is_stopped_and_nothing_is_written(tmp_path: Path) -> None:
    spec = make_day(tmp_path, mode="sleep", timeout=0.5)
    start = time.monotonic()
    with pytest.raises(UserError) as caught:
        run_lab(spec)
    assert time.monotonic() - start < 5  # stopped at 0.5 s, not after the lab's 30 s sleep
    assert caught.value.field == "lab.timeout_s" and "past 0.5 s" in caught.value.message
    assert stored(spec) == []


def test_a_child_left_behind_does_not_hold_the_run_until_its_timeout(tmp_path: Path) -> None:
    spec = make_day(tmp_path, mode="orphan", timeout=20)
    start = time.monotonic()
    doc, _ = run_lab(spec)
    assert time.monotonic() - start < 10
    assert doc["figures"]["wait"]["value"] == pytest.approx(1500)


def test_the_command_line_says_one_line_and_exits_2(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The `engine lab` command, run in this process (that `python -m engine` exits with what
    main returns is test_batching_cli's); capfd reads file descriptor 2, so the lab's own
    output, written there by its child process, is read too."""
    from engine.cli import main

    spec = make_day(tmp_path, mode="fail")
    assert main(["lab", str(spec), "--quiet"]) == 2
    err = capfd.readouterr().err
    assert err.strip().splitlines()[-1].startswith(f"{spec}: lab.script: the lab failed")
    assert stored(spec) == []


def test_labkit_as_a_plain_script_prints_and_writes_nothing(tmp_path: Path) -> None:
    shutil.copy(REPO / "engine" / "lab" / "kit" / "labkit.py", tmp_path / "labkit.py")
    shutil.copy(TINY / "lab.py", tmp_path / "lab.py")
    env = {k: v for k, v in os.environ.items() if k != "LABKIT_FIGURES"}
    out = subprocess.run(
        [sys.executable, "lab.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 0
    assert "[labkit] wait = 1.5 us" in out.stderr and "[labkit] size = 4096 B" in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".pyc" and p.is_file()) == [
        "lab.py",
        "labkit.py",
    ]


# ---- building from the stored measurement --------------------------------------------------------


def results_for(spec_path: Path) -> dict:
    spec = load_spec(spec_path)
    return section.run(
        spec.lab, SpecLocation(spec_path=spec_path), Inputs(day=spec.day, measured=spec.measured)
    )


def test_build_reads_the_measurement_and_never_reruns_the_lab(
    measured_once: tuple[Path, dict], tmp_path: Path
) -> None:
    spec, doc, _ = measured_day(measured_once, tmp_path)
    # Were the build to run the lab, this lab would leave a file behind.
    marker = tmp_path / "ran"
    lab = spec.parent / "day02.lab" / "lab.py"
    lab.write_text(f"open({str(marker)!r}, 'w').close()\n" + lab.read_text())
    results = results_for(spec)
    assert not marker.exists()
    assert results["figures"]["wait"]["value"] == pytest.approx(1500)
    assert results["figures"]["wait"]["source"] == f"measured on {doc['machine']['name']}"
    assert results["figures"]["wait"]["text"] == "1.5 µs"
    assert results["stale"] is True  # and the edit is noticed


def test_a_changed_lab_is_flagged_stale_in_the_summary(
    measured_once: tuple[Path, dict], tmp_path: Path
) -> None:
    spec, doc, _ = measured_day(measured_once, tmp_path)
    fresh = results_for(spec)
    assert fresh["stale"] is False and section.headline(fresh)[-1].startswith("lab (measured on")
    (spec.parent / "day02.lab" / "helper.txt").write_text("a new file is a change too\n")
    stale = results_for(spec)
    when = doc["date"].replace("T", " ")[:16] + " UTC"
    message = (
        f"the lab changed since these numbers were measured on {doc['machine']['name']} at "
        f"{when}: run make lab-day02"
    )
    assert stale["stale_message"] == message
    assert section.headline(stale)[-1] == f"STALE: {message}"
    assert section.review_warnings(stale) == [message]
    # Hidden files (a lab's scratch) and bytecode are not the lab.
    (spec.parent / "day02.lab" / "helper.txt").unlink()
    (spec.parent / "day02.lab" / ".scratch").write_text("x")
    assert results_for(spec)["stale"] is False


def test_changed_arguments_are_stale_too(measured_once: tuple[Path, dict], tmp_path: Path) -> None:
    spec, _, _ = measured_day(measured_once, tmp_path)
    assert results_for(spec)["stale"] is False
    spec.write_text(spec.read_text().replace("args: [good]", "args: [good, --more]"))
    assert "arguments changed" in results_for(spec)["stale_reason"]


def test_a_lab_day_without_a_measurement_says_how_to_make_one(tmp_path: Path) -> None:
    spec = make_day(tmp_path)
    with pytest.raises(UserError, match="no measurement yet .*: run make lab-day02"):
        results_for(spec)


# ---- the spec ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (("unit: ns", "unit: furlongs"), "lab.figures.wait.unit"),
        (("script: day02.lab/lab.py", "script: lab.py"), "lab.script"),
        (("script: day02.lab/lab.py", "script: ../x/lab.py"), "lab.script"),
        (("timeout_s: 10", "timeout_s: 0"), "lab.timeout_s"),
        (("    wait: {", "    Wait: {"), "lab.figures.Wait"),
    ],
)
def test_spec_mistakes_name_the_field(tmp_path: Path, change: tuple[str, str], field: str) -> None:
    spec = make_day(tmp_path)
    spec.write_text(spec.read_text().replace(*change))
    with pytest.raises(UserError) as caught:
        load_spec(spec)
    assert caught.value.field == field


# ---- units and filters -----------------------------------------------------------------------------


def test_units_convert_within_a_dimension_and_refuse_across() -> None:
    assert units.convert(1.5, "us", "ns") == pytest.approx(1500)
    assert units.convert(4096, "B", "KiB") == 4
    assert units.convert(1, "GiB", "MiB") == 1024
    with pytest.raises(ValueError, match="bytes, not a time"):
        units.convert(1, "MiB", "ns")


def test_filters_print_each_dimension_in_its_best_unit() -> None:
    from engine.render import posts

    assert posts.duration(9.2e-8) == "92 ns"
    assert posts.duration({"value": 15.3, "unit": "us"}) == "15 µs"
    assert posts.duration(0.9997e-6) == "1.0 µs"  # not "1,000 ns"
    assert posts.duration(2.5) == "2.5 s"
    assert posts.bytesize(4096) == "4.0 KiB" and posts.bytesize(2**28) == "256 MiB"
    rtt, ram = {"value": 11, "unit": "us"}, {"value": 100, "unit": "ns"}
    assert posts.ratio(rtt, ram) == "110"  # "1 loopback round trip = 110 RAM reads"
    assert posts.figure({"value": 3.44, "unit": "x"}) == "3.4x"
    assert posts.figure({"value": 1700, "unit": "MiB/s"}) == "1.7 GiB/s"
    with pytest.raises(ValueError):
        posts.ratio(rtt, {"value": 1, "unit": "MiB"})


# ---- the terminal chart ------------------------------------------------------------------------------


def terminal_results(lines: int) -> dict:
    text = "".join(f"line {i}: some output\n" for i in range(1, lines + 1))
    lab = {
        "command": "python lab.py --quick",
        "lab_folder": "day02.lab",
        "source": "measured on Test CPU, 2 cores",
        "when": "2026-01-31 12:00 UTC",
        "transcript": {"text": text, "lines": lines, "truncated": False},
        "terminal": {},
    }
    return {"day": 2, "title": "A tiny lab", "lab": lab}


def test_terminal_chart_is_the_same_bytes_every_time_at_both_sizes(tmp_path: Path) -> None:
    from engine import charts

    results = terminal_results(8)
    from engine.charts import drawcache

    with drawcache.fresh():  # both draws from scratch, not the second from the drawing cache
        first = charts.draw("terminal", results, tmp_path / "a")
    with drawcache.fresh():
        again = charts.draw("terminal", results, tmp_path / "b")
    assert first.path.read_bytes() == again.path.read_bytes()
    assert (first.width, first.height) == (1600, 900)
    portrait = charts.draw("terminal", results, tmp_path / "a", size="linkedin_portrait")
    assert (portrait.width, portrait.height) == (1080, 1350)
    assert first.alt_text.startswith(
        'Terminal output of "python lab.py --quick" in day02.lab, measured on Test CPU, 2 cores:'
    )
    assert first.alt_text.endswith("line 8: some output") and len(first.alt_text) <= 250


def test_long_output_is_elided_visibly() -> None:
    from engine.charts.terminal import clip, elide

    lines = [f"l{i}" for i in range(50)]
    shown = elide(lines, 10)
    assert len(shown) == 10 and shown[0] == "l0" and shown[-1] == "l49"
    marker = [s for s in shown if "lines not shown" in s]
    assert marker == [f"⋯ {50 - 9} lines not shown ⋯"]
    assert elide(lines[:5], 10) == lines[:5]
    assert clip("abcdef", 4) == "abc…" and clip("abc", 4) == "abc"


def test_terminal_shows_the_lines_as_a_terminal_would_and_the_selection() -> None:
    from engine.charts.terminal import transcript_lines

    lab = {"transcript": {"text": "a\tb\n10%\r50%\r100%\n\x1b[32mgreen\x1b[0m\nlast\n\n\n"}, "terminal": {}}
    assert transcript_lines(lab) == ["a       b", "100%", "green", "last"]
    lab["terminal"] = {"first_line": 2, "last_line": 3}
    assert transcript_lines(lab) == ["100%", "green"]
