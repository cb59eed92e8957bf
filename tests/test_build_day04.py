"""Day 4 through the same pipeline: numbers agree with the closed forms, and Day 37 cites them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.queueing import erlang_c, mmc_mean_wait
from engine.spec import load_spec


@pytest.fixture(scope="module")
def built(built_out: Path) -> Path:
    return built_out / "day04"


@pytest.fixture(scope="module")
def results(built: Path) -> dict:
    return json.loads((built / "results.json").read_text())


def test_day04_gets_a_carousel(built: Path, results: dict) -> None:
    """Four slides, read back with pypdf; the wait ratio on the third is the post's own figure."""
    from pypdf import PdfReader

    reader = PdfReader(built / "carousel.pdf")
    assert len(reader.pages) == 4
    assert {(float(p.mediabox.width), float(p.mediabox.height)) for p in reader.pages} == {(1080, 1350)}
    ratio = results["queueing"]["lines"]["wait_ratio"]
    said = f"Separate lines wait {ratio:.1f}x as long"
    assert said in " ".join(reader.pages[2].extract_text().split())
    assert said in (built / "linkedin.md").read_text()
    assert not (built / "slot_timeline_animation.gif").exists()  # Day 4 asks for no animation


def test_shared_line_agrees_with_erlang_c(results):
    lines = results["queueing"]["lines"]
    shared = lines["shared"]
    # Erlang C, independently: c = 2 servers at 90 % each → offered load 1.8 erlangs.
    assert erlang_c(2, 1.8) == pytest.approx(0.852631578947, rel=1e-9)
    exact_ms = mmc_mean_wait(2, arrival_rate=180.0, service_mean=0.010) * 1000
    assert exact_ms == pytest.approx(0.852631578947 * 10 / (2 - 1.8), rel=1e-9)  # = 42.63 ms
    # Within 4 batch-means standard errors (about ±7 ms at 300,000 requests).
    assert abs(shared["mean_wait_ms"] - exact_ms) <= 4 * shared["mean_wait_se_ms"]
    assert shared["prob_wait"] == pytest.approx(0.8526, abs=0.01)
    assert lines["shared_matches_theory"] is True


def test_separate_lines_wait_longer_by_the_mm1_gap(results):
    lines = results["queueing"]["lines"]
    # Random split: each line is an M/M/1 at ρ = 0.9 → mean wait ρS/(1−ρ) = 90 ms; shared 42.6 ms.
    assert lines["separate_random"]["mean_wait_ms"] == pytest.approx(90.0, rel=0.1)
    assert lines["wait_ratio"] == pytest.approx(90.0 / 42.63, rel=0.12)
    assert 1.0 < lines["round_robin_wait_ratio"] < lines["wait_ratio"]


def test_hockey_stick_follows_service_over_one_minus_rho(results):
    for row in results["queueing"]["mm1"]:
        if row["utilisation"] <= 0.9:  # at 0.95+ a 300k run is too short for a tight check
            assert row["mean_time_in_system_ms"] == pytest.approx(10.0 / (1 - row["utilisation"]), rel=0.05)


def test_posts_cite_the_computed_gap(built_out):
    results = json.loads((built_out / "day04" / "results.json").read_text())
    ratio = f"{results['queueing']['lines']['wait_ratio']:.1f}x"
    assert ratio in (built_out / "day04" / "linkedin.md").read_text()
    assert ratio in (built_out / "day04" / "x-thread.md").read_text()


def test_day37_cites_day4_from_day4s_spec(built_out):
    day37 = json.loads((built_out / "day37" / "results.json").read_text())
    (link,) = day37["links_back"]
    assert link["day"] == 4 and link["figure"]["source"] == "simulated"
    day4 = json.loads((built_out / "day04" / "results.json").read_text())
    assert link["figure"]["wait_ratio"] == day4["queueing"]["lines"]["wait_ratio"]
    assert f"{link['figure']['wait_ratio']:.1f}x as long" in (built_out / "day37" / "linkedin.md").read_text()


def test_day37_cites_day4_as_its_spec_says_now(days_copy, tmp_path):
    """Day 4's lines are simulated once a process for the same arguments: a Day 4 spec edited
    between two builds of Day 37 gives a new figure, and changing what a build was handed leaves
    the next build's figure as it was."""
    from engine.experiments import queueing as day4_lines
    from engine.pipeline import build

    from helpers import lean_spec

    day37 = days_copy / "day37.yaml"
    day37.write_text(lean_spec(day37.read_text()))

    def cited(out: str) -> float:
        build(day37, tmp_path / out)
        (link,) = json.loads((tmp_path / out / "day37" / "results.json").read_text())["links_back"]
        return link["figure"]["wait_ratio"]

    first = cited("a")
    section = load_spec(days_copy / "day04.yaml").queueing
    assert section is not None
    handed = day4_lines.compare_lines(section, section.service_ms / 1000.0)
    handed["ratios"]["separate_random"]["mean_wait"] = -1.0
    assert cited("b") == first
    day04 = days_copy / "day04.yaml"
    assert "    load: 0.9\n" in day04.read_text()
    day04.write_text(day04.read_text().replace("    load: 0.9\n", "    load: 0.7\n"))
    # Separate random lines are M/M/1 queues at load ρ and the shared line is M/M/2, whose mean
    # waits are ρ/(1-ρ) and ρ²/(1-ρ²) service times: the ratio is (1+ρ)/ρ, 2.43 at ρ = 0.7.
    assert cited("c") == pytest.approx(1.7 / 0.7, rel=0.05) and first == pytest.approx(1.9 / 0.9, rel=0.05)


def test_index_lists_both_days(built_out):
    index = (built_out / "index.html").read_text()
    assert "day04/index.html" in index and "day37/index.html" in index
