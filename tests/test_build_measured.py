"""`make bench-day37 DEVICE=cpu`, then `make day37`: the posts use and label the measurements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.pipeline import build

from helpers import Lab, dump_yaml, lean_spec, load_yaml


@pytest.fixture(scope="module")
def measured_days(tmp_path_factory) -> Path:
    """A copy of days/ with a real CPU measurement in day37.measured/, as the bench writes it.

    The bench needs torch (the bench extra); without it, the tests that need a measurement skip.
    """
    import shutil

    pytest.importorskip("torch")

    from helpers import DAYS

    days = tmp_path_factory.mktemp("m") / "days"
    shutil.copytree(DAYS, days, ignore=shutil.ignore_patterns("*.measured"))
    # The bench times steps at every context of the spec. These tests read the step at 512
    # tokens (the chart's and the posts' figure) and at the highlights (2,048 and 8,192), so the
    # bench runs on a spec with those three: the longer contexts are most of a CPU run's time.
    # The spec then gets its seven back, as after a person widens a table they measured:
    # the builds here draw the same charts as the session's, and so can reuse them.
    spec = days / "day37.yaml"
    text = spec.read_text()
    every = "contexts: [512, 1024, 2048, 4096, 8192, 16384, 32768]"
    assert every in text and "highlight: [2048, 8192]" in text
    spec.write_text(text.replace(every, "contexts: [512, 2048, 8192]"))
    # A fiftieth of the lab's output lengths (the quick CPU default is a tenth): these tests read
    # how a build uses and labels a real measurement, not how long its batching runs took.
    bench = ["bench", str(spec), "--device", "cpu", "--quick", "--scale", "0.02"]
    assert main(bench) == 0
    spec.write_text(text)
    return days


def only_file(days: Path) -> Path:
    (path,) = (days / "day37.measured").iterdir()
    return path


def test_posts_use_and_label_the_measured_figures(measured_days, tmp_path):
    doc = json.loads(only_file(measured_days).read_text())
    spec = measured_days / "day37.yaml"
    original = spec.read_text()
    spec.write_text(lean_spec(original))  # the drafts and results are read here, no picture
    try:
        build(spec, tmp_path)
    finally:
        spec.write_text(original)
    linkedin = (tmp_path / "day37" / "linkedin.md").read_text()
    thread = (tmp_path / "day37" / "x-thread.md").read_text()
    device = doc["device"]["name"]
    measured_multiple = f"{doc['batching']['multiple']:.1f}x"
    assert f"measured on {device}" in linkedin
    assert f"Measured on {device} (a CPU, tiny model): {measured_multiple}" in thread
    assert measured_multiple in linkedin
    cont = doc["batching"]["policies"]["continuous"]["tokens_per_second"]
    assert f"{cont:,.0f} tokens/s" in linkedin
    assert "random weights" in linkedin
    # The simulated figures stay, labelled as simulated.
    assert f"{Lab.static_steps:,} steps" in linkedin and "simulated" in linkedin
    results = json.loads((tmp_path / "day37" / "results.json").read_text())
    assert results["measured"]["file"] == f"day37.measured/{only_file(measured_days).name}"


def test_a_long_gpu_name_still_fits_every_platform_rule(measured_days, tmp_path):
    """A rented H100's figures (shape of a real file, device renamed) must not break a post."""
    doc = json.loads(only_file(measured_days).read_text())
    doc["device"].update(kind="cuda", name="NVIDIA H100 80GB HBM3", slug="nvidia-h100-80gb-hbm3")
    doc["cuda"] = "12.8"  # what a CUDA run records; a CPU run's synthetic budget it does not
    doc["settings"].pop("memory_budget_bytes", None)
    doc["settings"]["model"]["name"] = "7b-class"
    doc["step_time"]["hbm_peak_bytes_per_s"] = 3.35e12
    for point in doc["step_time"]["points"]:
        point["achieved_bytes_per_s"] = 2.6e12
    (measured_days / "day37.measured" / "nvidia-h100-80gb-hbm3.json").write_text(json.dumps(doc))
    spec = measured_days / "day37.yaml"
    data = load_yaml(spec.read_text())
    data["measured"] = "nvidia-h100-80gb-hbm3"
    spec.write_text(dump_yaml(data, sort_keys=False))
    try:
        build(spec, tmp_path)  # the build's own platform checks would raise here
    finally:
        (measured_days / "day37.measured" / "nvidia-h100-80gb-hbm3.json").unlink()
        data["measured"] = "latest"
        spec.write_text(dump_yaml(data, sort_keys=False))
    linkedin = (tmp_path / "day37" / "linkedin.md").read_text()
    assert "measured on NVIDIA H100 80GB HBM3" in linkedin
    assert "78% of the card's memory bandwidth" in linkedin  # 2.6 / 3.35


def test_latest_quotes_the_committed_gpu_file_and_without_one_is_simulated_only(
    built_out, days_copy, tmp_path
):
    """days/day37.yaml says measured: latest and days/day37.measured/ holds the file measured on
    an H200 (the session's build is of exactly that); a copy of days/ without it builds the same
    spec simulated only."""
    from helpers import DAYS

    assert "measured: latest" in (DAYS / "day37.yaml").read_text()
    results = json.loads((built_out / "day37" / "results.json").read_text())
    assert results["measured"]["file"] == "day37.measured/nvidia-h200.json"
    assert "measured on NVIDIA H200" in (built_out / "day37" / "linkedin.md").read_text()

    spec = days_copy / "day37.yaml"
    spec.write_text(lean_spec(spec.read_text()))
    build(spec, tmp_path)
    results = json.loads((tmp_path / "day37" / "results.json").read_text())
    assert results["measured"] is None
    assert "measured" not in (tmp_path / "day37" / "x-thread.md").read_text()


def test_the_step_time_chart_draws_the_committed_h200_steps(built_out):
    """Day 37 lists step_time; its title and alt text are the file's own steps at the shortest
    context, read here from the file, not from the chart."""
    from helpers import DAYS

    points = json.loads((DAYS / "day37.measured" / "nvidia-h200.json").read_text())["step_time"]["points"]
    at_512 = {p["batch"]: p["seconds"] * 1e3 for p in points if p["context"] == 512}
    alt = (built_out / "day37" / "step_time.alt.txt").read_text()
    assert f"{at_512[1]:.1f} ms for 1 request, {at_512[16]:.1f} ms for 16" in alt  # 6.2, 7.3
    assert "measured on NVIDIA H200" in alt
    results = json.loads((built_out / "day37" / "results.json").read_text())
    assert {"name": "step_time", "file": "step_time.png"}.items() <= next(
        c for c in results["charts"] if c["name"] == "step_time"
    ).items()


def test_without_a_measurement_the_step_time_chart_is_left_out_with_a_warning(days_copy, tmp_path, capsys):
    spec = days_copy / "day37.yaml"
    text = lean_spec(spec.read_text()).replace("charts: []", "charts: [step_time, utilisation]")
    spec.write_text(text)
    report = build(spec, tmp_path)
    assert [w for w in report.warnings if "step_time" in w] == [
        "chart 'step_time' not drawn: no measurement to draw (the spec's measured: found no file; "
        "run the day's bench)"
    ]
    assert not (tmp_path / "day37" / "step_time.png").exists()
    assert main(["build", str(spec), "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "  warning: chart 'step_time' not drawn: no measurement to draw" in err
    assert (tmp_path / "day37" / "utilisation.png").exists()


def test_without_a_measurement_a_step_time_slide_is_left_out_of_the_deck(days_copy, tmp_path, monkeypatch):
    """A carousel slide of a chart the results cannot draw yet is left out, with the same
    warning as the chart itself, instead of failing the build (the pages are not drawn here)."""
    import shutil

    from engine import pipeline
    from engine.charts import carousel
    from engine.render import formats
    from engine.sections import SpecLocation
    from engine.spec import load_spec

    spec_path = days_copy / "day37.yaml"
    spec_path.write_text(
        spec_path.read_text().replace("    - closing\n", "    - chart: step_time\n    - closing\n")
    )
    templates = tmp_path / "templates"
    shutil.copytree(pipeline.TEMPLATES, templates)
    words = templates / "day37" / "carousel" / "slides.md.j2"
    words.write_text(
        words.read_text().replace("## closing", "## step_time\nStep times, measured.\n\n## closing")
    )
    spec = load_spec(spec_path)
    results = pipeline.compute(spec, SpecLocation(spec_path=spec_path))
    left_out = pipeline.unavailable_charts(spec, results)
    assert left_out == [
        (
            "step_time",
            "no measurement to draw (the spec's measured: found no file; run the day's bench)",
        )
    ]
    decks = []
    monkeypatch.setattr(carousel, "build", lambda deck, texts, *_: decks.append((deck, texts)))
    formats.draw_carousel(spec, results, tmp_path, templates, {name for name, _ in left_out})
    ((deck, texts),) = decks
    assert [s.chart for s in deck.slides] == [None, "kv_fit", "utilisation", "slot_timeline", None]
    assert len(texts) == len(deck.slides)
    assert not any("Step times, measured." in t.headline + t.body for t in texts)  # its words go too
    formats.draw_carousel(spec, results, tmp_path, templates)  # nothing left out: every slide
    deck, texts = decks[1]
    assert deck.slides[-2].chart == "step_time" and texts[-2].headline == "Step times, measured."


def test_line_end_labels_are_spread_apart_only_where_they_collide():
    from engine.charts.step_time import _spread

    ends = [(16, 7.3, "512"), (16, 8.4, "1k"), (16, 14.6, "4k"), (4, 22.7, "32k")]
    assert _spread(ends, gap=1.5) == [(4, 22.7, "32k"), (16, 7.3, "512"), (16, 8.8, "1k"), (16, 14.6, "4k")]


def test_a_named_file_that_is_not_there_is_one_line(days_copy, tmp_path, capsys):
    spec = days_copy / "day37.yaml"
    spec.write_text(spec.read_text().replace("measured: latest", "measured: h100.json"))
    assert main(["build", str(spec), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{spec}: measured: no measurement file h100.json")
    assert not (tmp_path / "day37").exists()


def test_a_measurement_for_another_day_is_refused(measured_days, tmp_path, capsys):
    path = only_file(measured_days)
    original = path.read_text()
    doc = json.loads(original)
    doc["day"] = 4
    path.write_text(json.dumps(doc))
    try:
        assert main(["build", str(measured_days / "day37.yaml"), "--out", str(tmp_path)]) == 2
    finally:
        path.write_text(original)
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and path.name in err and "day" in err


def test_measured_step_time_prices_the_simulated_steps(measured_days, tmp_path):
    """step_time: {kind: measured} fits the same file, so simulated seconds follow the device."""
    from engine.batching.loaders import load_measured_step_time

    spec = measured_days / "day37.yaml"
    original = spec.read_text()
    data = load_yaml(original)
    data["batching"]["step_time"] = {"kind": "measured"}
    spec.write_text(lean_spec(dump_yaml(data, sort_keys=False)))  # results and drafts only
    try:
        build(spec, tmp_path)
    finally:
        spec.write_text(original)
    results = json.loads((tmp_path / "day37" / "results.json").read_text())
    bt = results["batching"]
    assert bt["step_time_source"] == f"fitted to day37.measured/{only_file(measured_days).name}"
    from engine.batching.steptime import step_seconds

    model = load_measured_step_time(only_file(measured_days))
    # Every step costs between the cheapest step and a full batch at the longest context
    # (the fit's coefficients are non-negative), so the priced run must sit between the bounds.
    cheapest = min(model.idle_seconds, step_seconds(model, 1, 1.0, 0))
    dearest = step_seconds(model, 16, 16.0 * bt["workload"]["longest"], 0)  # context: KV tokens of the batch
    for name in ("static", "continuous"):
        run = bt["policies"][name]
        assert run["steps"] * cheapest <= run["makespan_seconds"] <= run["steps"] * dearest
        assert run["makespan_seconds"] != pytest.approx(run["steps"] * 0.02)  # not the unit model
    assert "step times fitted to day37.measured/" in (tmp_path / "day37" / "linkedin.md").read_text()


def test_measured_step_time_without_a_file_is_one_line(days_copy, tmp_path, capsys):
    spec = days_copy / "day37.yaml"
    data = load_yaml(spec.read_text())
    data["batching"]["step_time"] = {"kind": "measured"}
    spec.write_text(lean_spec(dump_yaml(data, sort_keys=False)))  # results and drafts only
    assert main(["build", str(spec), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{spec}: batching.step_time: kind 'measured' needs a measurement file")
