"""Day 1 builds from the committed measurement of its lab, on any machine, without running it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.pipeline import build

REPO = Path(__file__).resolve().parent.parent
DAYS = REPO / "days"


@pytest.fixture(scope="module")
def day01(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out")
    build(DAYS / "day01.yaml", out)
    return out / "day01"


def test_drafts_quote_the_measured_figures_labelled_with_the_machine(day01: Path) -> None:
    measured = sorted((DAYS / "day01.measured").glob("*.json"))
    doc = json.loads(measured[-1].read_text())
    results = json.loads((day01 / "results.json").read_text())
    lab = results["lab"]
    assert lab["source"] == f"measured on {doc['machine']['name']}"
    assert lab["stale"] is False, "the committed lab differs from the measured one: run make lab-day01"
    linkedin = (day01 / "linkedin.md").read_text()
    thread = (day01 / "x-thread.md").read_text()
    assert f"Measured on {doc['machine']['name']}" in linkedin
    assert f"Measured on {doc['machine']['name']}" in thread
    ram = lab["figures"]["ram_random"]
    assert ram["value"] == pytest.approx(doc["figures"]["ram_random"]["value"])
    assert f"{ram['label']}: {ram['text']}" in linkedin
    # The published figure sits beside it, with its source named.
    assert "(the table: 100 ns)" in linkedin and "Dean and Norvig" in linkedin


def test_terminal_screenshot_and_alt_text_at_both_sizes(day01: Path) -> None:
    results = json.loads((day01 / "results.json").read_text())
    charts = {c["file"]: c for c in results["charts"]}
    assert (charts["terminal.png"]["width"], charts["terminal.png"]["height"]) == (1600, 900)
    portrait = charts["terminal-linkedin_portrait.png"]
    assert (portrait["width"], portrait["height"]) == (1080, 1350)
    for name in ("terminal", "terminal-linkedin_portrait", "figures_table"):
        alt = (day01 / f"{name}.alt.txt").read_text().strip()
        assert 0 < len(alt) <= 250
    page = (day01 / "index.html").read_text()
    assert "Lab: day01.lab" in page and "terminal.png" in page


def test_day01s_labkit_writes_a_format_the_engine_reads() -> None:
    """The lab carries its own copy so it runs anywhere, and keeps the copy it was measured with
    (its files are hashed: a new copy would mark the measurement stale). The engine must go on
    reading the file format that copy writes, and the kit must name the format it writes."""
    from engine.experiments.lab.judge import KNOWN_VERSIONS, VERSION

    def version(path: Path) -> int:
        found = re.search(r"^VERSION = (\d+)$", path.read_text(), re.M)
        assert found, f"{path} names no VERSION"
        return int(found.group(1))

    assert version(DAYS / "day01.lab" / "labkit.py") in KNOWN_VERSIONS
    assert version(REPO / "engine" / "lab" / "kit" / "labkit.py") == VERSION


def test_the_carousel_carries_the_terminal_screenshot(day01: Path) -> None:
    """Day 1's carousel: the lab's transcript on slide 2, with the measured RAM figure on it as
    text (the slide's words), and the screenshot's alt text naming the machine and the figure."""
    from pypdf import PdfReader

    results = json.loads((day01 / "results.json").read_text())
    reader = PdfReader(day01 / "carousel.pdf")
    assert len(reader.pages) == 4
    slide = " ".join(reader.pages[1].extract_text().split())
    assert "The lab's own output, as it ran." in slide
    assert f"{results['lab']['figures']['ram_random']['text']}" in slide
    alt = (day01 / "terminal.alt.txt").read_text().strip()
    ram = results["lab"]["figures"]["ram_random"]
    assert results["lab"]["source"] in alt
    # the figure as the screenshot prints it (237.6 ns, where the posts round to 238 ns)
    said = re.search(rf"{re.escape(ram['label'])}: ([0-9.,]+) ns\.", alt)
    assert said is not None, alt
    assert f"{said.group(1)} ns" in results["lab"]["transcript"]["text"]
    assert abs(float(said.group(1).replace(",", "")) - ram["value"]) <= 0.05
